// Command openai-compatible shows kernel.RunToolLoop driving a model over
// any OpenAI-compatible Chat Completions endpoint (providers/openai): the
// model calls a weather tool, then answers, with the exact usage the
// endpoint reported and the model it says it served.
//
//	OPENAI_API_KEY=… [OPENAI_BASE_URL=…] [OPENAI_MODEL=gpt-5.2] go run ./examples/openai-compatible
//
// Its tests run the same loop, and kernel.Execute's truthfulness cases,
// against a local endpoint replaying recorded transcripts.
package main
