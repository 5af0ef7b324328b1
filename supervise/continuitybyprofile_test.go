package supervise_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/supervise"
)

// resumingWorkers re-attach to sessions (ResumesSessions) and record,
// by node, which settled worker each execution continues. A worker
// whose task says "hold" runs until its context ends; any other
// settles at once.
type resumingWorkers struct {
	mu       sync.Mutex
	resumeOf map[supervise.NodeID]supervise.NodeID
}

func (*resumingWorkers) ResumesSessions() bool { return true }

func (r *resumingWorkers) Execute(ctx context.Context, w supervise.Work) (supervise.WorkResult, error) {
	r.mu.Lock()
	r.resumeOf[w.Node] = w.ResumeOf
	r.mu.Unlock()
	spent := ledger.Spend{Tokens: i64(10), Iterations: i64(1), MicroUSD: i64(10)}
	if strings.Contains(w.Task, "hold") {
		<-ctx.Done()
		return supervise.WorkResult{Spent: spent}, context.Cause(ctx)
	}
	return supervise.WorkResult{Text: w.Task + " DONE", Spent: spent}, nil
}

// spawnStep is one spawn_worker call, awaited (await_event) when await.
type spawnStep struct {
	args  map[string]any
	await bool
}

func writer(task string, more ...any) map[string]any {
	a := map[string]any{"profile": "writer", "task": task}
	for i := 0; i+1 < len(more); i += 2 {
		a[more[i].(string)] = more[i+1]
	}
	return a
}

// spawnReply is what a table row checks of a spawn_worker reply.
func spawnReply(r map[string]any) map[string]any {
	out := map[string]any{}
	for _, k := range []string{"workerId", "continuity", "error"} {
		if v, ok := r[k]; ok {
			out[k] = v
		}
	}
	return out
}

// §3.6 continuityByProfile: a spawn_worker call that names no continuity
// takes its profile's default; a call's own continuity overrides it
// either way. A defaulted resume with nothing of its label to resume
// spawns fresh (the reference's resolveContinuity: "the DECLARED default
// degrades to 'fresh'"), so the profile's first spawn is an ordinary
// one; otherwise it refuses as an explicit resume does (while live,
// with a key), and an explicit resume with no prior still refuses.
func TestContinuityByProfileDefaultsSpawnWorker(t *testing.T) {
	resume := map[string]supervise.Continuity{"writer": supervise.ContinuityResume}
	fresh, resumed := "fresh", "resume"
	for _, tc := range []struct {
		name         string
		byProfile    map[string]supervise.Continuity
		steps        []spawnStep
		want         []map[string]any
		wantResumeOf map[supervise.NodeID]supervise.NodeID
	}{
		{"first spawn fresh, each later one resumes the latest", resume,
			[]spawnStep{{writer("one"), true}, {writer("two"), true}, {writer("three"), true}},
			[]map[string]any{{"workerId": "run1:s1", "continuity": fresh}, {"workerId": "run1:s2", "continuity": resumed}, {"workerId": "run1:s3", "continuity": resumed}},
			map[supervise.NodeID]supervise.NodeID{"run1:s1": "", "run1:s2": "run1:s1", "run1:s3": "run1:s2"}},
		{"an explicit fresh overrides the default", resume,
			[]spawnStep{{writer("one"), true}, {writer("two", "continuity", "fresh"), true}},
			[]map[string]any{{"workerId": "run1:s1", "continuity": fresh}, {"workerId": "run1:s2", "continuity": fresh}},
			map[supervise.NodeID]supervise.NodeID{"run1:s1": "", "run1:s2": ""}},
		{"an explicit resume with nothing to resume still refuses", resume,
			[]spawnStep{{writer("one", "continuity", "resume"), false}},
			[]map[string]any{{"error": "resume-no-prior"}},
			map[supervise.NodeID]supervise.NodeID{}},
		{"a defaulted resume while its label is live refuses", resume,
			[]spawnStep{{writer("hold"), false}, {writer("two"), false}, {writer("three", "continuity", "fresh"), false}},
			[]map[string]any{{"workerId": "run1:s1", "continuity": fresh}, {"error": "resume-while-live"}, {"workerId": "run1:s2", "continuity": fresh}},
			map[supervise.NodeID]supervise.NodeID{"run1:s1": "", "run1:s2": ""}},
		{"a keyed spawn under a resume default refuses, first or not", resume,
			[]spawnStep{{writer("one", "key", "k1"), false}, {writer("two", "key", "k2", "continuity", "fresh"), false}},
			[]map[string]any{{"error": "resume-with-key"}, {"workerId": "run1:s1", "continuity": fresh}},
			map[supervise.NodeID]supervise.NodeID{"run1:s1": ""}},
		{"the default resumes by label", resume,
			[]spawnStep{{writer("one", "label", "a"), true}, {writer("two", "label", "b"), true}, {writer("three", "label", "a"), true}},
			[]map[string]any{{"workerId": "run1:s1", "continuity": fresh}, {"workerId": "run1:s2", "continuity": fresh}, {"workerId": "run1:s3", "continuity": resumed}},
			map[supervise.NodeID]supervise.NodeID{"run1:s1": "", "run1:s2": "", "run1:s3": "run1:s1"}},
		{"a profile the option does not name spawns fresh", map[string]supervise.Continuity{"critic": supervise.ContinuityResume},
			[]spawnStep{{writer("one"), true}, {writer("two"), true}},
			[]map[string]any{{"workerId": "run1:s1", "continuity": fresh}, {"workerId": "run1:s2", "continuity": fresh}},
			map[supervise.NodeID]supervise.NodeID{"run1:s1": "", "run1:s2": ""}},
		{"a fresh default is the status quo", map[string]supervise.Continuity{"writer": "fresh"},
			[]spawnStep{{writer("one"), true}, {writer("two"), true}, {writer("three", "continuity", "resume"), true}},
			[]map[string]any{{"workerId": "run1:s1", "continuity": fresh}, {"workerId": "run1:s2", "continuity": fresh}, {"workerId": "run1:s3", "continuity": resumed}},
			map[supervise.NodeID]supervise.NodeID{"run1:s1": "", "run1:s2": "", "run1:s3": "run1:s2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			exec := &resumingWorkers{resumeOf: map[supervise.NodeID]supervise.NodeID{}}
			o := baseOptions(t, exec, nil)
			o.ContinuityByProfile = tc.byProfile
			o.SettleGrace = 10 * time.Second
			var got []map[string]any
			o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
				for _, s := range tc.steps {
					got = append(got, spawnReply(tool(t, ctx, c, supervise.VerbSpawnWorker, s.args)))
					if s.await {
						tool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{"timeoutMs": 60000})
					}
				}
				return supervise.BrainReport{}, nil
			})
			if _, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker, supervise.VerbAwaitEvent), "t", o); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("spawn_worker replies (-want +got):\n%s", diff)
			}
			exec.mu.Lock()
			defer exec.mu.Unlock()
			if diff := cmp.Diff(tc.wantResumeOf, exec.resumeOf); diff != "" {
				t.Errorf("Work.ResumeOf by node (-want +got):\n%s", diff)
			}
		})
	}
}

