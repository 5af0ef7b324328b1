// Command supervise shows supervise.Supervise (seed 003's supervise): a
// manager agent spawns two workers under one conserved budget; one
// worker's note fails the caller's check and is settled but not
// delivered, the other is delivered and wins. Offline and scripted: the
// manager's model and the workers' provider are scripted, the workers'
// runs are recorded in the embedded SQLite store, and the run's journal
// and result blobs are written to a run directory.
//
//	go run ./examples/supervise
package main
