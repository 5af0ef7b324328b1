// Package postgres is the workspace.Store on PostgreSQL through pgx, for
// many agentrt processes sharing one workspace. Each compare-and-set is
// one statement whose WHERE clause is the precondition (UPDATE … WHERE
// revision = r, INSERT … ON CONFLICT DO UPDATE … WHERE NOT live), so the
// database decides races between connections and processes and exactly
// one writer wins. A delete erases the content and records the tombstone
// in one statement. Tables (prefixed workspace_, with their own
// workspace_schema_migrations table) are created in the connection's
// search_path by embedded migrations applied at Open under an advisory
// lock; they can share a database and schema with store/postgres.
//
// Erasure: a delete sets the content to NULL, so no query can return it.
// PostgreSQL keeps the old row version on disk until VACUUM reclaims the
// space (and until the space is reused); erasure from the data files is
// as strong as the database's vacuum and storage policy.
package postgres
