// Package taskqueue runs bounded tasks under the caller's policy: the Go
// form of the reference runtime's runTaskQueue (seed 003).
//
// The caller's Take decides what is ready: it is called whenever a slot may
// be filled, with the identities of the tasks running, and may persist an
// admission checkpoint before it returns a task. Run yields every task's
// settlement — its value or its error — in completion order. Stopping the
// iteration, or a failing Take, stops admission; Run then waits for the
// tasks already started. The caller owns readiness, cancellation (through
// the context), retry, persistence and the meaning of failures; the queue
// does not turn tasks into agents or impose a graph.
//
// The package depends on the standard library only.
package taskqueue
