package supervise_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/internal/journaltest"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/supervise"
)

// §3.6 resume, behaviour 40: a resumed run's root manager reads, before
// it acts, which of its workers settled (with the outRef and the
// check's word), which are in doubt, what waits for it and where the
// journal stands; a first start reads Resumed false.
func TestReentryStateOfResumedRunBehaviour40(t *testing.T) {
	dir := t.TempDir()
	var first supervise.ReentryState
	o := baseOptions(t, newCounting(t, workerProvider(t)), nil)
	o.RunDir = dir
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		first = c.Reentry()
		for _, a := range []supervise.SpawnArgs{{Profile: "writer", Task: "write alpha", Label: "a", Key: "ka"}, {Profile: "writer", Task: "write beta", Label: "b", Key: "kb"}} {
			if _, err := c.Spawn(ctx, a); err != nil {
				return supervise.BrainReport{}, err
			}
			if _, err := c.Await(ctx, supervise.AwaitArgs{TimeoutMS: 60_000}); err != nil {
				return supervise.BrainReport{}, err
			}
		}
		return supervise.BrainReport{}, nil
	})
	if _, err := supervise.Supervise(context.Background(), managerProfile(t, verbs2...), "ship", o); err != nil {
		t.Fatal(err)
	}
	if first.Resumed || first.PriorRows != 0 || len(first.Settled)+len(first.Live)+len(first.InDoubt) != 0 {
		t.Errorf("first start: %+v, want not resumed and no workers", first)
	}
	journaltest.KeepThrough(t, dir, supervise.KindSpawned, 2) // alpha settled, beta spawned and never settled

	var got supervise.ReentryState
	o = baseOptions(t, newCounting(t, workerProvider(t)), nil)
	o.RunDir, o.Resume = dir, true
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		got = c.Reentry()
		return supervise.BrainReport{}, nil
	})
	if _, err := supervise.Supervise(context.Background(), managerProfile(t, verbs2...), "ship", o); err != nil {
		t.Fatal(err)
	}
	if !got.Resumed || got.PriorRows == 0 || got.JournalRows < got.PriorRows {
		t.Errorf("resumed: %v, journal rows %d prior %d; want resumed with the earlier rows counted", got.Resumed, got.JournalRows, got.PriorRows)
	}
	if len(got.Settled) != 1 || got.Settled[0].OutRef == "" || !strings.HasPrefix(got.Settled[0].OutRef, "sha256:") {
		t.Fatalf("settled %+v, want alpha with its outRef", got.Settled)
	}
	delivered := true
	wantSettled := supervise.ReentryWorker{ID: "run1:s1", Label: "a", Profile: "writer", Key: "ka", State: supervise.StateDone, Delivered: &delivered, OutRef: got.Settled[0].OutRef}
	if diff := cmp.Diff(wantSettled, got.Settled[0]); diff != "" {
		t.Errorf("settled alpha (-want +got):\n%s", diff)
	}
	if len(got.InDoubt) != 1 || got.InDoubt[0].ID != "run1:s2" || got.InDoubt[0].Key != "kb" || got.InDoubt[0].Delivered != nil {
		t.Errorf("in doubt %+v, want beta (run1:s2, key kb) with no delivery known", got.InDoubt)
	}
	if len(got.Live) != 0 || got.WaitingEvents != 1 || got.Submitted {
		t.Errorf("live %v, waiting %d, submitted %v; want none live, alpha's replayed settlement waiting, nothing submitted", got.Live, got.WaitingEvents, got.Submitted)
	}
}

// holdExecutor runs a task saying "hold" until its context ends (the
// run's end cancels it), every other task on inner.
type holdExecutor struct{ inner supervise.Executor }

func (e holdExecutor) Execute(ctx context.Context, w supervise.Work) (supervise.WorkResult, error) {
	if strings.Contains(w.Task, "hold") {
		<-ctx.Done()
		return supervise.WorkResult{}, context.Cause(ctx)
	}
	return e.inner.Execute(ctx, w)
}

