package retained_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/retained"
	"github.com/agentrt/agentrt/store/sqlite"
)

// BenchmarkEvents reads a finished run's 1,000 events through the
// handle, whose reading of the provider's stream is bounded by the
// caller's context (a goroutine and a hand-over per event).
func BenchmarkEvents(b *testing.B) {
	const n = 1000
	steps := make([]scripted.Step, n)
	for i := range steps {
		text := "x"
		steps[i] = scripted.Step{Text: &text}
	}
	p := scripted.New(&scripted.Script{Turns: []scripted.Turn{{Repeat: true, Steps: steps}}}, scripted.Options{})
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "agentrt.db"), sqlite.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	run, err := retained.StartRetainedRun(ctx, startOptions(p, st, "key-bench", "turn-1", (&recorder{}).hook))
	if err != nil {
		b.Fatal(err)
	}
	if _, err := run.Result(ctx); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		got := 0
		for _, err := range run.Events(ctx, retained.Cursor{}) {
			if err != nil {
				b.Fatal(err)
			}
			got++
		}
		if got < n {
			b.Fatalf("%d events; want at least %d", got, n)
		}
	}
}
