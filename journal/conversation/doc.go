// Package conversation is the durable transcript of a conversation run
// (runtime spec §4; checklist RES-04): the one [Journal] interface and its
// adapters, in memory ([NewMemory]), a JSONL file written through the one
// append-only writer of package journal ([OpenFile]), SQLite
// ([OpenSQLite]) and PostgreSQL ([OpenPostgres]), or either in a
// database the caller opened and owns ([OpenSQL]).
//
// A run is begun once ([Journal.BeginRun]), gains turns in order
// ([Journal.AppendTurn]) and ends with a halt ([Journal.RecordHalt]).
// [Journal.LoadRun] returns what was recorded. A turn is appended only
// after it committed (its stream completed and its spend was counted), so
// a run resumed with the same id continues at its first unrecorded turn,
// [Entry.NextIndex]; [Resume] does the load-or-begin step. Turn ids are
// deterministic ([TurnID]), so a retried turn collides with its earlier
// attempt and a caching gateway can deduplicate it. A [Runner]
// ([StartRunner]) runs a conversation over a journal: given the plan of
// turns, it skips the recorded ones, produces and records the first
// unrecorded one, and so on, stopping at a failure (a [*TurnError],
// nothing recorded) so that running the plan again continues there.
//
// Every adapter enforces the same rules, which a shared contract suite
// (conversationtest) checks:
//
//   - BeginRun is idempotent for the same start time and refused with
//     [ErrConflict] for another.
//   - AppendTurn and RecordHalt on a run never begun fail with
//     [ErrUnknownRun]; AppendTurn on a halted run with [ErrHalted].
//   - A turn's index must be the run's next one ([ErrOutOfOrder]
//     otherwise) and its id must be [TurnID] of the run, index and
//     speaker. Appending a turn already recorded at its index is a no-op
//     when it is the same turn (a retry after an unacknowledged append)
//     and refused with [ErrConflict] when it differs. RecordHalt is
//     likewise idempotent for the same halt and end time.
//   - Times are kept to the millisecond, in UTC, written as JavaScript's
//     Date.prototype.toISOString writes them.
//   - [Limits] bound a run id, a turn's encoded size and a run's total;
//     anything over them is refused before it is written, and stored data
//     over them is reported rather than read.
//   - Stored bytes are decoded strictly; a record that does not decode is
//     a [*CorruptError] naming where it is and, through [*InvalidError],
//     the JSON pointer of what is wrong.
//
// Each call of a SQL journal — Migrate (and so each Open) included — is
// bounded by its CallTimeout
// ([SQLOptions.CallTimeout], [DefaultCallTimeout] 30 s) even for a
// caller without a deadline: a database that stops answering (down,
// black-holed, locked) ends the call with a [*TimeoutError], whose
// outcome is unknown and which may be retried as it was — the idempotent
// writes above make a retry of a write that did commit a no-op.
//
// The reference is laxer in places (its in-memory and file journals
// accept any turn, its SQL journal orders turns appended out of order);
// the rules above make a retry safe and every adapter answer alike.
package conversation
