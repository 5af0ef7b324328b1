// Package storetest holds the contract cases every workspace.Store
// adapter must pass (the seed's workspaceStoreContractCases; the names
// are spec/runtime.md §3.11's), and the contention checks: many writers,
// in one process or two, doing compare-and-set increments on one
// document with no lost update. An adapter's own test calls Run with a
// constructor for fresh, empty stores, and Contend / ContendAcrossProcesses
// with the counts it can afford.
package storetest
