// Package remote is a contract.Provider over the sidecar's HTTP API
// (`agentrt serve`, contract/wire): capabilities read from the server,
// keyed creates forwarded with their key, turn streams over SSE, answers
// to interaction requests and observation, detached dispatch and
// sessions (status, events resumable after an event id, result, prompt,
// cancel, the digest-bound CancelRun and session interaction answers),
// each offered (as a method of the environment or session) exactly when
// the server's document declares it; exact processes (ExactProcess) the
// same way, with spawns re-sent under one operation id and output read
// from a byte offset. A session holds only its ids and
// the control reference of its run, so another process opens it again
// from the same reference. Every
// create carries an idempotency key (one is minted when the caller gave
// none), so a create whose answer was lost is retried with the same key
// and never makes a second environment; a cut turn stream reconnects with
// Last-Event-ID. A turn the client leaves before it ended is cancelled
// on the server only when its caller meant it (ctx ended, reading
// stopped); a stream lost for good or a caller that lost its run's lease
// (contract.ErrLeaseLost) leaves it running, in doubt, for recovery. Its environments are contract.OwnedStreamers: after a
// turn's terminal event the owner's stream reads the native session the
// served turn observed from the server's private route and yields it as
// the private native.session.observed event, so the kernel binds it to
// the run (NSO-02) while the public stream never carries it (NSO-03).
// Retries, waits and reads are bounded, even for a caller without a
// deadline: a stream's open waits for the answer's headers at most
// IdleTimeout (a server paused or black-holed costs the stream its
// bounded reconnects, ending in a *TimeoutError with the turn left in
// doubt), every other call is bounded by its timeout (CallTimeout unless
// another applies), and a long poll (an exact process's wait or output,
// a session's result) asks the server to wait at most a half
// CallTimeout (its waitMs) and gives up at CallTimeout; an ask answered
// at once with nothing (a server ignoring waitMs) is followed by a pause
// from RetryBackoff doubling up to the wait, ending with the caller's
// context, never a hot loop. It logs only a
// warning when that native session cannot be read (never the id), and
// never puts its token anywhere but the Authorization header.
package remote
