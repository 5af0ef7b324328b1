// Package delegation is the durable delegation queue behind the
// delegation MCP server (spec/runtime.md §9, "Delegation server";
// checklist OS-04): a caller hands a task to a fixed manager agent, which
// runs it as one supervised run (supervise.Supervise, §3.6) and is
// delivered only when the server's deliverable check passed.
//
// Everything that decides what runs — the manager profile, the worker
// profiles, the executor and provider, the manager's model, the
// deliverable check and the budget caps — is fixed in [Config] when the
// queue opens. A request carries only the task, an optional idempotency
// key and an optional budget within the caps; it can never choose a
// profile, a provider or a check.
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
// doubt). What is never done is a silent re-run: when an earlier attempt
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
// # Bounds
//
// Every wait is bounded: a caller's wait for a result by
// [MaxWaitSeconds], a run by Config.MaxRunTime (its supervised run's
// deadline), Close by its context. Admission is bounded by
// Config.MaxPending pending delegations, a task by [MaxIntentBytes],
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