// A worker still running is listed live, a settled one that failed its
// check says so with the check's reason; and every list is bounded:
// with more workers than MaxReentryWorkers, the most recent settled
// ones are kept and the rest counted as left out, each text clipped.
func TestReentryStateBoundedAndLive(t *testing.T) {
	const n = supervise.MaxReentryWorkers + 7
	o := baseOptions(t, holdExecutor{newCounting(t, workerProvider(t))}, nil)
	o.Budget.Iterations = i64(n + 5)
	o.Budget.Tokens = i64(1_000_000)
	o.Budget.MicroUSD = nil
	o.PerWorker.MicroUSD = nil
	var got supervise.ReentryState
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		for i := range n {
			task := "write alpha"
			if i == n-1 {
				task = "write beta"
			}
			if _, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "writer", Task: task, Label: strings.Repeat("x", 300) + string(rune('a'+i%26))}); err != nil {
				return supervise.BrainReport{}, err
			}
			if _, err := c.Await(ctx, supervise.AwaitArgs{TimeoutMS: 60_000}); err != nil {
				return supervise.BrainReport{}, err
			}
		}
		if _, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "writer", Task: "hold on", Label: "h", Key: "kh"}); err != nil {
			return supervise.BrainReport{}, err
		}
		got = c.Reentry()
		return supervise.BrainReport{}, nil
	})
	if _, err := supervise.Supervise(context.Background(), managerProfile(t, verbs2...), "ship", o); err != nil {
		t.Fatal(err)
	}
	if got.Resumed {
		t.Error("a first start reads Resumed")
	}
	if len(got.Settled) != supervise.MaxReentryWorkers || got.SettledOmitted != 7 {
		t.Fatalf("settled %d, omitted %d; want %d and 7", len(got.Settled), got.SettledOmitted, supervise.MaxReentryWorkers)
	}
	last := got.Settled[len(got.Settled)-1]
	if last.ID != supervise.ChildID("run1", n) || last.Delivered == nil || *last.Delivered || last.Verdict != "no DONE" {
		t.Errorf("last settled %+v, want the most recent, %s, not delivered: no DONE", last, supervise.ChildID("run1", n))
	}
	if l := got.Settled[0].Label; len(l) > supervise.MaxReentryText+len("…") || !strings.HasSuffix(l, "…") {
		t.Errorf("a 301-byte label is kept as %d bytes %q, want clipped to %d and marked", len(l), l, supervise.MaxReentryText)
	}
	want := []supervise.ReentryWorker{{ID: supervise.ChildID("run1", n+1), Label: "h", Profile: "writer", Key: "kh", State: supervise.StateRunning}}
	if diff := cmp.Diff(want, got.Live); diff != "" {
		t.Errorf("live (-want +got):\n%s", diff)
	}
}

// A nested manager the resumed run drives again re-enters too: its own
// Reentry reads Resumed with its own settled child, while the root's
// lists the nested manager as running — each view its direct children
// only.
func TestReentryStateOfRedrivenNestedManager(t *testing.T) {
	dir := t.TempDir()
	leadBudget := &supervise.SpawnBudget{Tokens: i64(2000), Iterations: i64(10), USD: ptrF(0.5)}
	// The redriven lead returns only once the root read its state, so
	// the root sees it running.
	rootRead := make(chan struct{})
	root := func(seen *supervise.ReentryState) supervise.Brain {
		return supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
			if seen != nil {
				*seen = c.Reentry()
				close(rootRead)
			}
			if _, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "lead", Task: "lead", Label: "lead", Key: "kl", Budget: leadBudget}); err != nil {
				return supervise.BrainReport{}, err
			}
			_, err := c.Await(ctx, supervise.AwaitArgs{TimeoutMS: 60_000})
			return supervise.BrainReport{}, err
		})
	}
	lead := func(seen *supervise.ReentryState) supervise.Brain {
		return supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
			if seen != nil {
				*seen = c.Reentry()
				select {
				case <-rootRead:
				case <-ctx.Done():
				case <-time.After(time.Minute):
					return supervise.BrainReport{}, errors.New("the root never read its state")
				}
				return supervise.BrainReport{}, nil
			}
			for _, k := range []string{"ka", "kb"} {
				if _, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "writer", Task: "write alpha " + k, Label: k, Key: k}); err != nil {
					return supervise.BrainReport{}, err
				}
				if _, err := c.Await(ctx, supervise.AwaitArgs{TimeoutMS: 60_000}); err != nil {
					return supervise.BrainReport{}, err
				}
			}
			return supervise.BrainReport{}, nil
		})
	}
	opts := func(r, l supervise.Brain) supervise.Options {
		o := baseOptions(t, newCounting(t, workerProvider(t)), nil)
		o.Budget.Iterations = i64(20)
		o.Profiles["lead"] = leadProfile(t, leadVerbs...)
		o.Brain, o.ManagerBrain = r, func(*profile.Profile) supervise.Brain { return l }
		o.RunDir = dir
		return o
	}
	if _, err := supervise.Supervise(context.Background(), managerProfile(t, verbs2...), "ship", opts(root(nil), lead(nil))); err != nil {
		t.Fatal(err)
	}
	journaltest.KeepThrough(t, dir, supervise.KindSettled, 1) // the lead's first writer settled; the lead still drove

	var rootSeen, leadSeen supervise.ReentryState
	o := opts(root(&rootSeen), lead(&leadSeen))
	o.Resume = true
	if _, err := supervise.Supervise(context.Background(), managerProfile(t, verbs2...), "ship", o); err != nil {
		t.Fatal(err)
	}
	if !leadSeen.Resumed || len(leadSeen.Settled) != 1 || leadSeen.Settled[0].Key != "ka" || len(leadSeen.Live)+len(leadSeen.InDoubt) != 0 {
		t.Errorf("the redriven lead read %+v, want resumed with its writer ka settled and nothing else", leadSeen)
	}
	if !rootSeen.Resumed || len(rootSeen.Settled) != 0 || len(rootSeen.Live) != 1 || rootSeen.Live[0].ID != "run1:s1" || rootSeen.Live[0].Key != "kl" {
		t.Errorf("the root read %+v, want resumed with its lead run1:s1 (kl) running and nothing settled of its own", rootSeen)
	}
}

func ptrF(v float64) *float64 { return &v }
