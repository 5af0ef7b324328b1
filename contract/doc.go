// Package contract holds the provider contract: what agents, the sidecar
// and provider adapters exchange, and the Go interfaces a provider
// implements. It is the single home of those shapes; higher layers import
// them and never redefine them.
//
// The wire kinds — the capability document, create input and its
// idempotency digest, workspace requests, turn input and results, token
// usage, stream events and envelopes, run control and digest-bound
// cancellation, interactions, portable context transfer (Interface 5.x),
// native continuation, durable workspace branching, exact process,
// observation and execution-failure receipts — each have a Go type, a
// strict schema (Parse*, Validate), and where the reference has one a
// canonical digest that is byte-for-byte the TypeScript reference's.
//
// The Go interfaces are Provider, Environment and Session, plus one
// interface per optional ability (Dispatcher, SessionOpener,
// InteractionResponder, RunCanceller, NativeContinuer, DurableBrancher,
// ContextTransferrer, …), discovered by type assertion;
// CheckExposure and its siblings fail a provider whose declared
// capabilities and implemented interfaces disagree. Tool and ChatModel
// are the tool-loop ports.
//
// Contract types decode strictly through package schema and must not
// import the runtime, stores or providers.
package contract
