// Package openai is direct model execution (harness cli-base) over any
// OpenAI-compatible Chat Completions or Responses endpoint, each turn
// streamed as server-sent events through github.com/openai/openai-go/v3.
//
// It owns two things. Model is a contract.ChatModel — what the kernel's
// tool loop drives: the transcript and the tools' names, descriptions and
// input schemas go out as one request; text deltas come back as they
// arrive, tool calls assembled from their streamed deltas, and the usage
// report. Provider is a contract.Provider for harness cli-base over that
// model: an environment is a profile bound to the endpoint, a turn is one
// completion of the profile's system prompt and the turn's prompt, and
// its events are canonical (execution.started, message.part.updated,
// usage, then done, error or execution.cancelled). The environments, turn
// admission and events are shared with every other direct model API
// (providers/chatprovider); this package supplies the model per
// turn, its refusals of a profile's model section, and the done event's
// finishReason.
//
// # Two wire protocols
//
// Options.API picks the protocol; everything else — options, refusals,
// retries, errors, the key's handling, the truthfulness rules — is the
// same for both, and both streams are read by the package's own SSE path
// (runStream), not the SDK's Stream, which ends a truncated stream the
// same way as a finished one.
//
// APIChatCompletions (the default) is POST {base}/chat/completions:
// messages, function tools, stream_options.include_usage, and
// reasoning_effort and max_completion_tokens when set; the stream is
// "data:" chunks ending in "data: [DONE]".
//
// APIResponses is POST {base}/responses with model, input, tools,
// store:false and stream:true, plus reasoning.effort and
// max_output_tokens when set. The transcript becomes input items: system
// and user messages with input_text parts, assistant text as a message
// with an output_text part, each earlier tool call as a function_call
// item (call_id, name, arguments) and each tool result as a
// function_call_output item (call_id, output); a call or result without
// its call id cannot be paired and is refused before the request. Tools
// are {type:"function", name, description, parameters, strict:false}:
// strict is sent because the Responses API's default is true, which
// would hold schemas written for Chat Completions to its strict subset.
// The stream's events are read by their data's "type" (the event line's
// name when the data has none): response.created and every event
// carrying a response give the served model and the response id;
// response.output_text.delta is text; a function_call item opened by
// response.output_item.added, its response.function_call_arguments
// deltas and response.output_item.done make one tool call (the done
// item's call_id, name and arguments win), yielded when the response
// completes, in output order; response.refusal deltas or a refusal part
// are a refusal. Other events (reasoning items, content parts, the
// .done echoes) carry nothing the turn reports and are skipped.
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
// Every Chat Completions request asks for stream_options.include_usage.
// The usage chunk's counts (Responses: the terminal response's usage —
// input_tokens, input_tokens_details.cached_tokens, output_tokens,
// output_tokens_details.reasoning_tokens, total_tokens) become a usage
// event (mode cumulative: the turn's total); counts it did not carry
// stay nil. An endpoint that sends no usage produces no usage event, so
// the turn's usage is unknown — never 0. prompt_tokens and input_tokens
// already count the cached tokens, so InputTokens is the whole prompt
// with CacheReadInputTokens broken out beside it; neither API reports
// cache writes, so CacheCreationInputTokens stays nil (unknown). OpenAI
// reports no dollars; a router that bills through the same APIs
// (OpenRouter) sends usage.cost, its receipt, which becomes the turn's
// Cost — a value that is not a finite number at or above zero is no
// report, so the dollars stay unknown rather than 0.
//
// What a turn learned before an early end (a cut stream, a cancelled or
// timed-out context, an in-band failure) is handed over before the end:
// text and the served model as they arrive; usage whenever the endpoint
// sends it (Chat Completions: usually only in the last chunk, so a turn
// cut before it has unknown usage; Responses: the terminal response,
// and a lifecycle event's running total when an endpoint sends one); and
// a Responses function call whose item was done. A Chat Completions tool
// call is whole only when its choice finishes, so one still streaming
// when the turn ends is dropped, as is a Responses call whose item was
// still open.
//
// A Chat Completions turn succeeds only when the stream said [DONE]
// after a finish reason of stop or tool_calls: an in-band error object,
// finish reasons length and content_filter, a refusal and two different
// served models are in-band failures (ChatFailure, or an error terminal
// event). A Responses turn succeeds only on response.completed with
// status completed: response.incomplete (its reason, e.g.
// max_output_tokens), response.failed (its error's message and code), an
// error event, a refusal and two different served models are in-band
// failures, after the usage the terminal response reported. A stream
// that ends before the endpoint said it was done is ErrStreamBroken,
// never a success.
//
// # Identity and errors
//
// The served model is read back from the chunks' "model" field
// (Responses: the response object's "model"): on the
// bare Model as a contract.ChatServed event as soon as the first chunk
// (Responses: response.created) names it, and through Options.Observe
// (TurnReport); on the Provider as the effectiveBackend of a status event
// emitted at once and of the terminal event, where kernel.Execute compares
// it with the requested model. HTTP failures are *APIError with Retryable and
// RetryAfter as data; requests refused with 429, 408, 409 or 5xx (or as
// an X-Should-Retry header says), and connection failures, are retried
// up to Options.MaxRetries, honouring Retry-After within
// Options.MaxRetryWait, else after a doubling backoff from 0.5 s (at
// most 8 s). The package retries, not the SDK, so that each retry is
// seen: it is yielded as a contract.ChatRetry event before its wait (on
// the Provider, a warning with code chatprovider.WarningModelRetry).
// Context cancellation ends a turn at once with an
// error wrapping the context's.
//
// The API key is sent only in the Authorization header: it is never
// logged and is scrubbed from every error and failure text, and a 401 or
// 403 keeps none of the endpoint's message, which may echo the key.
// Nothing is read from the process environment; the package has no
// global mutable state.
package openai
