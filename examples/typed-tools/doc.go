// Command typed-tools gives a model on an OpenAI-compatible endpoint two
// Go functions as tools, runs them from an AgentProfile through
// kernel.RunToolLoop, and records the run in the embedded SQLite store.
// No schema is written by hand: package tools infers each tool's input
// schema from its Go type and checks every call against it before the
// function runs. The profile gives the system prompt and the model, and
// declares the tools; the loop refuses, before any request, a Go tool it
// does not declare or a declared tool with no Go function.
//
//	OPENAI_API_KEY=… [OPENAI_BASE_URL=…] go run ./examples/typed-tools
//
// Its test runs the same program against a local endpoint replaying a
// recorded transcript (testdata/trip.txtar).
package main
