// Package openai is direct model execution (harness cli-base) over any
// OpenAI-compatible Chat Completions endpoint, streamed as server-sent
// events through github.com/openai/openai-go/v3.
package openai
