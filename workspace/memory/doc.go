// Package memory is the reference workspace.Store: every tenant's
// documents and tombstones in process memory, guarded by one mutex. It is
// the adapter the seed calls createInMemoryWorkspaceStore; the persistent
// adapters prove they behave the same by passing workspace/storetest,
// which this one passes too. Nothing survives the process.
package memory
