package sidecar_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/sidecar"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/sqlite"
)

// BenchmarkExpireBeyond: one count-bound sweep of a SQLite store holding
// 1000 keyed creates whose environments are gone, down to a bound of
// 100 (each asks the provider whether its environment lives).
func BenchmarkExpireBeyond(b *testing.B) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "agentrt.db"), sqlite.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	srv, err := sidecar.New(newScripted(b), sidecar.Options{Store: st, RecordRetention: -1, MaxRecords: 100, CreateTimeout: time.Millisecond})
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	digest := "sha256:" + strings.Repeat("0", 64)
	round := 0
	fill := func() {
		round++
		for i := range 1000 {
			key := fmt.Sprintf("r%d-k%d", round, i)
			out, err := canonjson.Decode([]byte(`{"environment":{"id":"gone-` + key + `","provider":"scripted","name":"env"}}`))
			if err != nil {
				b.Fatal(err)
			}
			for _, rec := range []store.Idempotency{
				{Scope: "sidecar.create", Key: key, RequestDigest: digest},
				{Scope: "sidecar.create.attempt", Key: key + "#1", RequestDigest: digest},
				{Scope: "sidecar.create.outcome", Key: key + "#1", RequestDigest: digest, Result: out},
			} {
				if _, _, err := st.ClaimIdempotency(ctx, rec); err != nil {
					b.Fatal(err)
				}
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		fill()
		b.StartTimer()
		if n, err := srv.ExpireBeyond(ctx); err != nil || n < 900 {
			b.Fatalf("ExpireBeyond = %d, %v; want 900 or more deleted", n, err)
		}
	}
}
