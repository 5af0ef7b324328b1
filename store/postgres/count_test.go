package postgres_test

import (
	"testing"
	"time"

	"github.com/agentrt/agentrt/internal/pgtest"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/storetest"
)

func TestCountIdempotency(t *testing.T) {
	storetest.RunCountIdempotency(t, func(t *testing.T, clock func() time.Time) store.Store {
		return open(t, pgtest.Schema(t), clock)
	})
}
