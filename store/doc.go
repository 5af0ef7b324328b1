// Package store defines agentrt's durable state: run records, each run's
// append-only event log with sequence numbers and replay cursors, its cost
// ledger entries, and idempotency records. Adapters implement Store:
// store/sqlite is the embedded default, store/memory serves tests, and
// store/storetest holds the contract cases every adapter must pass.
//
// The store is deliberately ignorant of event and ledger schemas: it keeps
// each body as canonical JSON and indexes only what it must (run, sequence,
// type, time). Durability is the contract: Append returns only after the
// events are durable, and nothing is visible to readers before that.
package store
