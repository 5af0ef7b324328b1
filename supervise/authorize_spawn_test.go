package supervise_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/internal/journaltest"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/supervise"
)

// §3.6 authorizeSpawn; a hook is bounded and its panic is its answer,
// not the run's (every wait bounded, never panic): a panicking or hanging
// AuthorizeSpawn refuses the spawn preflight-refused not-authorized, the
// pool untouched, and the scope still admits the next spawn. Before, a
// panic crossed Scope.Spawn into the brain (the run ended driver-failed
// "the brain panicked") and a hook that never answered held the scope's
// lock for ever, so the run never returned even after its context ended.
func TestAuthorizeSpawnPanicOrHangRefusesPreflight(t *testing.T) {
	worker := ledger.Budget{Tokens: i64(10), Iterations: i64(1)}
	root := ledger.Budget{Tokens: i64(100), Iterations: i64(10)}
	req := supervise.SpawnRequest{Profile: "w", Task: "t"}
	for _, tc := range []struct {
		name   string
		hook   func(calls *atomic.Int32) func(supervise.SpawnRequest) error
		detail string
	}{
		{name: "panics", detail: "the authorization hook panicked: boom", hook: func(calls *atomic.Int32) func(supervise.SpawnRequest) error {
			return func(supervise.SpawnRequest) error {
				if calls.Add(1) == 1 {
					panic("boom")
				}
				return nil
			}
		}},
		{name: "hangs", detail: "the authorization hook did not answer within 200ms", hook: func(calls *atomic.Int32) func(supervise.SpawnRequest) error {
			release := make(chan struct{})
			t.Cleanup(func() { close(release) })
			return func(supervise.SpawnRequest) error {
				if calls.Add(1) == 1 {
					<-release
				}
				return nil
			}
		}},
		{name: "refuses", detail: "policy says no", hook: func(calls *atomic.Int32) func(supervise.SpawnRequest) error {
			return func(supervise.SpawnRequest) error {
				if calls.Add(1) == 1 {
					return errors.New("policy says no")
				}
				return nil
			}
		}},
		// An error whose text is empty is still a refusal: before, the
		// empty detail read as "admitted" and the spawn ran.
		{name: "refuses with an empty error", detail: "the authorization hook refused without a reason", hook: func(calls *atomic.Int32) func(supervise.SpawnRequest) error {
			return func(supervise.SpawnRequest) error {
				if calls.Add(1) == 1 {
					return errors.New("")
				}
				return nil
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The hung call's goroutine outlives its bound and runs beside
			// the next call: the count is shared between them.
			var calls atomic.Int32
			f := newFixture(t, root, supervise.ScopeOptions{PerWorker: worker, AuthorizeSpawn: tc.hook(&calls)})
			supervise.SetAuthorizeSpawnTimeout(f.scope, 200*time.Millisecond)
			before := f.pool.Readout()
			start := time.Now()
			_, err := f.scope.Spawn(req)
			if took := time.Since(start); took > 5*time.Second {
				t.Fatalf("Spawn took %s; the hook's bound is 200ms", took)
			}
			var r *supervise.Refusal
			if !errors.As(err, &r) || r.Code != supervise.CodePreflightRefused || r.Cause != "not-authorized" || r.Detail != tc.detail {
				t.Fatalf("Spawn = %v; want preflight-refused not-authorized %q", err, tc.detail)
			}
			if d := cmp.Diff(before, f.pool.Readout()); d != "" {
				t.Errorf("pool changed by a refused spawn (-before +after):\n%s", d)
			}
			if rep := f.spawn(t, req); rep.Node != "root:s1" {
				t.Errorf("next spawn = %s, want root:s1", rep.Node)
			}
		})
	}
}

// §3.6 authorizeSpawn is the product's awaited hook: while it decides
// about one spawn, the run goes on. A worker that settles meanwhile is
// settled and its settlement reaches the manager's await_event before
// the hook answers. Before, the hook ran under the scope's lock and the
// coordinator's spawn lock, so every settlement (and every other verb)
// waited for it, up to DefaultAuthorizeSpawnTimeout (10 s).
func TestAuthorizeSpawnDecidesWhileTheRunGoesOn(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	o := baseOptions(t, supervise.ExecutorFunc(func(ctx context.Context, w supervise.Work) (supervise.WorkResult, error) {
		if w.Task == "alpha" {
			<-entered // alpha settles while the hook decides about beta
		}
		return supervise.WorkResult{Text: "DONE " + w.Task, Spent: fullSpend(1)}, nil
	}), nil)
	o.Deliverable = doneCheck
	o.AuthorizeSpawn = func(r supervise.SpawnRequest) error {
		if r.Task == "beta" {
			close(entered)
			<-release
		}
		return nil
	}
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		if _, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "writer", Task: "alpha"}); err != nil {
			return supervise.BrainReport{}, err
		}
		spawned := make(chan error, 1)
		go func() {
			_, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "writer", Task: "beta"})
			spawned <- err
		}()
		<-entered
		ev, err := c.Await(ctx, supervise.AwaitArgs{TimeoutMS: 5_000, Kinds: []string{supervise.EventSettled}})
		once.Do(func() { close(release) })
		if err != nil || ev.Event == nil {
			return supervise.BrainReport{}, fmt.Errorf("while the hook decided about beta, await_event gave %+v, %v; want alpha's settlement", ev, err)
		}
		if err := <-spawned; err != nil {
			return supervise.BrainReport{}, fmt.Errorf("beta's spawn: %w", err)
		}
		if ev, err := c.Await(ctx, supervise.AwaitArgs{TimeoutMS: 60_000, Kinds: []string{supervise.EventSettled}}); err != nil || ev.Event == nil {
			return supervise.BrainReport{}, fmt.Errorf("beta's settlement: %+v, %v", ev, err)
		}
		return supervise.BrainReport{}, nil
	})
	brainErr := captureBrainError(&o)
	res, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "ship", o)
	if err != nil || res.Error != nil || res.Status != supervise.StatusWinner || len(res.Tree) != 2 {
		t.Fatalf("Supervise = %+v, %v; want a winner over alpha and beta", res, err)
	}
	if err := *brainErr; err != nil {
		t.Fatal(err) // a winner's result hides its brain's failure
	}
}

