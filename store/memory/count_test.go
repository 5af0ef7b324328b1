package memory_test

import (
	"testing"
	"time"

	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/memory"
	"github.com/agentrt/agentrt/store/storetest"
)

func TestCountIdempotency(t *testing.T) {
	storetest.RunCountIdempotency(t, func(t *testing.T, clock func() time.Time) store.Store {
		s := memory.New(clock)
		t.Cleanup(func() { s.Close() })
		return s
	})
}
