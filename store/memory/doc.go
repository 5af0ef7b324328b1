// Package memory is an in-memory store.Store for tests and examples. It
// keeps nothing across processes; use store/sqlite for durable state.
package memory
