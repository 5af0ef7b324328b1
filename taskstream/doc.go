// Package taskstream runs one agent turn as the runtime's task stream
// (seed 003's runAgentTaskStream): task_start, the knowledge-readiness
// gate (with its questions and acquisition preflight), the session
// created or resumed, the backend's events normalized, and exactly one
// final event — completed, blocked, failed or aborted. A backend failure
// never escapes as an error: it is a backend_error with a typed detail
// (transport failures keep their HTTP status and a bounded body), then
// task_end and final. A non-completed final with empty text is a
// failure, never an empty success.
//
// Backends are an interface; ProviderBackend runs the turn as an exact
// kernel run on any contract.Provider, its contract envelopes mapped to
// the task stream's vocabulary.
package taskstream
