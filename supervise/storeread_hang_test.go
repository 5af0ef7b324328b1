package supervise_test

import (
	"context"
	"testing"
	"time"

	"github.com/agentrt/agentrt/internal/storefault"
	"github.com/agentrt/agentrt/supervise"
)

// Reading a SQL spawn journal without its lease (ReadRunStarted, what a
// --resume checks first, and ReadStoreSpawnLog, what progress and a
// graph's restore page through) fails in bounded time when the store
// stops answering, even for a caller that set no deadline: a read is
// bounded as the journal's open and appends are.
func TestReadStoreSpawnLogWhenStoreHangs(t *testing.T) {
	// kernel.DefaultLeaseTTL, and slack for a loaded machine.
	const bound = 15*time.Second + 20*time.Second
	for _, sk := range storefault.Stores(storefault.BlackHole) {
		t.Run(string(sk.Fault), func(t *testing.T) {
			st, fail, restore := sk.Open(t)
			l, err := supervise.OpenStoreSpawnLog(t.Context(), st, "run-read", supervise.StoreSpawnLogOptions{LeaseTTL: 2 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			if err := l.Append(t.Context(), supervise.Record{Kind: supervise.KindRunStarted, RunID: "run-read", Task: "t"}); err != nil {
				t.Fatal(err)
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			if rec, err := supervise.ReadRunStarted(t.Context(), supervise.Options{SpawnStore: st, RunID: "run-read"}); err != nil || rec.Task != "t" {
				t.Fatalf("before the fault: %+v, %v", rec, err)
			}
			fail()
			defer restore()
			for _, read := range []struct {
				name string
				fn   func() error
			}{
				{"ReadRunStarted", func() error {
					_, err := supervise.ReadRunStarted(context.Background(), supervise.Options{SpawnStore: st, RunID: "run-read"})
					return err
				}},
				{"ReadStoreSpawnLog", func() error {
					_, _, err := supervise.ReadStoreSpawnLog(context.Background(), st, "run-read", "")
					return err
				}},
			} {
				done := make(chan error, 1)
				start := time.Now()
				go func() { done <- read.fn() }()
				select {
				case err := <-done:
					if err == nil {
						t.Fatalf("%s read a store that does not answer", read.name)
					}
					if took := time.Since(start); took > bound {
						t.Errorf("%s failed after %v; want within %v", read.name, took, bound)
					}
				case <-time.After(bound + 15*time.Second):
					t.Fatalf("%s did not return %v after its store stopped answering", read.name, bound+15*time.Second)
				}
			}
		})
	}
}
