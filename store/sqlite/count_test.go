package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/sqlite"
	"github.com/agentrt/agentrt/store/storetest"
)

func TestCountIdempotency(t *testing.T) {
	storetest.RunCountIdempotency(t, func(t *testing.T, clock func() time.Time) store.Store {
		s, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "agentrt.db"), sqlite.Options{Now: clock})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	})
}
