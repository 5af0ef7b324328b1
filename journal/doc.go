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
// processes never write one journal, and repairs a torn tail: the final
// line is kept only if the reader would yield it (it ends in '\n', fits
// the record limit and decodes to a canonical value); otherwise exactly
// that line is truncated and the byte count reported in [Recovery]. A
// corrupt line before the final one is never dropped by the writer: it
// could hold a record some caller was told was durable, so Open keeps it
// and readers report it. [Journal.Append] writes a batch with one write
// and makes it durable with one fsync before returning; concurrent
// callers are group-committed, one fsync covering every batch queued
// while the previous one ran. A failed write or fsync poisons the journal
// (a partial write may have landed); reopening repairs the tail.
//
// Reading. [Read] and [Journal.Read] decode each line strictly and with a
// bounded buffer. A corrupt line is reported as a [*CorruptError] and
// reading goes on, so one bad line never hides later ones; a torn final
// line (the one Open would truncate) is silently ignored, since its
// append was never acknowledged.
//
// The package depends on the standard library and canonjson only. It does
// not interpret records: what a spawn or conversation record means is its
// caller's business.
package journal
