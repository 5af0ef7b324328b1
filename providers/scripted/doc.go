// Package scripted is an offline, deterministic provider driven by a
// script: which text, usage, tool calls, interaction requests and failures
// each prompt yields, and what workspace commands print. It implements
// every optional ability of the provider contract with real state —
// detached runs and replayable sessions, retained control with
// digest-bound cancellation, interactions, context transfer, native
// continuation, durable and legacy branching, exec, observation and
// profile validation — and declares exactly those, so providertest runs
// whole against it; Reconnect builds the client a restarted process would.
// Its execution owner's stream (StreamOwned) observes the native session
// each turn runs in. A script with accounts makes it a subscription
// provider: its account owner binds an account from the seat stage's
// credential request every create and turn carries (CredentialRequests
// records them) and refuses an exhausted one for quota.
// It is the quickstart's worker and the runtime's test double, and it can
// misbehave on purpose — drop usage, report cumulative usage twice, emit an
// in-band error, die mid-turn, or serve another model than the one
// requested — so the runtime's truthfulness can be tested against it.
// ChatModel is its chat-model twin: a scripted contract.ChatModel for the
// kernel's tool loop, its tests, benchmarks and examples.
package scripted
