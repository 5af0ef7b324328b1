// Command runtime-run shows kernel.StartRuntimeRun (seed 003's
// startRuntimeRun): a run record and cost ledger for work the caller
// drives itself — here, three model calls made outside the runtime, each
// reported as it happens — recorded in SQLite under the run's lease, so
// a process that dies mid-work leaves the run interrupted with the spend
// it reported, never a silent gap.
//
//	go run ./examples/runtime-run
//	go run ./cmd/agentrt runs show <the printed run id>
package main