// While the hook decides, the scope may change: its fences are checked
// again once the hook admitted. A scope aborted meanwhile refuses the
// spawn scope-aborted, a parent settled meanwhile invalid-identity; the
// pool is untouched either way.
func TestAuthorizeSpawnFencesAreCheckedAgainAfterTheHook(t *testing.T) {
	worker := ledger.Budget{Tokens: i64(10), Iterations: i64(1)}
	root := ledger.Budget{Tokens: i64(100), Iterations: i64(10)}
	for _, tc := range []struct {
		name      string
		meanwhile func(f fixture, parent supervise.NodeID)
		want      supervise.Code
	}{
		{"aborted meanwhile", func(f fixture, _ supervise.NodeID) { f.scope.Abort() }, supervise.CodeScopeAborted},
		{"parent settled meanwhile", func(f fixture, parent supervise.NodeID) {
			if _, err := f.scope.Settle(parent, supervise.Result{State: supervise.StateDone, Spent: fullSpend(1)}); err != nil {
				t.Error(err)
			}
		}, supervise.CodeInvalidIdentity},
	} {
		t.Run(tc.name, func(t *testing.T) {
			entered, release := make(chan struct{}), make(chan struct{})
			f := newFixture(t, root, supervise.ScopeOptions{PerWorker: worker, AuthorizeSpawn: func(r supervise.SpawnRequest) error {
				if r.Task == "child" {
					close(entered)
					<-release
				}
				return nil
			}})
			parent := f.spawn(t, supervise.SpawnRequest{Profile: "w", Task: "parent"}).Node
			got := make(chan error, 1)
			go func() {
				_, err := f.scope.Spawn(supervise.SpawnRequest{Parent: parent, Profile: "w", Task: "child"})
				got <- err
			}()
			<-entered
			tc.meanwhile(f, parent)
			after := f.pool.Readout()
			close(release)
			var r *supervise.Refusal
			if err := <-got; !errors.As(err, &r) || r.Code != tc.want {
				t.Fatalf("Spawn = %v; want refused %s", err, tc.want)
			}
			if d := cmp.Diff(after, f.pool.Readout()); d != "" {
				t.Errorf("pool changed by a refused spawn (-before +after):\n%s", d)
			}
		})
	}
}

