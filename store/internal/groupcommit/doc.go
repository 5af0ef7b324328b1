// Package groupcommit shares durable commits among concurrent writers:
// callers hand their request to one committer goroutine, which takes
// every request queued at that moment (up to a bound), writes them all in
// one transaction, commits once, and only then answers each caller with
// its own result. The SQL run-store adapters use it for AppendEvents, so
// N runs appending at once pay for one fsync instead of N.
//
// It knows nothing of SQL: the adapter's commit function does the
// writing, isolating a request that fails (its fence no longer holds, an
// event id already exists) so that only that request fails.
package groupcommit
