// Package chatprovider is harness cli-base over any contract.ChatModel:
// the contract.Provider and contract.Environment that every direct model
// API (providers/openai, providers/anthropic) shares, and that a provider
// for another model API written outside this module reuses the same way
// (a ChatModel and a Config are all it writes). A vendor package
// supplies a Config — its name, its error prefix, whether its streams
// report usage, its default model and model-id prefix, the reasoning
// efforts it refuses (CheckEffort), and a Dispatch factory that
// turns a turn's Settings (model, reasoning effort, output ceiling) into
// the ChatModel the turn runs on, refusing with its own typed error what
// it cannot honour — and gets a Provider back.
//
// What it owns, for every vendor alike:
//
//   - Create: a profile bound to the model. Every create field a bare
//     model call cannot honour (a catalog profile, runtime attachments, a
//     requested id, a backend, a workspace, resources, environment
//     variables, secrets, egress, a billing owner) and every profile it
//     cannot apply (what contract.CheckProfileSupport refuses against
//     ProfileCapabilities, another harness than cli-base, seats,
//     connections, confidential execution, visible or reasoning token
//     ceilings alone, and the reasoning efforts Config.CheckEffort
//     refuses) is refused before anything exists, wrapping
//     contract.ErrUnsupported. Idempotency keys go through
//     contract.KeyedCreate: the same input returns the same environment, a
//     changed one is refused, and Destroy forgets the key.
//   - Turn admission: a turn on a destroyed environment matches
//     Config.ErrDestroyed; a control reference, context transfer, native
//     continuation, detach, turn id, session, execution or replay
//     position, context, provider options, interactions, a non-text part,
//     no prompt, a turn profile it cannot apply, no model (neither the
//     profile nor Config.DefaultModel names one), or Settings
//     Config.Dispatch refuses are refused before any request (the model
//     is never called).
//   - The transcript: one system message (the profile's systemPrompt, then
//     its appendSystemPrompt, joined by a blank line; none when both are
//     empty) and the prompt as one user message. The model decides how a
//     system message reaches its wire.
//   - The turn's events: execution.started; a status event (processing,
//     not terminal) whose effectiveBackend names the provider and the
//     served model as soon as the contract.ChatServed event reports it,
//     so that a turn that breaks later still names it; a
//     message.part.updated per text delta; a usage event per
//     contract.ChatUsage, carried as the model reported it and when it
//     reported it (a counter it did not report stays unknown, no usage
//     event means the turn's usage is unknown, never 0); a warning
//     (code WarningToolCallNotRun, the call's id and name) per tool call,
//     since no tools are offered and the call is not run; a warning
//     (code WarningModelRetry, with the attempt, delay, status and a
//     bounded reason) per contract.ChatRetry, when the model's request
//     is sent again (not a failure: the turn goes on); and one
//     terminal event — done, error (a contract.ChatFailure, or the turn's
//     own timeoutMs elapsing) or execution.cancelled (the caller's
//     context ended). Every terminal event's effectiveBackend names the
//     served model too (omitted when none was reported: unknown, not a
//     mismatch); kernel.Execute compares it with the requested model. A
//     stream error (a dropped connection, a refusal over HTTP) ends the
//     sequence with that error and no terminal event: never a success;
//     what the turn reported before it was already emitted.
//
// Capabilities declares exactly that: live streaming, the system prompt
// (replace and append: cli-base has no prompt of its own, so both are
// the system message), and usage when Config.Usage says the vendor's
// streams report it — nothing else, so every providertest scenario about
// another ability skips. No tools are offered, so a tool call the model
// makes is not run and not reported as work done, only warned of.
//
// The package holds no global mutable state and reads nothing from the
// process environment; credentials live in the vendor's ChatModel.
package chatprovider
