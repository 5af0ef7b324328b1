// Command graph shows graph.RunGraph (seed 003's runGraph): a fixed
// topology written as data — a driver delegating to a coder and a
// reviewer, and a critic analyzing the coder's settles for the driver —
// interpreted over one supervised run. Every edge traversal prints as a
// ledger row (delivered, with the bytes that crossed and the worker they
// reached) and is journaled beside the spawns in the run directory.
// Offline and scripted: the driver's model and the workers' provider are
// scripted, and the workers' runs are recorded in the embedded SQLite
// store.
//
//	go run ./examples/graph
package main
