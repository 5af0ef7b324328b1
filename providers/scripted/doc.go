// Package scripted is an offline, deterministic provider driven by a
// script: which text, usage, tool calls and failures each prompt yields.
// It is the quickstart's worker and the runtime's test double, and it can
// misbehave on purpose — drop usage, report cumulative usage twice, emit an
// in-band error, die mid-turn, or serve another model than the one
// requested — so the runtime's truthfulness can be tested against it.
// ChatModel is its chat-model twin: a scripted contract.ChatModel for the
// kernel's tool loop, its tests, benchmarks and examples.
package scripted
