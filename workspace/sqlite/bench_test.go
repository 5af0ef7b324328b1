package sqlite_test

import (
	"path/filepath"
	"testing"

	"github.com/agentrt/agentrt/workspace/storetest"
)

// BenchmarkWorkspaceSQLite measures durable compare-and-set writes (WAL,
// synchronous FULL: every write is fsynced) and reads.
func BenchmarkWorkspaceSQLite(b *testing.B) {
	b.Run("cas-write", func(b *testing.B) {
		storetest.BenchmarkCASWrites(b, openAt(b, filepath.Join(b.TempDir(), "agentrt.db"), nil))
	})
	b.Run("cas-write-parallel", func(b *testing.B) {
		storetest.BenchmarkParallelCASWrites(b, openAt(b, filepath.Join(b.TempDir(), "agentrt.db"), nil), 8)
	})
	b.Run("read", func(b *testing.B) {
		storetest.BenchmarkReads(b, openAt(b, filepath.Join(b.TempDir(), "agentrt.db"), nil))
	})
}
