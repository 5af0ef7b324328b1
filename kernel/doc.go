// Package kernel turns an AgentProfile into an exact execution through a
// provider and records what really happened.
//
// Execute runs one exact run: it checks the provider's capability document
// against the profile and refuses before any spend when the provider
// cannot honor it, resolves seats and runs each segment with its
// provider-facing projection while the authored profile keeps its
// identity, reads back the served model, and ends every run in exactly one
// terminal state — completed, failed, cancelled or timed out. A stream
// that ends without a terminal event, or carries an in-band error, is a
// failure, never an empty success. Rounds runs caller-authored plan/decide
// loops over Execute; RunToolLoop and StreamToolLoop drive a chat model
// that calls tools until it answers or a stop rule fires; Stream
// normalizes one turn. A result is delivered only when the caller's
// completion check passed on it: settlement is not delivery.
//
// The kernel records runs, events and ledger entries in a store.Store and
// draws spend from a ledger.Pool when one is given.
package kernel
