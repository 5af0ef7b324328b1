// Package sqlrows holds what the SQL workspace adapters (workspace/sqlite
// and workspace/postgres) share: reading listed documents and tombstones
// back from result rows. It knows nothing of either driver; both pass
// rows that can Scan.
package sqlrows
