// Package openai is direct model execution (harness cli-base) over any
// OpenAI-compatible Chat Completions endpoint, each turn streamed as
// server-sent events through github.com/openai/openai-go/v3.
//
// It owns two things. Model is a contract.ChatModel — what the kernel's
// tool loop drives: the transcript and the tools' names, descriptions and
// input schemas go out as one request; text deltas come back as they
// arrive, tool calls assembled from their streamed deltas, and the usage
// chunk. Provider is a contract.Provider for harness cli-base over that
// model: an environment is a profile bound to the endpoint, a turn is one
// completion of the profile's system prompt and the turn's prompt, and
// its events are canonical (execution.started, message.part.updated,
// usage, then done, error or execution.cancelled). The environments, turn
// admission and events are shared with every other direct model API
// (providers/internal/chatprovider); this package supplies the model per
// turn, its refusals of a profile's model section, and the done event's
// finishReason.
//
// # What it refuses
//
// Everything a bare completion endpoint cannot honour is refused before
// any request, wrapping contract.ErrUnsupported: a profile with
// instructions, a tools map, permissions, MCP servers, subagents, hooks,
// modes, resources, extensions, seats, connections or confidential
// execution; another harness than cli-base; a reasoning effort the
// harness table (harness.ReasoningEfforts) does not give cli-base; token
// ceilings the endpoint cannot enforce separately; a workspace and the
// other create fields it has no use for; turn ids, sessions, detach,
// control references and non-text parts. Its capability document
// declares live streaming and the system prompt, plus usage only when
// the caller vouches that the endpoint reports it — nothing else, so
// every providertest scenario about another ability skips.
//
// # Usage truthfulness
//
// Every request asks for stream_options.include_usage. The usage chunk's
// counts become a usage event (mode cumulative: the completion's total);
// counts it did not carry stay nil. An endpoint that sends no usage chunk
// produces no usage event, so the turn's usage is unknown — never 0. A
// turn succeeds only when the stream said [DONE] after a finish reason
// of stop or tool_calls: an in-band error object, finish reasons length
// and content_filter, a refusal and two different served models are
// in-band failures (ChatFailure, or an error terminal event); a stream
// cut before [DONE] is ErrStreamBroken, never a success.
//
// # Identity and errors
//
// The served model is read back from the chunks' "model" field: on the
// bare Model as a contract.ChatServed event and through Options.Observe
// (TurnReport), on the Provider on the terminal event's effectiveBackend
// (taken from the ChatServed event), where kernel.Execute compares it with
// the requested model. HTTP failures are *APIError with Retryable and
// RetryAfter as data; requests refused with 429, 408, 409 or 5xx are
// retried up to Options.MaxRetries, honouring Retry-After within
// Options.MaxRetryWait. Context cancellation ends a turn at once with an
// error wrapping the context's.
//
// The API key is sent only in the Authorization header: it is never
// logged and is scrubbed from every error and failure text, and a 401 or
// 403 keeps none of the endpoint's message, which may echo the key.
// Nothing is read from the process environment; the package has no
// global mutable state.
package openai
