package supervise_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/memory"
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
	f.Add([]byte(`{"kind":"run-started","runId":"run1","startedAtMs":1}` + "\n" + `{"kind":"metered","node":"run1","spent":{"tokens":-7,"iterations":0}}` + "\n"))
	f.Add([]byte(`{"kind":"run-started","runId":"run1","startedAtMs":1}` + "\n" + `{"kind":"metered","spent":{"microUsd":9223372036854775807}}` + "\n"))
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
	for _, s := range []string{`{"profile":"writer","task":"x"}`, `{"profile":"writer","task":"x","budget":{"maxUsd":1e300}}`,
		`{"profile":"writer","task":"x","budget":{"maxTokens":-5}}`, `{"profile":"writer","task":"x","parent":"run1:s7"}`,
		`{"profile":"writer","task":"x","continuity":"resume"}`, `{"profile":"writer","task":"x","key":"k\u0000"}`, `{"task":1}`, `[]`,
		`{"profile":{"name":"critic","model":{"default":"scripted/writer"}},"task":"x"}`, `{"profile":{"harness":7},"task":"x"}`,
		`{"profile":{"name":"c","hooks":{"PreToolUse":[{"command":"rm"}]}},"task":"x"}`, `{"profile":{},"task":"x","key":"k"}`,
		`{"profile":null,"task":"x"}`, `{"profile":[1],"task":"x"}`} {
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
		o.AuthoredProfiles = len(data)%2 == 0 // both sides of the gate
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

// FuzzResumeStoreJournal: whatever events a store spawn journal holds
// (one canonical JSON body per line of data), resuming it from the
// store returns a result or a typed error and never panics.
func FuzzResumeStoreJournal(f *testing.F) {
	f.Add([]byte(`{"kind":"run-started","runId":"run1","startedAtMs":1,"task":"t"}`))
	f.Add([]byte(`{"kind":"run-started","runId":"run1","startedAtMs":1}` + "\n" +
		`{"kind":"spawned","node":"run1:s1","profile":"writer","task":"x","reserved":{"tokens":1000,"iterations":1,"microUsd":100000}}` + "\n" +
		`{"kind":"metered","node":"run1","spent":{"tokens":3,"iterations":0}}`))
	f.Add([]byte(`{"kind":"run-started","runId":"other","startedAtMs":1}`))
	f.Add([]byte(`{"kind":7}` + "\n" + `[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		ctx := context.Background()
		st := memory.New(nil)
		var evs []store.NewEvent
		for i, line := range bytes.Split(data, []byte("\n")) {
			v, err := canonjson.Decode(line)
			if err != nil {
				continue
			}
			evs = append(evs, store.NewEvent{ID: fmt.Sprint("e", i), Type: "fuzz", Time: time.Unix(1, 0), Body: v})
		}
		run, err := st.CreateRun(ctx, store.Run{ID: "run1", Kind: supervise.SpawnLogRunKind, Status: store.StatusRunning})
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) > 0 {
			if _, err := st.AppendEvents(ctx, run.Fence(), evs); err != nil {
				return // the store refused them: nothing to resume
			}
		}
		gate := &gateExecutor{release: make(chan struct{})}
		close(gate.release)
		o := baseOptions(t, gate, nil)
		o.SpawnStore, o.Resume = st, true
		o.Brain = supervise.BrainFunc(func(context.Context, *supervise.Coordinator, string) (supervise.BrainReport, error) {
			return supervise.BrainReport{}, nil
		})
		res, err := supervise.Supervise(ctx, managerProfile(t, supervise.VerbSpawnWorker), "t", o)
		if err == nil && res.Status == "" {
			t.Fatal("no error and no status")
		}
	})
}

// FuzzReadInbox: whatever a worker's inbox projection holds, ReadInbox
// returns the records that decode and counts the rest, never panicking.
func FuzzReadInbox(f *testing.F) {
	f.Add([]byte(`{"atMs":1,"kind":"posted","message":"focus","seq":1}` + "\n" + `{"atMs":2,"kind":"taken","seq":1}` + "\n"))
	f.Add([]byte(`{"kind":"posted","seq":"x"}` + "\n" + `not json` + "\n" + `{"kind":"dropped","seq":2,"atMs":3,"reason":"r"}`))
	f.Add([]byte{0xff, '\n', '{'})
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		path := supervise.InboxPath(dir, "run1:s1")
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		recs, skipped, err := supervise.ReadInbox(context.Background(), dir, "run1:s1")
		if err != nil {
			t.Fatal(err)
		}
		if lines := bytes.Count(data, []byte("\n")); len(recs)+skipped > lines {
			t.Fatalf("%d records and %d skipped from %d complete lines", len(recs), skipped, lines)
		}
	})
}
