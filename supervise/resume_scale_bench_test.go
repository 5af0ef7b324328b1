package supervise_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/supervise"
)

// settledJournal is a run dir journal of n workers spawned and settled
// done (undelivered, so no result blob is read back), or, when inDoubt
// is set, n workers bound to an execution and asked to cancel that never
// settled.
func settledJournal(n int, inDoubt bool) []byte {
	var b bytes.Buffer
	b.WriteString(`{"kind":"run-started","runId":"run1","startedAtMs":1,"task":"t"}` + "\n")
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, `{"kind":"spawned","node":"run1:s%d","profile":"writer","task":"x","reserved":{"tokens":1000,"iterations":1,"microUsd":100000}}`+"\n", i)
		if inDoubt {
			fmt.Fprintf(&b, `{"kind":"execution-bound","node":"run1:s%d","execution":"x%d"}`+"\n", i, i)
			fmt.Fprintf(&b, `{"kind":"cancel-requested","node":"run1:s%d"}`+"\n", i)
			continue
		}
		fmt.Fprintf(&b, `{"kind":"settled","node":"run1:s%d","state":"done","spent":{"tokens":5,"iterations":1,"microUsd":50}}`+"\n", i)
	}
	return b.Bytes()
}

// BenchmarkResumeSettled resumes a run dir whose journal holds n settled
// workers (or n workers in doubt, each asked to cancel) and whose brain
// returns at once: the replay's cost, which
// should grow linearly with n (ns/op and B/op are per resume). The
// journal is not fsynced, so the figures are the replay's, not the
// disk's (each worker in doubt journals its failed recovery).
func BenchmarkResumeSettled(b *testing.B) {
	for _, tc := range []struct {
		n       int
		inDoubt bool
	}{{1000, false}, {10000, false}, {1000, true}, {10000, true}} {
		n := tc.n
		name := fmt.Sprintf("settled=%d", n)
		if tc.inDoubt {
			name = fmt.Sprintf("cancelled-in-doubt=%d", n)
		}
		b.Run(name, func(b *testing.B) {
			data := settledJournal(n, tc.inDoubt)
			gate := &gateExecutor{release: make(chan struct{})}
			close(gate.release)
			big := int64(1 << 40)
			writer, err := profile.Parse([]byte(writerProfile))
			if err != nil {
				b.Fatal(err)
			}
			manager, err := profile.Parse([]byte(`{"name": "m", "harness": "cli-base", "tools": {"agent_runtime_coordination_spawn_worker": true}}`))
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				dir := b.TempDir()
				if err := os.WriteFile(filepath.Join(dir, supervise.SpawnJournalFile), data, 0o600); err != nil {
					b.Fatal(err)
				}
				o := supervise.Options{
					Budget:    ledger.Budget{Tokens: &big, Iterations: &big, MicroUSD: &big},
					PerWorker: ledger.Budget{Tokens: i64(1_000), Iterations: i64(1), MicroUSD: i64(100_000)},
					Profiles:  map[string]*profile.Profile{"writer": writer}, Deliverable: doneCheck, Executor: gate,
					RunDir: dir, Resume: true,
				}
				o.Brain = supervise.BrainFunc(func(context.Context, *supervise.Coordinator, string) (supervise.BrainReport, error) {
					return supervise.BrainReport{}, nil
				})
				b.StartTimer()
				res, err := supervise.Supervise(supervise.WithUnsyncedJournal(context.Background()), manager, "t", o)
				if err != nil || len(res.Tree) != n {
					b.Fatalf("%v: %d nodes, want %d", err, len(res.Tree), n)
				}
			}
		})
	}
}
