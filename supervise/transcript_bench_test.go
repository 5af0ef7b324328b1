package supervise_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/supervise"
)

// BenchmarkRouterTranscript measures a router manager's turn with its
// conversation journaled to the run dir's file journal (KindTranscript):
// turns alternate a spawn of a worker that settles at once and an await
// of it, then the manager answers. ns/turn is the whole turn — the model
// (scripted, no latency), the verb, the spawn's and settlement's records
// and the transcript's — and journal-B/turn the journal's bytes per turn:
// the same at 16 and 128 turns, as each record holds only what its turn
// added.
func BenchmarkRouterTranscript(b *testing.B) {
	for _, turns := range []int{16, 128} {
		b.Run(fmt.Sprintf("turns=%d", turns), func(b *testing.B) {
			writer, err := profile.Parse([]byte(writerProfile))
			if err != nil {
				b.Fatal(err)
			}
			manager, err := profile.Parse([]byte(`{"name": "m", "harness": "cli-base", "model": {"default": "scripted/manager"},
				"tools": {"agent_runtime_coordination_spawn_worker": true, "agent_runtime_coordination_await_event": true}}`))
			if err != nil {
				b.Fatal(err)
			}
			exec := supervise.ExecutorFunc(func(context.Context, supervise.Work) (supervise.WorkResult, error) {
				return supervise.WorkResult{Text: "DONE", Spent: fullSpend(1)}, nil
			})
			var script scripted.ChatScript
			for i := range turns / 2 {
				script.Turns = append(script.Turns,
					turn(call(fmt.Sprintf("s%d", i), supervise.VerbSpawnWorker, map[string]any{"profile": "writer", "task": fmt.Sprintf("write part %d", i)}), managerUsage(100, 10, 0.0001)),
					turn(call(fmt.Sprintf("a%d", i), supervise.VerbAwaitEvent, map[string]any{"timeoutMs": 60000}), managerUsage(100, 10, 0.0001)))
			}
			script.Turns = append(script.Turns, turn(scripted.Text("done"), managerUsage(100, 10, 0.0001)))
			var bytes int64
			runs := 0
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				dir := b.TempDir()
				o := supervise.Options{Budget: ledger.Budget{Tokens: i64(1 << 40), Iterations: i64(1 << 40), MicroUSD: i64(1 << 40)},
					PerWorker: worker, Profiles: map[string]*profile.Profile{"writer": writer}, Deliverable: doneCheck, Executor: exec,
					Router: scripted.NewChatModel(script), RunDir: dir}
				b.StartTimer()
				res, err := supervise.Supervise(context.Background(), manager, "t", o)
				if err != nil || len(res.Tree) != turns/2 {
					b.Fatalf("%v: %d workers, want %d", err, len(res.Tree), turns/2)
				}
				b.StopTimer()
				fi, err := os.Stat(filepath.Join(dir, supervise.SpawnJournalFile))
				if err != nil {
					b.Fatal(err)
				}
				bytes += fi.Size()
				runs++
				b.StartTimer()
			}
			n := float64(runs * (turns + 1))
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/n, "ns/turn")
			b.ReportMetric(float64(bytes)/n, "journal-B/turn")
		})
	}
}