// Behaviour 46 with §3.6 authorizeSpawn: a resumed run replays the
// spawns its journal holds without asking the hook again (the process
// that journaled them asked it); only the new spawn is asked. Before, a
// replay asked again, and a hook that now refused (a quota, a policy
// changed since) failed the resume ("replaying spawn of run1:s1").
func TestAuthorizeSpawnIsNotAskedForAReplayedSpawnBehaviour46(t *testing.T) {
	// A manager in code spawns alpha, awaits it, spawns beta, awaits it:
	// a resumed one makes the same calls from the start (a scripted
	// router manager would resume from its journaled transcript, whose
	// length at the cut depends on timing).
	brain := supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		for _, task := range []string{"write alpha", "write beta"} {
			if _, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "writer", Task: task}); err != nil {
				return supervise.BrainReport{}, err
			}
			if ev, err := c.Await(ctx, supervise.AwaitArgs{TimeoutMS: 60_000, Kinds: []string{supervise.EventSettled}}); err != nil || ev.Event == nil {
				return supervise.BrainReport{}, fmt.Errorf("await after %q: %+v, %v", task, ev, err)
			}
		}
		return supervise.BrainReport{}, nil
	})
	dir := t.TempDir()
	o := baseOptions(t, newCounting(t, workerProvider(t)), nil)
	o.RunDir, o.Brain = dir, brain
	if _, err := supervise.Supervise(context.Background(), managerProfile(t, verbs2...), "ship", o); err != nil {
		t.Fatal(err)
	}
	journaltest.KeepThrough(t, dir, supervise.KindSettled, 1)

	var asked []string
	second := newCounting(t, workerProvider(t))
	o = baseOptions(t, second, nil)
	o.RunDir, o.Resume, o.Brain = dir, true, brain
	o.AuthorizeSpawn = func(r supervise.SpawnRequest) error {
		asked = append(asked, r.Task)
		if r.Task == "write alpha" {
			return errors.New("alpha's quota is spent")
		}
		return nil
	}
	got, err := supervise.Supervise(context.Background(), managerProfile(t, verbs2...), "ship", o)
	if err != nil || got.Error != nil || got.Status != supervise.StatusWinner || len(got.Tree) != 2 || !got.Tree[0].Replayed {
		t.Fatalf("resumed run = %+v, %v; want a winner with alpha replayed and beta run", got, err)
	}
	if second.count("alpha") != 0 || second.count("beta") != 1 {
		t.Errorf("resumed process executed alpha %d, beta %d times; want 0 and 1", second.count("alpha"), second.count("beta"))
	}
	if d := cmp.Diff([]string{"write beta"}, asked); d != "" {
		t.Errorf("AuthorizeSpawn asked about (-want +got):\n%s", d)
	}
}

