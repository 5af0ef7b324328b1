package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/sqlite"
	"github.com/agentrt/agentrt/store/storetest"
)

// BenchmarkEventReplay: paging through a run's events from a cursor is
// an index range scan per page (ns/event flat from 1k to 100k events).
func BenchmarkEventReplay(b *testing.B) {
	storetest.BenchEventReplay(b, func(b *testing.B) store.Store {
		s, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "agentrt.db"), sqlite.Options{})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { s.Close() })
		return s
	})
}
