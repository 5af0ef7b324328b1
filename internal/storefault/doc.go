// Package storefault opens agentrt's real SQL stores behind real faults,
// so that every package's "a store that stops answering" tests share one
// definition of the faults: PostgreSQL behind a proxy that black-holes
// (the server stops answering) or resets (connections are cut), and
// SQLite whose write lock another connection holds (writes wait out the
// busy timeout, then fail). Test code only.
package storefault
