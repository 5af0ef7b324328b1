// Package improve is the improvement front door's production path
// (runtime §3.9): ProposeImprovement → ReviewProposal → CreateActivation
// → ExecuteActivation is the only way an improvement reaches a live
// target. Each step validates its input with the candidate kinds, checks
// that the digests bind the records before it, and records one idempotent
// transition in the run store.
//
// It owns the rules of that path. It must not search for candidates,
// measure them, or write a target any other way than through Targets
// from ExecuteActivation (RTP-04, RTP-13: search and activation stay
// detached).
package improve
