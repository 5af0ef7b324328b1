// Package chatturn runs one streamed chat turn for an HTTP handler (seed
// 003's handleChatTurn): the producer's events framed between
// session.run.started and session.run.completed (or error and
// session.run.failed), the assistant's final text persisted exactly once
// after the last producer event, and hooks whose failures never change
// what the client sees.
//
// With a run store the turn is durable and outlives its reader: every
// line is recorded (under the run's lease, fenced) before any reader sees
// it, the turn keeps running when the connection drops, and a reader that
// comes back — to this process or another sharing the store — with the
// turn's execution id (DeriveExecutionID, the X-Execution-ID header) and
// the last line it received (Last-Event-ID) gets the rest of the same
// execution, never a second one.
package chatturn
