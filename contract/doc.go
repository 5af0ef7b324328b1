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
//
// # Writing a provider
//
// Of the many names here, a provider author needs about fifteen; the
// rest are wire kinds for abilities a first provider does not declare.
//
//   - Provider (Name, Capabilities, Create) and Environment (ID,
//     Provider, Name, Creation, Metadata, Capabilities, Status, Stream,
//     Destroy): the two interfaces to implement.
//   - Capabilities: the document Capabilities returns. Declare only what
//     is enforced — StreamingCapabilities{Live: true} and, when the
//     backend reports token usage, Usage — and implement an optional
//     ability's interface exactly when its capability is declared
//     (CheckExposure).
//   - CreateInput and KeyedCreate: what Create receives, and the helper
//     that gives it the idempotency-key contract (same input, same
//     environment; a changed input refused; Forget on Destroy), in
//     memory or, through Persist and a KeyRecordStore (the run store),
//     across process restarts (CreateKeyPersister lets a caller with a
//     store hand it over).
//   - ProfileCapabilities and CheckProfileSupport: refuse, before anything
//     exists, a profile the provider cannot apply.
//   - TurnInput and EnvironmentEvent: what Stream receives and yields;
//     StatusStreamEvent and NewStreamEvent for the events' normalized
//     form, TokenUsage and UsageMode for an event's usage.
//   - CompletedEvent, FailedEvent and CancelledEvent: the terminal event
//     that ends every turn, exactly as EnvironmentEventTerminal reads it.
//     A broken stream is an error yielded instead, never a terminal
//     event.
//   - ErrUnsupported and ErrDestroyed: what a refusal and a turn on a
//     destroyed environment wrap.
//
// A model API that streams a chat completion need not implement
// Environment at all: a ChatModel (ChatMessage in, ChatEvent out) and a
// providers/chatprovider Config make the whole Provider; a model that
// retries a refused request yields RetryEvent before each wait, so the
// run shows it. Either way,
// package contract/providertest runs the conformance scenarios on it:
// providertest.Run in a test, providertest.Check where there is no test
// (see its example, a complete provider in about a hundred lines).
package contract
