// Package sqlitedb opens agentrt's SQLite files and migrates them: the
// one place that decides the durability settings (WAL, synchronous FULL)
// and the connection layout (one writer, a few readers) that the run store
// and the workspace store share, and the one migration runner they both
// use, each with its own migrations table so they can share a file.
package sqlitedb
