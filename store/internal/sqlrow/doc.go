// Package sqlrow holds what the SQL run-store adapters (store/sqlite and
// store/postgres) share: how instants, documents, runs, events and ledger
// entries are stored as columns and read back. It knows nothing of
// either database's driver; both pass rows that can Scan.
package sqlrow
