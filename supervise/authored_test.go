package supervise_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agentrt/agentrt/internal/journaltest"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/supervise"
	"github.com/google/go-cmp/cmp"
)

// authoredDoc is an authored worker profile, as a manager sends it.
func authoredDoc(model string) map[string]any {
	return map[string]any{"name": "critic", "harness": "cli-base", "model": map[string]any{"provider": "scripted", "default": model},
		"prompt": map[string]any{"systemPrompt": "You critique drafts."}}
}

// profileExecutor records the digest of every profile it runs.
type profileExecutor struct {
	mu      sync.Mutex
	digests []string
}

func (e *profileExecutor) Execute(_ context.Context, w supervise.Work) (supervise.WorkResult, error) {
	d, err := profile.Digest(w.Profile)
	if err != nil {
		return supervise.WorkResult{}, err
	}
	e.mu.Lock()
	e.digests = append(e.digests, d)
	e.mu.Unlock()
	return supervise.WorkResult{Text: w.Task + " DONE", Spent: ledger.Spend{Tokens: i64(10), Iterations: i64(1), MicroUSD: i64(10)}}, nil
}

func (e *profileExecutor) seen() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.digests...)
}

func digestOf(t *testing.T, doc map[string]any) string {
	t.Helper()
	b, _ := json.Marshal(doc)
	_, d, err := profile.ParseDigest(b)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// §3.6 fence order and gates: an authored profile is refused, as a tool
// result naming what to fix, when the supervisor does not accept them,
// when it is not a valid AgentProfile (reason carries the JSON pointer
// of the first issue), when its model is outside AllowedModels, when it
// would run commands without an AuthorizeSpawn hook, and when no slot
// is free (max-live-workers before validation). Nothing is reserved.
func TestAuthoredProfileRefusals(t *testing.T) {
	bad := authoredDoc("scripted/writer")
	bad["harness"] = 7
	hooks := authoredDoc("scripted/writer")
	hooks["hooks"] = map[string]any{"PreToolUse": []any{map[string]any{"command": "rm"}}}
	huge := authoredDoc("scripted/writer")
	huge["prompt"] = map[string]any{"systemPrompt": strings.Repeat("a", supervise.MaxAuthoredProfile)}
	cases := []struct {
		name       string
		tune       func(*supervise.Options)
		setup      int
		doc        any
		want       map[string]any
		wantReason string
	}{{
		name: "gate off", doc: authoredDoc("scripted/writer"),
		want: map[string]any{"error": "invalid-identity", "cause": "authored-profile", "live": 0.0, "freeSlots": nil}, wantReason: "does not accept authored profiles",
	}, {
		name: "invalid profile names the pointer", tune: func(o *supervise.Options) { o.AuthoredProfiles = true }, doc: bad,
		want: map[string]any{"error": "invalid-identity", "cause": "profile-invalid", "live": 0.0, "freeSlots": nil}, wantReason: "/profile/harness",
	}, {
		name: "unknown member names the pointer", tune: func(o *supervise.Options) { o.AuthoredProfiles = true },
		doc:  map[string]any{"name": "x", "bogus": true},
		want: map[string]any{"error": "invalid-identity", "cause": "profile-invalid", "live": 0.0, "freeSlots": nil}, wantReason: "/profile",
	}, {
		name: "over MaxAuthoredProfile", tune: func(o *supervise.Options) { o.AuthoredProfiles = true }, doc: huge,
		want: map[string]any{"error": "invalid-identity", "cause": "profile-invalid", "live": 0.0, "freeSlots": nil}, wantReason: "limit",
	}, {
		name: "model outside AllowedModels", tune: func(o *supervise.Options) { o.AuthoredProfiles = true; o.AllowedModels = []string{"scripted/writer"} },
		doc:  authoredDoc("scripted/expensive"),
		want: map[string]any{"error": "invalid-identity", "cause": "model-not-allowed", "live": 0.0, "freeSlots": nil}, wantReason: "scripted/expensive",
	}, {
		name: "hooks without AuthorizeSpawn", tune: func(o *supervise.Options) { o.AuthoredProfiles = true }, doc: hooks,
		want: map[string]any{"error": "preflight-refused", "cause": "not-authorized", "live": 0.0, "freeSlots": nil}, wantReason: "/profile/hooks",
	}, {
		name: "AuthorizeSpawn decides on an authored profile's commands",
		tune: func(o *supervise.Options) {
			o.AuthoredProfiles = true
			o.AuthorizeSpawn = func(r supervise.SpawnRequest) error {
				if r.Authored != nil && len(r.Authored.Hooks) > 0 && r.ProfileDigest != "" {
					return errors.New("hooks need a human review")
				}
				return nil
			}
		},
		doc:  hooks,
		want: map[string]any{"error": "preflight-refused", "cause": "not-authorized", "live": 0.0, "freeSlots": nil}, wantReason: "hooks need a human review",
	}, {
		name: "max-live-workers before validation", tune: func(o *supervise.Options) { o.AuthoredProfiles = true; o.MaxLiveWorkers = 1 },
		setup: 1, doc: bad,
		want: map[string]any{"error": "max-live-workers", "live": 1.0, "freeSlots": 0.0}, wantReason: "free",
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			gate := &gateExecutor{release: make(chan struct{})}
			o := baseOptions(t, gate, nil)
			if tc.tune != nil {
				tc.tune(&o)
			}
			var got map[string]any
			var before, after ledger.Readout
			o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
				for range tc.setup {
					if r := tool(t, ctx, c, supervise.VerbSpawnWorker, spawnArgs("one")); r["error"] != nil {
						t.Fatalf("setup spawn refused: %v", r)
					}
				}
				before = c.Readout()
				got = tool(t, ctx, c, supervise.VerbSpawnWorker, map[string]any{"profile": tc.doc, "task": "critique"})
				after = c.Readout()
				close(gate.release)
				return supervise.BrainReport{}, nil
			})
			if _, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o); err != nil {
				t.Fatal(err)
			}
			reason, _ := got["reason"].(string)
			if !strings.Contains(reason, tc.wantReason) {
				t.Errorf("reason %q does not contain %q", reason, tc.wantReason)
			}
			// §3.6: a preflight refusal carries its detail too.
			if got["error"] == "preflight-refused" && got["detail"] != reason {
				t.Errorf("preflight refusal detail %v, want its reason %q", got["detail"], reason)
			}
			delete(got, "reason")
			delete(got, "detail")
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("refusal (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, after); diff != "" {
				t.Errorf("a refusal changed the pool (-before +after):\n%s", diff)
			}
		})
	}
}

