// Package journal is agentrt's one append-only JSONL journal: the writer
// and the tolerant reader that the spawn journal, the coordination log,
// retained-run records and the file conversation journal share (runtime
// spec §3.6, §4 and §13).
//
// A journal is a file of lines, each one record in canonical JSON
// (RFC 8785, [canonjson.Canonical]) followed by '\n'. A record's sequence
// number is its 1-based line number, so numbers never shift when a line
// goes bad.
//
// Writing. [Open] takes an exclusive advisory lock on the file, so two
// processes never write one journal, and repairs a torn tail, which is
// what an interrupted append leaves: the bytes after the last '\n', and
// the last complete line if it is not a record (it fails to decode
// strictly, has no canonical form or is over the record limit) and is
// the only line or follows a record. Those bytes are truncated and
// counted in [Recovery]. Any other bad line is corruption, not a torn
// append: it could sit where a record some caller was told was durable
// used to be, so the writer never drops it; Open keeps it and readers
// report it. The rule also makes the repair idempotent: a second Open
// finds nothing to truncate.
//
// [Journal.Append] writes a batch with one write and makes it durable
// with one fsync before returning. Concurrent callers are group-committed:
// the batches queued while one write and fsync run share the next ones.
// [Journal.Enqueue] splits an Append in two: the batch's place is fixed
// at once (a caller queues under its own lock, so the journal's order is
// its state's) and [Pending.Wait] awaits the shared fsync after the lock
// is released. [Journal.AppendOf] and [Journal.EnqueueOf] take Go values
// and write the same lines, encoded without a [canonjson.Value] tree
// ([canonjson.AppendCanonicalOf]). A failed write or fsync poisons the journal (part of a batch may have
// landed); reopening repairs the tail. A journal opened with
// [Options].NoSync writes without the fsync: for observation logs (a
// supervised run's stream logs) whose last lines a crash may lose while
// the truth is in a synced journal.
//
// Reading. [Read] and [Journal.Read] decode each line strictly and with a
// bounded buffer, and apply the same rule as Open: a corrupt line is
// reported as a [*CorruptError] and reading goes on, so one bad line never
// hides later ones, while a torn tail is ignored, since the append that
// wrote it never returned. Reading a file before and after Open yields the
// same.
//
// Open and Read open the file through internal/regularfile: a FIFO or a
// device in a journal's place is refused (*regularfile.NotRegularError),
// never waited on.
//
// The package depends on the standard library, canonjson and
// internal/regularfile only. It does not interpret records: what a spawn or conversation record means is its
// caller's business.
package journal
