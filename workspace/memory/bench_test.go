package memory_test

import (
	"testing"

	"github.com/agentrt/agentrt/workspace/memory"
	"github.com/agentrt/agentrt/workspace/storetest"
)

// BenchmarkWorkspaceMemory is the reference adapter's baseline.
func BenchmarkWorkspaceMemory(b *testing.B) {
	b.Run("cas-write", func(b *testing.B) { storetest.BenchmarkCASWrites(b, memory.New(nil)) })
	b.Run("cas-write-parallel", func(b *testing.B) { storetest.BenchmarkParallelCASWrites(b, memory.New(nil), 8) })
	b.Run("read", func(b *testing.B) { storetest.BenchmarkReads(b, memory.New(nil)) })
}
