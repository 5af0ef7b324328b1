package postgres_test

import (
	"testing"

	"github.com/agentrt/agentrt/internal/pgtest"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/storetest"
)

// BenchmarkEventReplay: paging through a run's events from a cursor is
// an index range scan per page (ns/event flat from 1k to 100k events).
func BenchmarkEventReplay(b *testing.B) {
	pgtest.URL(b)
	storetest.BenchEventReplay(b, func(b *testing.B) store.Store {
		return open(b, pgtest.Schema(b), nil)
	})
}
