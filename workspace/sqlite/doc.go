// Package sqlite is the embedded workspace.Store: one SQLite file in WAL
// mode with full synchronous commits (an acknowledged write survives a
// killed process and a power loss), using the pure-Go modernc.org/sqlite
// driver. Its tables and its migrations table are prefixed workspace_, so
// it can live in the same database file as the run store (store/sqlite),
// by default $AGENTRT_HOME/agentrt.db. Migrations are embedded and
// applied when the store opens; many processes may open one file, and a
// compare-and-set is decided under SQLite's write lock, so exactly one of
// several racing writers wins across processes too.
//
// Erasure: connections run with secure_delete on, so a delete (and every
// overwrite) zeroes the old content in the pages it frees. The old pages
// can still sit in the write-ahead log until the next checkpoint;
// [Store.Checkpoint] forces one.
package sqlite
