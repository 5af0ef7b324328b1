package supervise_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/supervise"
)

// stuckDestroy is a real provider whose environments refuse to be
// destroyed: a box the executor cannot confirm it tore down.
type stuckDestroy struct{ contract.Provider }

func (p stuckDestroy) Create(ctx context.Context, in *contract.CreateInput) (contract.Environment, error) {
	env, err := p.Provider.Create(ctx, in)
	if err != nil {
		return nil, err
	}
	return stuckEnv{env}, nil
}

type stuckEnv struct{ contract.Environment }

func (stuckEnv) Destroy(context.Context) error {
	return errors.New("the box did not answer the destroy")
}

// Behaviour 51 and §3.6 "Teardown & retained environments", for a
// settled worker: KernelExecutor's failed destroy of the worker's
// environment leaves the worker's outcome (done, delivered) as it was,
// names it in teardownUnconfirmed {id, label, runtime, status}, journals
// a teardown-unconfirmed record, and keeps its capacity slot charged —
// under MaxLiveWorkers 1 the next spawn is refused max-live-workers. A
// resumed run reads the record back: the slot is held again and the
// worker named again.
func TestKernelWorkerFailedDestroyIsUnconfirmedTeardownBehaviour51(t *testing.T) {
	dir := t.TempDir()
	run := func(resume bool) (supervise.SupervisedResult, map[string]any) {
		t.Helper()
		exec := &supervise.KernelExecutor{Provider: stuckDestroy{workerProvider(t)}, Store: newStore(t)}
		o := baseOptions(t, exec, nil)
		o.RunDir, o.Resume, o.MaxLiveWorkers = dir, resume, 1
		var refused map[string]any
		o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
			tool(t, ctx, c, supervise.VerbSpawnWorker, map[string]any{"profile": "writer", "task": "write alpha", "label": "a"})
			tool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{"kinds": []string{"settled"}, "timeoutMs": 60000})
			refused = tool(t, ctx, c, supervise.VerbSpawnWorker, map[string]any{"profile": "writer", "task": "write beta"})
			return supervise.BrainReport{}, nil
		})
		res, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o)
		if err != nil {
			t.Fatal(err)
		}
		return res, refused
	}
	want := []supervise.UnconfirmedTeardown{{ID: "run1:s1", Label: "a", Runtime: supervise.RuntimeProvider, Status: supervise.StateDone}}
	ignoreDetail := cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".Detail" }, cmp.Ignore())
	for _, resume := range []bool{false, true} {
		res, refused := run(resume)
		if res.Status != supervise.StatusWinner || res.Winner.Node != "run1:s1" {
			t.Errorf("resume %v: the worker's outcome changed: %+v", resume, res)
		}
		if diff := cmp.Diff(want, res.TeardownUnconfirmed, ignoreDetail); diff != "" {
			t.Errorf("resume %v: teardownUnconfirmed (-want +got):\n%s", resume, diff)
		}
		if len(res.TeardownUnconfirmed) == 1 && res.TeardownUnconfirmed[0].Detail == "" {
			t.Errorf("resume %v: no detail says why", resume)
		}
		if refused["error"] != "max-live-workers" || refused["freeSlots"] != 0.0 {
			t.Errorf("resume %v: a spawn while the slot is held: %v", resume, refused)
		}
	}
	// One record from the first run; the resumed run replayed the worker
	// and wrote none.
	if n := countKind(t, dir, supervise.KindTeardownUnconfirmed); n != 1 {
		t.Errorf("%d teardown-unconfirmed records, want 1", n)
	}
}

func countKind(t *testing.T, dir, kind string) int {
	t.Helper()
	n := 0
	for _, k := range kinds(t, dir) {
		if k == kind {
			n++
		}
	}
	return n
}

