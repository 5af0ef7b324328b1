package postgres_test

import (
	"testing"

	"github.com/agentrt/agentrt/internal/pgtest"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/storetest"
)

// BenchmarkConcurrentAppends is durable events/s with 1, 8 and 32 runs
// appending at once to one PostgreSQL database (a fresh schema each).
func BenchmarkConcurrentAppends(b *testing.B) {
	pgtest.URL(b)
	storetest.BenchConcurrentAppends(b, func(b *testing.B) store.Store {
		return open(b, pgtest.Schema(b), nil)
	})
}
