// Package pgdb migrates agentrt's PostgreSQL schemas: the one migration
// runner the run store and the workspace store share, each with its own
// migrations table and advisory lock so they can share a database.
package pgdb