// A worker still running when the run ended is named with its live
// status and journaled; a journal written before entries had fields
// (bare node ids in the finished record) still resumes to its result.
func TestUnconfirmedTeardownJournaledAndOldJournalsDecode(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	stubborn := supervise.ExecutorFunc(func(ctx context.Context, w supervise.Work) (supervise.WorkResult, error) {
		<-release // ignores ctx
		return supervise.WorkResult{}, ctx.Err()
	})
	dir := t.TempDir()
	o := baseOptions(t, stubborn, nil)
	o.RunDir, o.SettleGrace = dir, 20*time.Millisecond
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		tool(t, ctx, c, supervise.VerbSpawnWorker, map[string]any{"profile": "writer", "task": "one", "label": "stubborn"})
		return supervise.BrainReport{}, nil
	})
	o.Deliverable = supervise.Deliverable{Check: func(context.Context, supervise.Output) (kernel.Verdict, error) { return kernel.Verdict{}, nil }}
	res, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o)
	if err != nil {
		t.Fatal(err)
	}
	want := []supervise.UnconfirmedTeardown{{ID: "run1:s1", Label: "stubborn", Status: supervise.StateRunning, Detail: "still running when the run ended"}}
	if diff := cmp.Diff(want, res.TeardownUnconfirmed); diff != "" {
		t.Errorf("teardownUnconfirmed (-want +got):\n%s", diff)
	}
	if n := countKind(t, dir, supervise.KindTeardownUnconfirmed); n != 1 {
		t.Errorf("%d teardown-unconfirmed records, want 1", n)
	}

	// Rewrite the finished record as an older release wrote it.
	path := filepath.Join(dir, supervise.SpawnJournalFile)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	entries := regexp.MustCompile(`"teardownUnconfirmed":\[\{[^\]]*\}\]`)
	if !entries.Match(data) {
		t.Fatalf("no teardownUnconfirmed entries in the journal:\n%s", data)
	}
	data = entries.ReplaceAll(data, []byte(`"teardownUnconfirmed":["run1:s1"]`))
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	o.Resume, o.ReturnEnded = true, true
	o.Brain = supervise.BrainFunc(func(context.Context, *supervise.Coordinator, string) (supervise.BrainReport, error) {
		t.Error("an ended run drove its brain again")
		return supervise.BrainReport{}, nil
	})
	again, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]supervise.UnconfirmedTeardown{{ID: "run1:s1"}}, again.TeardownUnconfirmed); diff != "" {
		t.Errorf("old journal's teardownUnconfirmed (-want +got):\n%s", diff)
	}
}

// UnconfirmedTeardown decodes from canonical JSON (the journal) and from
// encoding/json alike, in its entry form and in the bare-id form of
// older journals; anything else is an error, never a panic.
func TestUnconfirmedTeardownDecodes(t *testing.T) {
	cases := []struct {
		name, in string
		want     supervise.UnconfirmedTeardown
		bad      bool
	}{
		{"entry", `{"id":"r:s1","label":"a","runtime":"provider","status":"done","detail":"d"}`,
			supervise.UnconfirmedTeardown{ID: "r:s1", Label: "a", Runtime: "provider", Status: supervise.StateDone, Detail: "d"}, false},
		{"bare id", `"r:s2"`, supervise.UnconfirmedTeardown{ID: "r:s2"}, false},
		{"number", `7`, supervise.UnconfirmedTeardown{}, true},
		{"wrong field type", `{"id":3}`, supervise.UnconfirmedTeardown{}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v, err := canonjson.Decode([]byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			var viaCanon, viaJSON supervise.UnconfirmedTeardown
			cerr := canonjson.FromValue(v, &viaCanon)
			jerr := json.Unmarshal([]byte(tc.in), &viaJSON)
			if tc.bad {
				if cerr == nil || jerr == nil {
					t.Errorf("decoded %s: %v %v", tc.in, cerr, jerr)
				}
				return
			}
			if cerr != nil || jerr != nil {
				t.Fatal(cerr, jerr)
			}
			if diff := cmp.Diff(tc.want, viaCanon); diff != "" {
				t.Errorf("canonjson (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.want, viaJSON); diff != "" {
				t.Errorf("encoding/json (-want +got):\n%s", diff)
			}
		})
	}
}

// FuzzUnconfirmedTeardownDecode: journal bytes never panic the entry
// decoder, and what decodes re-encodes to an entry that decodes to the
// same value.
func FuzzUnconfirmedTeardownDecode(f *testing.F) {
	for _, s := range []string{`"r:s1"`, `{"id":"r:s1","status":"running"}`, `[]`, `{"id":"x","label":"` + "\u00e9" + `"}`, `null`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := canonjson.Decode(data)
		if err != nil {
			return
		}
		var u supervise.UnconfirmedTeardown
		if canonjson.FromValue(v, &u) != nil {
			return
		}
		back, err := canonjson.ToValue(u)
		if err != nil {
			t.Fatal(err)
		}
		var again supervise.UnconfirmedTeardown
		if err := canonjson.FromValue(back, &again); err != nil {
			t.Fatalf("re-decoding %v: %v", back, err)
		}
		if !slices.Equal([]supervise.UnconfirmedTeardown{u}, []supervise.UnconfirmedTeardown{again}) {
			t.Fatalf("round trip %+v → %+v", u, again)
		}
	})
}
