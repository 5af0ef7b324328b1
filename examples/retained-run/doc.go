// Command retained-run shows retained.StartRetainedRun (seed 003's
// startRetainedRun; FD-08): a run the provider owns, admitted in the run
// store (intent → environment → dispatched) before anything is visible,
// whose starter is dropped mid-run — handle, provider client and store
// connection — after which a new store connection and a new provider
// client re-attach by the plain-data control ref and receive the rest of
// the events and the result under the same identity.
//
// The scripted provider stands in for a provider outside the process;
// with one (agentrt serve and --provider remote) the starter could be
// killed outright. From the command line: agentrt run --retain, then
// agentrt runs attach RUN.
//
//	go run ./examples/retained-run
package main