// §3.6 authorizeSpawn, §9 run_analyst: an analyst is a spawn, and the
// hook deciding about it holds the run no more than it does a worker's
// spawn_worker. A worker that settles while the hook decides about an
// analyst reaches await_event before the hook answers. Before, run_analyst
// asked the hook with the coordinator's spawn lock held (admitQueued's
// unauthorized path), so the settlement waited for the hook, up to
// DefaultAuthorizeSpawnTimeout (10 s), and await_event answered nothing.
func TestAuthorizeSpawnDecidesAboutAnAnalystWhileTheRunGoesOn(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	o := baseOptions(t, supervise.ExecutorFunc(func(ctx context.Context, w supervise.Work) (supervise.WorkResult, error) {
		if w.Task == "beta" {
			<-entered // beta settles while the hook decides about the analyst
		}
		return supervise.WorkResult{Text: "DONE " + w.Task, Spent: fullSpend(1)}, nil
	}), nil)
	o.AuthorizeSpawn = func(r supervise.SpawnRequest) error {
		if strings.HasPrefix(r.Label, "analyst:") {
			close(entered)
			<-release
		}
		return nil
	}
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		alpha, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "writer", Task: "alpha"})
		if err != nil {
			return supervise.BrainReport{}, err
		}
		if ev, err := c.Await(ctx, supervise.AwaitArgs{TimeoutMS: 60_000, Kinds: []string{supervise.EventSettled}}); err != nil || ev.Event == nil {
			return supervise.BrainReport{}, fmt.Errorf("alpha's settlement: %+v, %v", ev, err)
		}
		if _, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "writer", Task: "beta"}); err != nil {
			return supervise.BrainReport{}, err
		}
		analysed := make(chan error, 1)
		go func() {
			_, err := c.RunAnalyst(ctx, supervise.RunAnalystArgs{Kind: "failure-triage", WorkerID: alpha.WorkerID})
			analysed <- err
		}()
		<-entered
		ev, err := c.Await(ctx, supervise.AwaitArgs{TimeoutMS: 5_000, Kinds: []string{supervise.EventSettled}})
		once.Do(func() { close(release) })
		if err != nil || ev.Event == nil {
			return supervise.BrainReport{}, fmt.Errorf("while the hook decided about the analyst, await_event gave %+v, %v; want beta's settlement", ev, err)
		}
		if err := <-analysed; err != nil {
			return supervise.BrainReport{}, fmt.Errorf("run_analyst: %w", err)
		}
		return supervise.BrainReport{}, nil
	})
	brainErr := captureBrainError(&o)
	res, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "ship", o)
	if err != nil || res.Error != nil || len(res.Tree) != 3 {
		t.Fatalf("Supervise = %+v, %v; want alpha, beta and the analyst", res, err)
	}
	if err := *brainErr; err != nil {
		t.Fatal(err)
	}
}

// captureBrainError wraps o's Brain so that its error is kept for the
// test: a run with a delivered child ends winner whatever its brain
// returned, so the result alone does not show the brain's failure.
func captureBrainError(o *supervise.Options) *error {
	var got error
	b := o.Brain
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, task string) (supervise.BrainReport, error) {
		r, err := b.Drive(ctx, c, task)
		got = err
		return r, err
	})
	return &got
}

// §9 stop ("nothing more is admitted") with §3.6 authorizeSpawn: a stop
// made while the hook decides about a spawn refuses that spawn once the
// hook answers (scope-settled, stopped), nothing reserved or run. The
// spawn's own context (here one the stop does not end) is no part of
// it. Before, the stop was read only before the hook, so the spawn was
// admitted and its worker ran after the manager stopped.
func TestAuthorizeSpawnStopWhileTheHookDecides(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	var ran atomic.Int32
	o := baseOptions(t, supervise.ExecutorFunc(func(ctx context.Context, w supervise.Work) (supervise.WorkResult, error) {
		ran.Add(1)
		return supervise.WorkResult{Text: "DONE " + w.Task, Spent: fullSpend(1)}, nil
	}), nil)
	o.AuthorizeSpawn = func(r supervise.SpawnRequest) error {
		close(entered)
		<-release
		return nil
	}
	var spawnErr error
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		spawned := make(chan error, 1)
		go func() {
			_, err := c.Spawn(context.WithoutCancel(ctx), supervise.SpawnArgs{Profile: "writer", Task: "late"})
			spawned <- err
		}()
		<-entered
		if _, err := c.Stop(supervise.StopArgs{Reason: "enough"}); err != nil {
			return supervise.BrainReport{}, err
		}
		once.Do(func() { close(release) })
		spawnErr = <-spawned
		return supervise.BrainReport{}, nil
	})
	before := time.Now()
	res, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker, supervise.VerbStop), "ship", o)
	if err != nil {
		t.Fatal(err)
	}
	var r *supervise.Refusal
	if !errors.As(spawnErr, &r) || r.Code != supervise.CodeScopeSettled {
		t.Errorf("a spawn whose hook answered after the stop = %v; want refused scope-settled", spawnErr)
	}
	if len(res.Tree) != 0 || ran.Load() != 0 {
		t.Errorf("after the stop: tree %+v, %d workers ran; want none", res.Tree, ran.Load())
	}
	if took := time.Since(before); took > 30*time.Second {
		t.Errorf("the run took %s", took)
	}
}
