// Package kernel turns an AgentProfile into an exact execution through a
// provider and records what really happened.
//
// Execute runs one exact run: it checks the provider's capability document
// against the profile and refuses before any spend when the provider
// cannot honor it, resolves seats and runs each segment with its
// provider-facing projection while the authored profile keeps its
// identity, reads back the served model, and ends every run in exactly one
// terminal state — completed, failed, cancelled, timed out or, when its
// process lost the run's lease, interrupted. A stream that ends without a
// terminal event, or carries an in-band error, is a failure, never an
// empty success. Rounds runs caller-authored plan/decide loops over
// Execute; RunToolLoop and StreamToolLoop drive a chat model that calls
// tools until it answers or a stop rule fires — checking every call's
// arguments against its tool's input schema before the tool runs
// (package tools), and, given a profile (ToolLoopOptions.Profile), taking
// its system prompt and model and matching the tools it declares to the
// Go tools given; a tool loop hands each consistent piece of its
// transcript to ToolLoopOptions.Checkpoint before it goes on (and stops
// with a *CheckpointError when that fails), and resumes a transcript so
// recorded (ToolLoopOptions.Recorded) instead of starting over, running
// again exactly the calls it left without a result (a tool reads its
// call's id, the same on the run again, with ToolCallID, to make its
// effect idempotent); Stream and StreamRun
// normalize one turn. A result is delivered only when the caller's
// completion check passed on it: settlement is not delivery.
//
// # The run lifecycle
//
// Every front door records its run through one lifecycle. Options are
// checked first (ErrInvalidOptions, an *OptionsError naming the field);
// the run is then created under this process's lease (LeaseTTL, default
// DefaultLeaseTTL, at least MinLeaseTTL), renewed every third of its
// length by a heartbeat that also watches for cancel requests
// (RequestCancel, from any process). Every write the run makes afterwards
// — events, ledger entries, its document, its terminal state — is fenced
// by the lease generation: once the lease lapses (the process was paused,
// or could not reach the store to renew it) readers see the run
// interrupted, and the store refuses everything more the old holder would
// record. The run is then cancelled with a *LeaseLostError and its front
// door returns a *RunError with StatusInterrupted and ReasonLeaseLost.
// A run whose caller's context ends with a cause matching
// contract.ErrLeaseLost (the caller lost the lease it held the run under:
// a fleet worker's claim, a supervisor's spawn journal) ends the same
// way though its own lease still holds (LeaseLostError.Holder): recorded
// interrupted, never cancelled, its environment not destroyed, since the
// caller's successor may have re-attached to it.
// A run whose holder stopped (its lease lapsed, no end recorded) keeps no
// owner; its judge (Request.JudgedBy) may close it with CloseAbandoned:
// the lapsed lease taken over (a new generation) and the run recorded
// interrupted for good, reason ReasonAbandoned, in one compare-and-set
// write, its usage and delivery as the run left them.
// Work a runtime run's caller must do at most once across the run's
// holders (a claim it makes elsewhere in the store) first proves the
// lease with RuntimeRun.Confirm: a fenced write that renews it, and
// returns its new end by this process's clock.
//
// No store or provider call can hold a run past its caller: calls made
// while the caller's context lives are bounded by it, and every call made
// after it ended, after the run's lease was lost or once the run is
// finishing shares one cleanup window (CleanupTimeout, default
// DefaultCleanupTimeout). Each record write of the live run — an event,
// a ledger entry, its document, RuntimeRun.Confirm's renewal — is
// bounded besides by the lease as this process last renewed it when the
// write began (at most LeaseTTL): a
// write that has not returned by then would land after the lease lapsed,
// and one store call that hangs (a half-open connection) while the
// renewals succeed on other connections fails the run (ReasonStoreFailed,
// a *StoreError of Op "record"; RuntimeRun.Observe and AppendEvents
// return that *StoreError) instead of holding a caller that set no
// deadline forever. RuntimeRun.Persist, after the end, is bounded by the
// cleanup window. The heartbeat gives each of its calls its own deadline
// and holds no lock across I/O.
// The run's creation is bounded by its lease as well, so a caller with
// no deadline never waits forever on a store that stopped answering. A
// store that fails ends the run typed (a *StoreError, alone for a
// create that did not land, else the cause of a *RunError with
// ReasonStoreFailed): a record write that fails mid-run fails the run,
// and a terminal write the store does not take is tried again while the
// run still holds its lease (nobody can take the run over before it
// lapses) and the caller's context lives, so that a store that stops
// answering for a few seconds does not turn a finished turn into an
// interrupted one — and so is the run's closing ledger entry, so that
// such an outage does not leave the ledger stating a floor of what the
// record states exactly; a terminal write that has not landed by then returns
// the run interrupted, as readers see it once its lease lapses — never
// completed. A caller whose context ended still gets only the cleanup
// window; one without a deadline waits at most the rest of the lease. Every front door (Execute, RunToolLoop, Rounds,
// RuntimeRun.Complete, ExecuteSeated, ResumeSeated) reports that
// unrecorded end with the same *RunError.
//
// # What is recorded
//
// An exact run's document is a Record, written and read (ReadRun,
// DecodeRecord) through one codec. Usage stays unknown until reported; a
// turn that ended early — a cut stream, a timeout, a cancellation, an
// in-band error, a lost lease — keeps what it reported as a floor, with
// the text it streamed and the served model it was told. The cost ledger
// holds a progress entry each time the reported usage changes and a
// closing entry when the run ends; entries are snapshots, so a run's
// spend is its last entry, and a run whose process died keeps the spend
// it reported. A run records each event before it reads it, so a turn
// whose terminal event is recorded had ended even when the run's own end
// was never recorded (it reads interrupted): ReadRecordedTurn settles
// such a turn from its events, for a successor that must not run it
// again. An environment is destroyed only while the run holds its lease
// (a destroy still waiting when the lease lapses is given up, reported
// not confirmed: a successor may have re-attached to the environment),
// and only when its creation was proven by this run, or by the record of
// the run it re-attached to
// (Request.Reattach: a run taking over the work of a run whose process
// lost its lease, whose turn it re-attaches to, and runs again in a new
// environment when that turn died with its holder). A run records its
// environment, and whether the runtime created it, before its turn. A
// run may instead go on natively in a kept environment's session
// (Request.Continue): the provider proves the session's boundary and
// admits a native continuation, or the run is refused before anything is
// dispatched (*ContinuityError); it never destroys that environment.
//
// The kernel records runs, events and ledger entries in a store.Store and
// draws spend from a ledger.Pool when one is given. An Observer
// (Request.Observer, RoundsOptions.Observe) watches a run as it happens —
// the runtime hooks package telemetry turns into traces — and can never
// change it.
package kernel
