// Command improve shows search.Improve (seed 003's improve): a greedy
// search over system-prompt variants finds a better prompt for a ticket
// triage agent on train and selection cases, and Improve itself measures
// the base and the candidate on the held-out test cases, deciding ship or
// hold from a paired bootstrap interval and the accounted spend. Offline:
// the agent's and the proposer's models are scripted, the judge is exact
// match, runs are recorded in the embedded SQLite store, and nothing is
// activated — the candidate is a proposal for the production path.
//
//	go run ./examples/improve
package main
