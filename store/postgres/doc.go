// Package postgres is the run store (store.Store) on PostgreSQL through
// pgx, for teams whose agentrt processes share one database. It passes
// store/storetest exactly as store/sqlite does: updates compare-and-set on
// revision, terminal states are final, a lapsed lease reads as
// interrupted, each run's events get gapless sequences even when many
// processes append at once (appends lock the run's row), appends from
// many runs in one process share commits (group commit), and idempotency
// claims are race-safe (INSERT … ON CONFLICT DO NOTHING). Migrations are
// embedded and applied at Open under an advisory lock, so processes that
// start together migrate once. Tables are created in the connection's
// search_path, or in Options.Schema (created if missing, and named in
// every statement) so the store shares a database with other tables of
// the same names. OpenPool runs the store on a pool the caller owns (one
// it shares with River, say), which Close leaves open.
package postgres
