// Package delegation is the durable delegation queue behind the
// delegation MCP server (spec/runtime.md §9, "Delegation server";
// checklist OS-04): a caller hands an intent to a fixed manager agent, which
// runs it as one supervised run (supervise.Supervise, §3.6) and is
// delivered only when the server's deliverable check passed.
//
// Everything that decides what runs — the manager profile, the worker
// profiles, the executor and provider, the manager's model, the
// deliverable check and the budget caps — is fixed in [Config] when the
// queue opens. A request carries only the intent, an optional runId
// (the caller's correlation id), an optional idempotency key and an
// optional budget within the caps; it can never choose a profile, a
// provider or a check.
//
// # Records
//
// Each delegation is a run in the run store (store.Run of Kind [Kind]),
// so it works on every adapter (SQLite, PostgreSQL, memory) without a
// migration of its own. The run's status is the delegation's state:
// pending → running → completed | failed, cancelled from pending or
// running, and interrupted when an earlier attempt left nothing to
// resume from. Its document is the [Delegation]. An idempotency key is
// recorded with store.ClaimIdempotency (scope [IdempotencyScope]) over
// the digest of the request as given: the same key with the same request
// returns the same delegation (reused), with another request it is
// refused (idempotency-conflict).
//
// # Who runs a delegation, and restart
//
// A queue runs at most Config.Concurrency delegations at once. It claims
// one by compare-and-set (store.UpdateRun): a pending delegation, or a
// running one whose claim lapsed (its process died, or stopped). The
// claim lives in the document and is renewed every third of
// Config.ClaimTTL; a holder that finds its claim gone (another process
// took the delegation over, or it was cancelled) stops its run. A store
// lease is not used: a lapsed store lease would make the run read
// interrupted for good.
//
// A delegation's supervised run keeps its journal in
// Config.RunDir/<taskId>, and every attempt runs with supervise's
// resume on, under the delegation's id. So a delegation taken over after
// its process died continues the journal the dead process left:
// settled workers are replayed, not run again, and the run's budget and
// wall clock continue (supervise's own resume rules, which refuse work in
// doubt). A run that had ended — its finished record journaled, the
// process killed before the store recorded the delegation's end — is
// not run again: the next attempt ends the delegation with the
// journaled result (supervise.Options.ReturnEnded), while a run that a
// queue's Close or a lost claim interrupted is driven on.
// What is never done is a silent re-run: when an earlier attempt
// was claimed but its run dir holds no journal (the dir is on another
// host, or was lost), the delegation ends interrupted instead of starting
// over, since the earlier attempt may have done work no record shows.
// Stopping a queue (Close) cancels its runs, journals their end and hands
// them back at once (the claim released), so the next queue on the same
// store resumes them. A takeover that finds the journal still locked by
// a holder that has not yet noticed its loss hands the delegation back
// and tries again a scan later, rather than failing it. The run dir is
// local: queues sharing a PostgreSQL store resume one another's
// delegations only where they share the run dir too; elsewhere such a
// delegation ends interrupted, as above.
//
// # Restore, against §9
//
// §9 restores a delegation queue from its store: terminal records stay
// queryable, in-flight records with a detachedSessionRef re-attach via a
// tick-driven resume driver (every 5 s by default), and other in-flight
// records settle failed. Here every delegation is resumable the way a
// detachedSessionRef makes one resumable there, because its supervised
// run journals under Config.RunDir/<taskId> and the queue itself is the
// tick-driven driver:
//
//   - terminal records stay queryable (Get, History), until evicted by
//     Config.MaxTerminalRecords;
//   - the detachedSessionRef is the run dir: an in-flight delegation
//     whose claim lapsed is taken over on the runners' scan, every
//     Config.ScanInterval (default DefaultScanInterval, 5 s), and its
//     attempt resumes the journal; a running delegation whose holder is
//     alive is never taken, since its claim is renewed;
//   - one with nothing to resume from (it was claimed, but its run dir
//     holds no journal) settles interrupted, a terminal no-winner state
//     (§9's "settle failed"), rather than being run again; a pending one
//     simply starts.
//
// # Store failure and retention
//
// Every store call is bounded by Config.StoreTimeout. The first one that
// fails or outlives it is the queue's store failure (a
// *[StoreFailedError], [Queue.Failure]): from then on the queue refuses
// new delegations (store-failed), claims none, and Close returns the
// failure, since records it meant to write may be missing. Nothing
// already stored is removed: a delegation running then keeps its record
// and the next queue (after a restart) takes it over.
//
// With Config.MaxTerminalRecords set, the delegations that ended longest
// ago beyond it are deleted from the store (store.Store.DeleteRun) with
// their run dirs, after each end and when a queue opens; a pending or
// running one never is. An evicted delegation reads as
// unknown-delegation; its idempotency key submits it anew, under the
// same taskId.
//
// # Bounds
//
// Every wait is bounded: a caller's wait for a result by
// [MaxWaitSeconds], a run by Config.MaxRunTime (its supervised run's
// deadline), a store call by Config.StoreTimeout, Close by its context.
// The records kept are bounded by Config.MaxTerminalRecords. Admission is bounded by
// Config.MaxPending pending delegations, an intent by [MaxIntentBytes],
// feedback by [MaxFeedback] entries of at most [MaxNotesBytes].
//
// # Refusals
//
// A request the queue will not take is a *[Refusal] (errors.As) with a
// code, a reason and the JSON pointer of the argument at fault; the MCP
// tools ([Queue.Tools]) return it as a tool result {error, reason, path},
// never as a protocol error. Nothing here logs tasks or results: they may
// hold secrets.
package delegation
