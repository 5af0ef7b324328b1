// Package harness owns the harness vocabulary and the facts about what each
// harness can do with a model: its provider lock, the reasoning efforts it
// can express and the native control token each becomes, which per-turn
// selectors it honors, and which system-prompt intents (replace, append) it
// owns when a profile is lowered into its workspace.
//
// The tables are those of the reference implementation (the conformance
// vectors bind HarnessSupportsModel, ReasoningEffortsFor,
// NativeReasoningControl, Providers, ModelProvider and
// PreferredHarnessForModel). CheckModelSupport is the stricter, newer check
// that seat validation uses: it also resolves bare model ids by family and
// applies measured (harness, model, effort) exclusions.
//
// This package holds data and pure functions only. It must not import any
// other agentrt package except canonjson.
package harness
