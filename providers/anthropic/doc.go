// Package anthropic is direct model execution over the Anthropic Messages
// API: Model is a contract.ChatModel that runs each turn as one streamed
// request (anthropic-sdk-go v2 sends it and splits the server-sent events;
// this package builds the request and decodes the events into chat
// events). The kernel's tool loop drives it like any other chat model.
//
// What it owns: the translation between the provider-neutral chat
// transcript and the Messages API, the decoding of the event stream
// (message_start, content_block_start/delta/stop with text_delta,
// input_json_delta, thinking_delta and signature_delta, message_delta,
// message_stop, ping, error), usage reporting, the served-model check,
// the mapping of a reasoning effort to a thinking budget, and the typed
// errors of the HTTP exchange with their retry policy.
//
// What it refuses, before anything is sent: options without a model or
// with a bad base URL (ErrInvalidOptions), and a reasoning effort the
// model cannot honour (*EffortError): one off the ladder, one the API
// cannot express exactly (minimal would be raised to low), one above the
// model's ceiling or for a model that does not reason, or one whose
// budget does not fit under MaxTokens.
//
// Provider (NewProvider) is harness cli-base over that model: the
// environments, turn admission and canonical events are shared with every
// direct model API (providers/chatprovider); this package
// supplies a Model per turn (the profile's model, reasoningEffort as the
// thinking budget, maxTotalOutputTokens as max_tokens) and its refusals.
// It declares live streaming, the system prompt (a profile's systemPrompt
// then appendSystemPrompt become the top-level system parameter) and
// usage — the API's stream always carries usage, and a counter it did not
// send stays unknown — and nothing else. Before any request it refuses
// what it cannot honour, wrapping contract.ErrUnsupported: an effort
// NewModel would refuse (also an *EffortError), visible or reasoning
// token ceilings (max_tokens bounds both together), and whatever the
// shared provider refuses for every model API (instructions, tools,
// permissions, MCP, another harness, sessions, non-text parts, …). Its
// APIKey and BaseURL come from ProviderOptions only.
//
// System prompt: the API has no system role, so every system message of
// the transcript goes, in order, into the top-level system parameter; the
// caller decides what those messages say (a profile's replace or append
// semantics are applied before the transcript reaches the model — this
// package neither adds a prompt of its own nor drops one). Tool results
// become tool_result blocks of a user message, tool calls tool_use blocks
// of an assistant message, and consecutive messages of one API role are
// merged, as the API requires. With extended thinking on, the API wants an
// assistant message that called tools to start with the thinking blocks
// that preceded the calls; the transcript has no place for them, so a
// Model remembers the thinking blocks of its own recent tool-calling turns
// (keyed by the first call's id, bounded) and hands them back unmodified.
//
// Usage truthfulness: the API's counts are cumulative within a response —
// message_start carries input_tokens, cache_read_input_tokens and
// cache_creation_input_tokens and the output so far, and message_delta
// the totals so far — so every usage event has contract.UsageCumulative
// mode and the turn's usage is the last one. A counter the server did not
// send is unknown (nil), never 0; because contract.TokenUsage must know
// input and output tokens, a response that never names one of them yields
// no usage event at all, and the turn's usage stays unknown. InputTokens
// is the whole prompt, as on every provider: the API's input_tokens (which
// excludes the cache) plus the cache reads and writes, which are also
// reported beside it (a cache counter not sent stays nil and adds
// nothing); ReasoningTokens is output_tokens_details.
// thinking_tokens when sent (already included in OutputTokens).
//
// Served model: message_start names the model that served the turn, and
// the turn reports it first, as a contract.ChatServed event. The model
// does not judge it: the consumer owns that rule (the kernel's tool loop
// with RequestedModel fails a turn served by another model, keeping the
// tokens it spent and nothing else of it).
//
// Failures: an HTTP refusal before the stream is an *APIError whose
// Retryable and RetryAfter are data; 408, 409, 429 and 5xx (529 is
// "overloaded"), or whatever the response's x-should-retry header says
// instead, are retried up to Options.MaxRetries, waiting as
// retry-after-ms or retry-after asks when that is within
// Options.MaxRetryWait, else with a doubling backoff. Each retry is
// yielded as a contract.ChatRetry event before its wait (on the
// Provider, a warning with code chatprovider.WarningModelRetry), so the
// turn's consumer sees it. Nothing is retried once an event has arrived. An error event inside the stream is the
// model's failure: a contract.ChatFailure event ends the turn; so does a
// message whose stop_reason is not an answer: refusal (the API's
// classifiers stopped it), max_tokens or model_context_window_exceeded
// (cut short, as Chat Completions' finish_reason length), pause_turn (an
// unfinished turn this port cannot resume), none or an unknown one. Only
// end_turn, stop_sequence and tool_use end the turn normally. Every event
// the stream carried before its end — the served model, the usage so far,
// text, complete tool calls — has been yielded by then. A response
// that ends before message_stop, or that cannot be decoded, is an error
// matching ErrStreamBroken, never a success. A cancelled context ends the
// turn with an error wrapping the context's.
//
// Secrets: the API key travels only in the x-api-key header. It is never
// logged, and any text from a server or transport that reaches an error
// or event has it redacted. The package holds no global mutable state.
package anthropic
