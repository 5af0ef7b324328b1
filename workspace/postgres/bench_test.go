package postgres_test

import (
	"testing"

	"github.com/agentrt/agentrt/internal/pgtest"
	"github.com/agentrt/agentrt/workspace/storetest"
)

// BenchmarkWorkspacePostgres measures committed compare-and-set writes
// and reads against the database in AGENTRT_TEST_DATABASE_URL.
func BenchmarkWorkspacePostgres(b *testing.B) {
	b.Run("cas-write", func(b *testing.B) {
		storetest.BenchmarkCASWrites(b, open(b, pgtest.Schema(b), nil))
	})
	b.Run("cas-write-parallel", func(b *testing.B) {
		storetest.BenchmarkParallelCASWrites(b, open(b, pgtest.Schema(b), nil), 8)
	})
	b.Run("read", func(b *testing.B) {
		storetest.BenchmarkReads(b, open(b, pgtest.Schema(b), nil))
	})
}