// §3.6 continuityByProfile across a restart (behaviour 46, resume): the
// continuity a defaulted spawn resolved to is journaled with its spawn
// (continuity, resumeOf), so a process resuming the run at a journal
// cut replays the decision — the replayed first call reports fresh
// though its label now has a settled worker — and resolves the calls
// past the cut over the replayed tree as the first process would have.
func TestContinuityByProfileResumeAtAJournalCut(t *testing.T) {
	for _, tc := range []struct {
		name string
		// keep is how many spawned records the cut keeps (each with its
		// settlement); the rest of the journal is lost.
		keep int
	}{
		{"cut after the first spawn's settlement", 1},
		{"cut after the defaulted resume's settlement", 2},
		{"cut after the run's end (crash before the finished record)", 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			calls := func(ctx context.Context, c *supervise.Coordinator) []map[string]any {
				var out []map[string]any
				for _, task := range []string{"one", "two", "three"} {
					out = append(out, spawnReply(tool(t, ctx, c, supervise.VerbSpawnWorker, writer(task))))
					tool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{"timeoutMs": 60000})
				}
				return out
			}
			run := func(exec *resumingWorkers, resume bool) []map[string]any {
				o := baseOptions(t, exec, nil)
				o.RunDir, o.Resume = dir, resume
				o.ContinuityByProfile = map[string]supervise.Continuity{"writer": supervise.ContinuityResume}
				var got []map[string]any
				o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
					got = calls(ctx, c)
					return supervise.BrainReport{}, nil
				})
				if _, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker, supervise.VerbAwaitEvent), "t", o); err != nil {
					t.Fatal(err)
				}
				return got
			}
			want := []map[string]any{{"workerId": "run1:s1", "continuity": "fresh"}, {"workerId": "run1:s2", "continuity": "resume"},
				{"workerId": "run1:s3", "continuity": "resume"}}
			first := &resumingWorkers{resumeOf: map[supervise.NodeID]supervise.NodeID{}}
			if diff := cmp.Diff(want, run(first, false)); diff != "" {
				t.Fatalf("first process's replies (-want +got):\n%s", diff)
			}
			// The journal holds each spawn's resolved continuity.
			recs, _, err := supervise.ReadRunDir(context.Background(), dir)
			if err != nil {
				t.Fatal(err)
			}
			type spawned struct {
				Node       supervise.NodeID
				Continuity string
				ResumeOf   supervise.NodeID
			}
			var journaled []spawned
			for _, r := range recs {
				if r.Kind == supervise.KindSpawned {
					journaled = append(journaled, spawned{r.Node, r.Continuity, r.ResumeOf})
				}
			}
			wantJournaled := []spawned{{"run1:s1", "", ""}, {"run1:s2", "resume", "run1:s1"}, {"run1:s3", "resume", "run1:s2"}}
			if diff := cmp.Diff(wantJournaled, journaled); diff != "" {
				t.Fatalf("journaled spawns (-want +got):\n%s", diff)
			}

			cutAfterSpawns(t, filepath.Join(dir, supervise.SpawnJournalFile), tc.keep)
			second := &resumingWorkers{resumeOf: map[supervise.NodeID]supervise.NodeID{}}
			if diff := cmp.Diff(want, run(second, true)); diff != "" {
				t.Errorf("resumed process's replies (-want +got):\n%s", diff)
			}
			// Only the spawns past the cut run again, each continuing
			// the worker the first process's would have.
			wantRan := map[supervise.NodeID]supervise.NodeID{}
			for _, n := range []supervise.NodeID{"run1:s1", "run1:s2", "run1:s3"}[tc.keep:] {
				wantRan[n] = first.resumeOf[n]
			}
			if diff := cmp.Diff(wantRan, second.resumeOf); diff != "" {
				t.Errorf("the resumed process ran (node: ResumeOf) (-want +got):\n%s", diff)
			}
		})
	}
}