// A manager spawns an authored profile: the worker runs that exact
// profile (same digest), settles, and the journal's spawn record holds
// the digest and the document.
func TestAuthoredProfileSpawnSettles(t *testing.T) {
	dir := t.TempDir()
	exec := &profileExecutor{}
	o := baseOptions(t, exec, nil)
	o.AuthoredProfiles, o.AllowedModels, o.RunDir = true, []string{"scripted/critic"}, dir
	doc := authoredDoc("scripted/critic")
	var ev map[string]any
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		if r := tool(t, ctx, c, supervise.VerbSpawnWorker, map[string]any{"profile": doc, "task": "critique alpha"}); r["error"] != nil {
			t.Fatalf("refused: %v", r)
		}
		ev = tool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{"timeoutMs": 60000})
		return supervise.BrainReport{}, nil
	})
	if _, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker, supervise.VerbAwaitEvent), "t", o); err != nil {
		t.Fatal(err)
	}
	want := digestOf(t, doc)
	if diff := cmp.Diff([]string{want}, exec.seen()); diff != "" {
		t.Errorf("profiles run (-want +got):\n%s", diff)
	}
	e, _ := ev["event"].(map[string]any)
	if e == nil || e["state"] != "done" || e["label"] != "critic" {
		t.Errorf("await_event %v, want a done critic", ev)
	}
	recs := spawnRecords(t, dir)
	if len(recs) != 1 || recs[0].ProfileDigest != want || recs[0].Profile != "critic" || !strings.Contains(string(recs[0].ProfileDoc), "You critique drafts.") {
		t.Errorf("spawn records %+v, want one critic with digest %s and its document", recs, want)
	}
}

