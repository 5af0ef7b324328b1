// Package ctxsleep owns one rule: a wait that a context's end cuts
// short. Backoffs, pauses and renewal waits across agentrt sleep
// through it, so none of them outlives the work it paces.
package ctxsleep
