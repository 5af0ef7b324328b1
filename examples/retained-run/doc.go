// Command retained-run shows retained.StartRetainedRun (seed 003's
// startRetainedRun; FD-08): a run the provider owns, admitted in the run
// store (intent → environment → dispatched) before anything is visible.
//
// The program serves a scripted provider on loopback, as agentrt serve
// would, so that the run lives outside every process that touches it.
// It starts the starter as a child process (itself, re-executed), which
// starts the run over HTTP (providers/remote), prints the plain-data
// control ref and its first event, and is then killed with SIGKILL. This
// process re-attaches by that control ref, through a new store
// connection and provider client, and receives the rest of the events
// and the result under the same identity. From the command line: agentrt
// run --retain --provider remote, then agentrt runs attach RUN.
//
//	go run ./examples/retained-run
package main
