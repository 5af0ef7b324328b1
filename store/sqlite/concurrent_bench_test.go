package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/sqlite"
	"github.com/agentrt/agentrt/store/storetest"
)

// BenchmarkConcurrentAppends is durable events/s with 1, 8 and 32 runs
// appending at once to one SQLite file.
func BenchmarkConcurrentAppends(b *testing.B) {
	storetest.BenchConcurrentAppends(b, func(b *testing.B) store.Store {
		s, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "agentrt.db"), sqlite.Options{})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { s.Close() })
		return s
	})
}
