// Package remote is a contract.Provider over the sidecar's HTTP API
// (`agentrt serve`, contract/wire): capabilities read from the server,
// keyed creates forwarded with their key, turn streams over SSE, answers
// to interaction requests and observation, each offered (as a method of
// the environment) exactly when the server's document declares it. Every
// create carries an idempotency key (one is minted when the caller gave
// none), so a create whose answer was lost is retried with the same key
// and never makes a second environment; a cut turn stream reconnects with
// Last-Event-ID. Retries, waits and reads are bounded. It never logs and
// never puts its token anywhere but the Authorization header.
package remote
