package store_test

import (
	"context"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/store/sqlite"
)

// BenchmarkKeyedCreateDurable measures a durable keyed create on SQLite:
// "create" is a new key (intent and outcome records, one create);
// "replay-after-restart" is a known key on an adapter whose memory is
// empty (the two records read back, the environment found by id).
func BenchmarkKeyedCreateDurable(b *testing.B) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "keys.db"), sqlite.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	p := &keyedProvider{}
	b.Run("create", func(b *testing.B) {
		k := p.adapter(b, st)
		i := 0
		for b.Loop() {
			i++
			if _, _, err := k.Do(ctx, keyedInput(b, "bench-"+strconv.Itoa(i), "writer"), p.create); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("replay-after-restart", func(b *testing.B) {
		in := keyedInput(b, "bench-replay", "writer")
		if _, _, err := p.adapter(b, st).Do(ctx, in, p.create); err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			if _, c, err := p.adapter(b, st).Do(ctx, in, p.create); err != nil || c != contract.CreationReplayed {
				b.Fatal(c, err)
			}
		}
	})
}
