// Package sqlite is agentrt's embedded store: one SQLite file, by default
// $AGENTRT_HOME/agentrt.db (~/.agentrt/agentrt.db), in WAL mode with full
// synchronous commits, so an acknowledged append survives a killed process
// and a power loss; appends from many runs at once share one commit and
// one fsync (group commit). It uses the pure-Go modernc.org/sqlite driver (no
// cgo). Migrations are embedded and applied when the store opens; several
// processes may open the same file.
package sqlite
