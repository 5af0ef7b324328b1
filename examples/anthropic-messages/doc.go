// Command anthropic-messages shows kernel.Execute running a harness
// cli-base profile on the Anthropic Messages API through
// anthropic.NewProvider: one streamed turn of the profile's system prompt
// and the task, recorded with the exact usage the API reported and the
// model it says it served.
//
//	ANTHROPIC_API_KEY=… [ANTHROPIC_BASE_URL=…] [ANTHROPIC_MODEL=anthropic/claude-sonnet-4-5-20250929] go run ./examples/anthropic-messages
//
// The provider reads nothing from the environment itself: main passes
// the key and base URL in ProviderOptions. Its tests run the same
// execution, and kernel.Execute's truthfulness cases (missing usage is
// unknown, an in-band error or a dropped connection fails the run, another
// served model fails it with served-model-mismatch), against a local
// server replaying providers/anthropic's recorded transcripts.
package main