// cutAfterSpawns rewrites the journal file at path as a process that
// died once keep spawns had settled would have left it: the first keep
// spawned records and everything journaled before the next spawned
// record (or, keeping them all, every line but the finished record).
func cutAfterSpawns(t *testing.T, path string, keep int) {
	t.Helper()
	if keep >= 3 {
		crashBeforeFinish(t, path)
		return
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var kept []string
	spawns := 0
	for _, line := range strings.SplitAfter(string(data), "\n") {
		if strings.Contains(line, `"kind":"`+supervise.KindSpawned+`"`) {
			spawns++
			if spawns > keep {
				break
			}
		}
		kept = append(kept, line)
	}
	if spawns <= keep {
		t.Fatalf("the journal holds %d spawns, the cut keeps %d:\n%s", spawns, keep, data)
	}
	if err := os.WriteFile(path, []byte(strings.Join(kept, "")), 0o600); err != nil {
		t.Fatal(err)
	}
}

// §3.6 stallAfterMs and continuityByProfile reach a nested manager: a
// lead's spawn_worker without a continuity takes its profile's default
// (its second writer resumes its first), and its observe_agent judges a
// held writer by the run's StallAfter.
func TestNestedManagerTakesStallAfterAndContinuityByProfile(t *testing.T) {
	clock := &manualClock{now: time.Date(2026, 12, 4, 9, 0, 0, 0, time.UTC)}
	exec := &resumingWorkers{resumeOf: map[supervise.NodeID]supervise.NodeID{}}
	o := nestedOptions(t, exec, nil, nil)
	o.Now, o.StallAfter = clock.Now, 5*time.Second
	o.ContinuityByProfile = map[string]supervise.Continuity{"writer": supervise.ContinuityResume}
	var replies []map[string]any
	var progress map[string]any
	o.ManagerBrain = func(*profile.Profile) supervise.Brain {
		return goLead(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
			replies = append(replies, spawnReply(tool(t, ctx, c, supervise.VerbSpawnWorker, writer("one"))))
			tool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{"timeoutMs": 60000})
			replies = append(replies, spawnReply(tool(t, ctx, c, supervise.VerbSpawnWorker, writer("hold"))))
			deadline := time.Now().Add(60 * time.Second)
			for {
				exec.mu.Lock()
				_, started := exec.resumeOf["run1:s1:s3"]
				exec.mu.Unlock()
				if started {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("the held writer never started")
				}
				time.Sleep(5 * time.Millisecond)
			}
			clock.Advance(6 * time.Second)
			ob := tool(t, ctx, c, supervise.VerbObserveAgent, map[string]any{"workerId": "run1:s1:s3"})
			progress, _ = ob["progress"].(map[string]any)
			return supervise.BrainReport{Text: "lead DONE"}, nil
		})
	}
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		tool(t, ctx, c, supervise.VerbSpawnWorker, map[string]any{"profile": "lead", "task": "lead", "label": "lead",
			"budget": map[string]any{"maxTokens": 3000, "maxIterations": 5, "maxUsd": 0.5}})
		tool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{"timeoutMs": 60000})
		return supervise.BrainReport{}, nil
	})
	if _, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker, supervise.VerbAwaitEvent), "t", o); err != nil {
		t.Fatal(err)
	}
	wantReplies := []map[string]any{{"workerId": "run1:s1:s2", "continuity": "fresh"}, {"workerId": "run1:s1:s3", "continuity": "resume"}}
	if diff := cmp.Diff(wantReplies, replies); diff != "" {
		t.Errorf("the lead's spawn_worker replies (-want +got):\n%s", diff)
	}
	exec.mu.Lock()
	gotResumeOf := exec.resumeOf["run1:s1:s3"]
	exec.mu.Unlock()
	if gotResumeOf != "run1:s1:s2" {
		t.Errorf("the lead's second writer resumes %q, want run1:s1:s2 (the tree is numbered as one: the lead is s1)", gotResumeOf)
	}
	if progress["stalled"] != true || progress["stallAfterMs"] != float64(5000) {
		t.Errorf("the lead's observe_agent progress %v, want stalled by stallAfterMs 5000", progress)
	}
}
