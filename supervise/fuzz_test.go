package supervise_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/supervise"
)

// FuzzResumeJournal: whatever a run dir's journal holds, resuming it
// returns a result or a typed error and never panics.
func FuzzResumeJournal(f *testing.F) {
	f.Add([]byte(`{"kind":"run-started","runId":"run1","startedAtMs":1,"task":"t"}` + "\n"))
	f.Add([]byte(`{"kind":"run-started","runId":"run1","startedAtMs":1}` + "\n" +
		`{"kind":"spawned","node":"run1:s1","profile":"writer","task":"x","reserved":{"tokens":1000,"iterations":1,"microUsd":100000}}` + "\n" +
		`{"kind":"settled","node":"run1:s1","state":"done","spent":{"tokens":5,"iterations":1},"outRef":"sha256:00","delivered":true}` + "\n"))
	f.Add([]byte(`{"kind":"settled","node":"run1:s9","state":"bogus"}` + "\n"))
	f.Add([]byte(`{"kind":"spawned","node":"x","reserved":{"tokens":-1}}` + "\n{\"kind\":"))
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, supervise.SpawnJournalFile), data, 0o600); err != nil {
			t.Fatal(err)
		}
		gate := &gateExecutor{release: make(chan struct{})}
		close(gate.release)
		o := baseOptions(t, gate, nil)
		o.RunDir, o.Resume, o.RunID = dir, true, ""
		o.Brain = supervise.BrainFunc(func(context.Context, *supervise.Coordinator, string) (supervise.BrainReport, error) {
			return supervise.BrainReport{}, nil
		})
		res, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o)
		if err == nil && res.Status == "" {
			t.Fatal("no error and no status")
		}
	})
}

// FuzzSpawnWorkerArguments: any arguments given to spawn_worker are
// admitted, refused as a result, or refused as invalid arguments —
// never a panic, and the pool stays conserved.
func FuzzSpawnWorkerArguments(f *testing.F) {
	for _, s := range []string{`{"profile":"writer","task":"x"}`, `{"profile":"writer","task":"x","budget":{"usd":1e300}}`,
		`{"profile":"writer","task":"x","budget":{"tokens":-5}}`, `{"profile":"writer","task":"x","parent":"run1:s7"}`,
		`{"profile":"writer","task":"x","continuity":"resume"}`, `{"profile":"writer","task":"x","key":"k\u0000"}`, `{"task":1}`, `[]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		args, err := canonjson.Decode(data)
		if err != nil {
			return
		}
		gate := &gateExecutor{release: make(chan struct{})}
		close(gate.release)
		o := baseOptions(t, gate, nil)
		o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
			tools, err := c.Tools()
			if err != nil {
				return supervise.BrainReport{}, err
			}
			for _, tl := range tools {
				if tl.Name == supervise.ToolPrefix+supervise.VerbSpawnWorker {
					_, _ = tl.Run(ctx, args)
				}
			}
			return supervise.BrainReport{}, nil
		})
		res, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o)
		if err != nil {
			t.Fatal(err)
		}
		if res.Spent.Tokens < 0 || res.Spent.Tokens > 10_000 {
			t.Fatalf("spent %d tokens of a 10000 pool", res.Spent.Tokens)
		}
	})
}
