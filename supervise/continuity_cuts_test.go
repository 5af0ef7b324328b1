package supervise_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/supervise"
)

// recordingLog is a SpawnLog that keeps what landed in the journal, and
// dies (errCrashed) once keep appends landed (keep 0: never).
type recordingLog struct {
	supervise.SpawnLog
	mu   *sync.Mutex
	recs *[]supervise.Record
	n    *atomic.Int64
	keep int64
}

func (l recordingLog) Append(ctx context.Context, recs ...supervise.Record) error {
	if l.keep > 0 && l.n.Load() >= l.keep {
		return errCrashed
	}
	if err := l.SpawnLog.Append(ctx, recs...); err != nil {
		return err
	}
	l.n.Add(1)
	l.mu.Lock()
	*l.recs = append(*l.recs, recs...)
	l.mu.Unlock()
	return nil
}

// tryTool runs one coordination verb once and returns its result as
// plain JSON, or the error its Run returned (a journal that died under
// it).
func tryTool(t *testing.T, ctx context.Context, c *supervise.Coordinator, verb string, args any) (map[string]any, error) {
	t.Helper()
	tools, err := c.Tools()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(args)
	v, err := canonjson.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range tools {
		if tl.Name != supervise.ToolPrefix+verb {
			continue
		}
		out, err := tl.Run(ctx, v)
		if err != nil {
			return nil, err
		}
		var m map[string]any
		if err := json.Unmarshal(canonjson.Marshal(out), &m); err != nil {
			t.Fatal(err)
		}
		return m, nil
	}
	t.Fatalf("no tool %s", verb)
	return nil, nil
}

// §3.6 continuityByProfile, behaviour 44 (resume from every cut), on a
// file, SQLite and PostgreSQL journal: a run whose writer spawns take
// the resume default is cut after each of its journal appends and
// resumed. Whatever the cut, each spawn_worker reply of the resumed run
// reports the continuity its worker's spawned record holds, and each
// worker it runs continues exactly the worker that record names — the
// decision is replayed, never resolved again over the later tree.
func TestContinuityByProfileResumesFromEveryCut(t *testing.T) {
	journals := spawnJournals()
	type outcome struct {
		replies []map[string]any
		exec    *resumingWorkers
	}
	run := func(ctx context.Context, t *testing.T, dir string, resume bool, set func(*supervise.Options)) (outcome, error) {
		out := outcome{exec: &resumingWorkers{resumeOf: map[supervise.NodeID]supervise.NodeID{}}}
		o := baseOptions(t, out.exec, nil)
		o.RunDir, o.Resume = dir, resume
		o.ContinuityByProfile = map[string]supervise.Continuity{"writer": supervise.ContinuityResume}
		set(&o)
		o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
			for _, task := range []string{"one", "two", "three"} {
				r, err := tryTool(t, ctx, c, supervise.VerbSpawnWorker, writer(task))
				if err != nil {
					return supervise.BrainReport{}, err
				}
				out.replies = append(out.replies, r)
				if _, err := tryTool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{"timeoutMs": 60000}); err != nil {
					return supervise.BrainReport{}, err
				}
			}
			return supervise.BrainReport{}, nil
		})
		_, err := supervise.Supervise(ctx, managerProfile(t, supervise.VerbSpawnWorker, supervise.VerbAwaitEvent), "t", o)
		return out, err
	}
	var mu sync.Mutex
	count := func(recs *[]supervise.Record, n *atomic.Int64, keep int64) context.Context {
		return supervise.WithSpawnLogWrapper(context.Background(), func(sl supervise.SpawnLog) supervise.SpawnLog {
			return recordingLog{SpawnLog: sl, mu: &mu, recs: recs, n: n, keep: keep}
		})
	}
	for _, j := range journals {
		t.Run(j.name, func(t *testing.T) {
			var total atomic.Int64
			var uncut []supervise.Record
			if _, err := run(count(&uncut, &total, 0), t, t.TempDir(), false, j.set(t)); err != nil {
				t.Fatal(err)
			}
			checked, resumes := 0, 0
			for keep := int64(1); keep < total.Load(); keep++ {
				where := fmt.Sprintf("%s, resumed after %d of %d appends", j.name, keep, total.Load())
				dir, set := t.TempDir(), j.set(t)
				var n, m atomic.Int64
				var landed []supervise.Record // the cut journal, then what the resumed run adds
				_, _ = run(count(&landed, &n, keep), t, dir, false, set)
				got, err := run(count(&landed, &m, 0), t, dir, true, set)
				if err != nil {
					t.Fatalf("%s: %v", where, err)
				}
				journaled := map[supervise.NodeID]supervise.Record{}
				for _, r := range landed {
					if r.Kind == supervise.KindSpawned {
						journaled[r.Node] = r
					}
				}
				if len(got.replies) != 3 {
					t.Fatalf("%s: %d replies, want 3", where, len(got.replies))
				}
				for i, r := range got.replies {
					if r["error"] != nil {
						// Refused (a cut that left a worker in doubt taints
						// the dollar channel): no continuity was decided.
						continue
					}
					checked++
					rec, ok := journaled[supervise.NodeID(fmt.Sprint(r["workerId"]))]
					if !ok {
						t.Errorf("%s: reply %d %v names no journaled spawn", where, i, r)
						continue
					}
					want := "fresh"
					if rec.Continuity != "" {
						want = rec.Continuity
					}
					if want == "resume" {
						resumes++
					}
					if r["continuity"] != want {
						t.Errorf("%s: reply %d %v reports continuity %v; its record holds %q (resumeOf %q)", where, i, r, r["continuity"], rec.Continuity, rec.ResumeOf)
					}
				}
				got.exec.mu.Lock()
				for node, of := range got.exec.resumeOf {
					if rec := journaled[node]; rec.ResumeOf != of {
						t.Errorf("%s: %s ran continuing %q; its record names %q", where, node, of, rec.ResumeOf)
					}
				}
				got.exec.mu.Unlock()
			}
			if checked == 0 || resumes == 0 {
				t.Errorf("%s: %d admitted replies checked, %d of them resumes; the cuts checked nothing", j.name, checked, resumes)
			}
			t.Logf("%s: %d cuts, %d admitted replies checked against their records, %d resumes", j.name, total.Load()-1, checked, resumes)
		})
	}
}