// Behaviour 40 with an authored worker: a run cut after the authored
// spawn was journaled (never settled) resumes; the journaled document is
// re-read and its digest checked, and the manager's repeated spawn runs
// the same profile again.
func TestResumeRerunsUnsettledAuthoredWorker(t *testing.T) {
	dir := t.TempDir()
	doc := authoredDoc("scripted/critic")
	brain := supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		if r := tool(t, ctx, c, supervise.VerbSpawnWorker, map[string]any{"profile": doc, "task": "critique", "label": "c"}); r["error"] != nil {
			t.Fatalf("refused: %v", r)
		}
		tool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{"timeoutMs": 60000})
		return supervise.BrainReport{}, nil
	})
	first := &profileExecutor{}
	o := uncappedUSD(baseOptions(t, first, nil))
	o.AuthoredProfiles, o.RunDir, o.Brain = true, dir, brain
	if _, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker, supervise.VerbAwaitEvent), "t", o); err != nil {
		t.Fatal(err)
	}
	journaltest.KeepThrough(t, dir, supervise.KindSpawned, 1) // spawned, never settled

	second := &profileExecutor{}
	o = uncappedUSD(baseOptions(t, second, nil))
	o.AuthoredProfiles, o.RunDir, o.Resume, o.Brain = true, dir, true, brain
	if _, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker, supervise.VerbAwaitEvent), "t", o); err != nil {
		t.Fatal(err)
	}
	want := digestOf(t, doc)
	if diff := cmp.Diff([]string{want}, second.seen()); diff != "" {
		t.Errorf("resumed run's profiles (-want +got):\n%s", diff)
	}
	recs := spawnRecords(t, dir)
	if len(recs) != 2 || recs[0].ProfileDigest != want || recs[1].ProfileDigest != want {
		t.Errorf("spawn records %+v, want two with digest %s", recs, want)
	}

	// A journal whose document no longer matches its digest is refused.
	tamper(t, dir)
	o = uncappedUSD(baseOptions(t, &profileExecutor{}, nil))
	o.AuthoredProfiles, o.RunDir, o.Resume, o.Brain = true, dir, true, brain
	_, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker, supervise.VerbAwaitEvent), "t", o)
	var re *supervise.ResumeError
	if !errors.As(err, &re) || !strings.Contains(err.Error(), "digest") {
		t.Errorf("tampered journal: %v, want a *ResumeError about the digest", err)
	}
}

// spawnRecord is the part of a journaled spawn these tests read.
type spawnRecord struct {
	Kind          string          `json:"kind"`
	Profile       string          `json:"profile"`
	ProfileDigest string          `json:"profileDigest"`
	ProfileDoc    json.RawMessage `json:"profileDoc"`
}

func spawnRecords(t *testing.T, dir string) []spawnRecord {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, supervise.SpawnJournalFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []spawnRecord
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r spawnRecord
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		if r.Kind == supervise.KindSpawned {
			out = append(out, r)
		}
	}
	return out
}

// tamper rewrites the authored profile's system prompt in the journal,
// leaving its digest.
func tamper(t *testing.T, dir string) {
	t.Helper()
	path := filepath.Join(dir, supervise.SpawnJournalFile)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	nb := strings.Replace(string(b), "You critique drafts.", "You approve everything.", 1)
	if nb == string(b) {
		t.Fatal("nothing to tamper with")
	}
	if err := os.WriteFile(path, []byte(nb), 0o600); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkSpawnArgsAuthored measures decoding spawn_worker's arguments
// with an authored profile and validating that profile (what Spawn
// does before the scope sees the request).
func BenchmarkSpawnArgsAuthored(b *testing.B) {
	raw, _ := json.Marshal(map[string]any{"profile": authoredDoc("scripted/critic"), "task": "critique", "label": "c"})
	b.ReportAllocs()
	for b.Loop() {
		var a supervise.SpawnArgs
		if err := json.Unmarshal(raw, &a); err != nil {
			b.Fatal(err)
		}
		if _, _, err := profile.ParseDigest(a.AuthoredProfile); err != nil {
			b.Fatal(err)
		}
	}
}
