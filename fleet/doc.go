// Package fleet runs agentrt runs on many machines: a run is submitted as
// a River job (github.com/riverqueue/river) on the PostgreSQL database
// that already holds the run store (store/postgres), and any number of
// worker processes, on any number of machines, claim the jobs and execute
// them through the kernel (kernel.Execute).
//
// # Records
//
// Submit records a fleet run (store.Run of Kind "fleet", status pending)
// whose document holds the admitted request (the Spec: the profile, the
// task, the provider's name, the completion check; no secrets, which
// stay in each worker's environment) and its digest, then inserts a job
// carrying the run id and the digest. With an idempotency key the
// submission is recorded by store.ClaimIdempotency: retrying it returns
// the same run id, and the job is a River unique job by its arguments,
// so a retry never enqueues a second job.
//
// Each execution of a fleet run is an attempt: a kernel run of its own,
// named "<fleet run id>.g<generation>", that records the events, ledger
// and terminal state as every kernel run does. The fleet run lists its
// attempts and ends in the status of the attempt that finished it.
//
// # Who runs a job
//
// River delivers jobs and rescues the jobs of a worker that died, but
// River's delivery is not the authority on who executes a run: the run
// store is. A worker claims the fleet run by compare-and-set
// (store.UpdateRun): only a pending run, or a running one whose claim
// lapsed (the claim, renewed by the holder's heartbeat, is kept in the
// run's document: a store lease that lapses would make the run read
// interrupted for good), can be claimed, and a takeover raises the run's
// generation, so the old holder's later writes, all fenced
// (store.UpdateFenced), are refused with a store.FenceError. A worker
// that receives a job whose run is still claimed by a live worker
// snoozes the job until that claim would lapse. Before re-running a run
// whose worker died, the new worker reads the dead worker's attempt: an
// attempt that reached a terminal state of its own (it finished but its
// worker died before recording so in the fleet run) is adopted, never run
// twice; so is an attempt whose kernel run reads interrupted but whose
// recorded events hold its turn's end, completed or failed
// (kernel.ReadRecordedTurn: the turn finished, then the store stopped
// answering past the attempt's lease, or its worker died, before the end
// was recorded) — whether its worker died or handed the run back — its
// outcome read from those events and judged by the run's check (its
// environment is not kept for that: the attempt destroyed it after its
// check, as every attempt does, since the recorded terminal settles the
// turn and an environment kept for an end that never lands would leak);
// an attempt still live waits; an attempt that is interrupted (its
// kernel lease lapsed) or never started is run
// again as a new attempt in a new generation. A worker whose attempt lost
// its kernel run's lease while the worker kept the fleet run hands the
// run back (pending): the kernel destroys nothing after a lost lease and
// leaves the attempt's environment to the run's next holder, so the next
// claim settles that handed-back attempt exactly as it settles a dead
// worker's interrupted one (re-attaching to its environment below, or
// adopting its recorded turn), never leaving the environment to leak nor
// running a turn that ended in it again. On a provider whose environments
// cannot be found by id no next holder could ever reach such an
// environment, so the worker whose attempt left it destroys it itself
// once the kernel returns (whether the kernel's lease or the fleet run's
// claim was lost). An attempt's environment is
// created by the worker's own provider. On a provider whose environments
// outlive the worker (contract.EnvironmentGetter: an agentrt serve
// sidecar behind providers/remote), every attempt names its turn after
// the fleet run, and the worker taking over a dead worker's interrupted
// attempt looks its environment up: alive, it re-attaches to it and to
// the same turn, which the server replays and carries on — resumed, not
// run again; gone, the turn ended with it and the run is run again; when
// the provider cannot tell (its server is unreachable) the work is in
// doubt and the job waits, neither resumed nor re-run, until it can. A
// worker that was only paused past its lease (SIGSTOP, a frozen VM) and
// wakes after such a takeover is the loser: its writes are refused by
// the fence, it records nothing in the fleet run, and its attempt ends
// with a *kernel.LeaseLostError cause (contract.ErrLeaseLost), so that
// it neither cancels the turn nor destroys the environment its successor
// re-attached to. The re-attaching is the kernel's (kernel.Reattach):
// a re-attached turn that had ended cancelled while nobody asked to
// cancel it died with its holder (an in-process provider's turn ends with
// the context of the attempt that lost its lease), so the attempt runs it
// again in a new environment rather than failing; its end is known, so
// the work is not in doubt. The attempt that finishes the run destroys
// the environment it re-attached to when the dead attempt's record
// proves the runtime created it (kernel.Record.EnvironmentCreated,
// ENV-06), and leaves it to its provider otherwise; each attempt records
// its environment before its turn, so a successor finds it.
//
// River may deliver one job twice at once: its rescuer hands a job that
// ran past its timeout to another worker while the first still works it.
// The run store settles it: the delivery whose claim loses the
// compare-and-set snoozes the job while the winner holds the run, and
// completes it as a no-op once the run ended; a delivery that loses
// every try snoozes too. Only a failure of the worker itself (its
// database unreachable) returns an error and leaves the job retryable.
//
// Work in doubt is never run again: an attempt whose environment was
// created but whose event stream was lost before the turn ended (the
// kernel records it failed with reason transport: a remote server died
// or could not be reached mid-turn) ends its fleet run interrupted. On a
// provider whose environments can be found by id, the environment is
// kept rather than destroyed (the turn may still be running in it) and
// named on the run (Run.InDoubt); Fleet.Recover later follows that turn
// and settles the run as it ended, leaves it in doubt while it runs, or
// records it lost when the environment is gone — never running the work
// again. An attempt whose provider's server refused the connection before any
// environment existed ran nothing, and its run is handed back; its job
// and the worker's next attempt on that provider then wait, from
// WorkerOptions.Backoff doubling per refusal in a row up to MaxBackoff,
// jittered, so that a worker whose server is down does not hammer it.
//
// # Cancellation and shutdown
//
// Cancel ends a pending fleet run at once and asks a running one's worker
// to cancel it (kernel.RequestCancel on the fleet run and on its current
// attempt). A worker stopping gracefully (Worker.Run's context ends)
// waits up to its shutdown timeout for its attempts, then cancels them
// and hands their fleet runs back (status pending, a new generation at
// the next claim) so another worker runs them again.
//
// # Trace context
//
// A submission may carry the W3C traceparent of the span it belongs to
// (Submission.TraceParent; Executor gives its supervise node's). It is
// recorded with the run, outside the spec and its digest, and every
// attempt runs under it as its remote parent, whichever worker executes
// it: with WorkerOptions.Observe set to telemetry's AttemptObserver, the
// attempt's spans are that span's children in its trace.
//
// River's tables live in their own schema (DefaultRiverSchema); Migrate
// creates it and applies River's migrations and the run store's. Workers
// refuse to start on a database that was not migrated.
package fleet
