// Package contract holds the provider contract's wire shapes: what agents,
// the sidecar and provider adapters exchange. It is the single home of
// those shapes; higher layers import them and never redefine them.
//
// This package currently holds WorkspaceCwd, the based working-directory
// reference of a workspace request (seed 000). The capability document,
// turns, events, control, interactions, context transfer, continuation and
// branching join it with the provider-contract issue.
//
// Contract types decode strictly through package schema and must not
// import the runtime, stores or providers.
package contract
