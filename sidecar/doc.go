// Package sidecar serves one contract.Provider over HTTP/JSON with
// server-sent event streams (the routes and bodies of contract/wire):
// capabilities, keyed and unkeyed create, get, destroy, turn streams
// resumable with Last-Event-ID, acknowledged turn cancellation, the
// native session an ended turn observed (a private, authenticated route
// for the turn's owner: the server runs each turn through the
// environment's owned stream and never frames the observation), answers
// to the interaction requests of a turn, observation, and detached runs:
// dispatch, then session calls that each carry the run's control
// reference (open, status, events resumable after Last-Event-ID, result,
// prompt, cancel, the digest-bound cancel-run, interaction answers), so
// the server keeps no session state of its own; and exact processes
// (create, get, list, destroy, exact file write and bounded read, spawn
// once per operation id, status, wait, kill, output from a byte offset;
// wait and output are long polls of at most ResultWait, or the client's
// shorter wire.QueryWaitMs). It
// authenticates with a bearer token compared in constant time, bounds
// every body, buffer and wait, keeps keyed creates and exact spawns in a
// store so a restarted server replays a retried create or spawn (and
// answers in doubt when it cannot tell what the first one made, never
// making a second), answers a method its route does not take with the
// wire's JSON 405 and an Allow header, and never logs a token, a body or
// a header. It does not listen: `agentrt serve` (internal/cli)
// owns the listener, the loopback rule and graceful shutdown.
package sidecar
