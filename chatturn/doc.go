// Package chatturn runs one streamed chat turn for an HTTP handler (seed
// 003's handleChatTurn): the producer's events framed between
// session.run.started and session.run.completed (or error and
// session.run.failed), the assistant's final text persisted exactly once
// after the last producer event, and hooks whose failures never change
// what the client sees.
//
// With a run store the turn is durable and outlives its reader: every
// line is recorded (under the run's lease, fenced) before any reader sees
// it, the turn keeps running when the connection drops, and a reader that
// comes back — to this process or another sharing the store — with the
// turn's execution id (DeriveExecutionID, the X-Execution-ID header) and
// the last line it received (Last-Event-ID) gets the rest of the same
// execution, never a second one.
//
// When the process serving a durable turn dies mid-turn, the next
// request for the turn (a retry, or a reader already following it) in
// any process sharing the store carries the same execution on as a new
// attempt, recorded as run "<executionID>.resume-<n>" next to the dead
// attempt's interrupted record; the execution's lines run on across
// attempts. Hooks.Resume is handed the execution id and the last
// recorded producer event id (Attempt): it re-attaches to the
// substrate's execution and streams on after that event
// (Production.Continues), or, when the substrate proves the execution
// gone or never started, dispatches it again under the same id — then
// the turn writes session.run.restarted and the production starts over.
// The assistant message is persisted at most once per execution: each
// attempt claims the persist in the store first, and an attempt that
// finds an earlier attempt's claim without its end fails
// (PersistInDoubtError) rather than persist twice. The claim is fenced
// by the attempt's lease: an attempt claims only right after a fenced
// write proved it holds its run (kernel RuntimeRun.Confirm), and trusts
// the claim only if it returned before that lease, less a tenth, ran out
// by its clock; an attempt paused past its lease — the turn carried on
// by another — persists nothing and withdraws a claim it cannot vouch
// for (PersistFenceError), leaving the persist to the turn's holder. A
// claim that takes longer than nine tenths of the lease therefore fails
// the turn unpersisted. A turn that really failed — its failure
// recorded — replays that failure.
//
// A re-attach names the last line it has: a Last-Event-ID past the lines
// recorded for the execution (ended or live: their number only grows),
// or naming an execution with no record, is no position a reader could
// have, and is refused 410 Gone saying so (PositionGoneError) — as the
// sidecar refuses a resume past a turn's head — and starts nothing. A
// Last-Event-ID of the last line of an ended turn gets an empty stream.
// Other bad re-attaches are 400 (an unreadable Last-Event-ID) or 409
// (another turn's X-Execution-ID, or resuming on a handler without a
// store).
//
// Every store call the handler makes itself is bounded by
// Handler.StoreTimeout (DefaultStoreTimeout): a store that stops
// answering ends a request before its stream with 503, a reader's
// stream with an error line that says so (the turn goes on; the reader
// comes back with its Last-Event-ID), and a turn whose persist claim
// gets no answer fails unpersisted (*StoreTimeoutError).
package chatturn
