package fleet

import (
	"context"
	"fmt"
	"iter"
	"net/url"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/internal/pgtest"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/store"
)

// envLedger is a scripted provider, environment lookup included
// (contract.EnvironmentGetter), shared by every worker of a test as by
// the workers of one process, that records each environment it created
// and each destroy, through whichever handle (created or looked up) it
// came.
type envLedger struct {
	*scripted.Provider
	mu        sync.Mutex
	created   []string
	destroyed map[string]int
	// detached makes the environments it creates run their turns as a
	// server does (providers/remote behind agentrt serve): on after
	// their caller went away, unheard, for a later re-attachment.
	detached bool
}

func newEnvLedger(t *testing.T, script string) *envLedger {
	t.Helper()
	sc, err := scripted.ParseScript([]byte(script))
	if err != nil {
		t.Fatal(err)
	}
	return &envLedger{Provider: scripted.New(sc, scripted.Options{}), destroyed: map[string]int{}}
}

func (p *envLedger) Create(ctx context.Context, in *contract.CreateInput) (contract.Environment, error) {
	env, err := p.Provider.Create(ctx, in)
	if err != nil {
		return nil, err
	}
	if env.Creation() == contract.CreationCreated {
		p.mu.Lock()
		p.created = append(p.created, env.ID())
		p.mu.Unlock()
	}
	return &ledgerEnv{Environment: env, p: p, detached: p.detached}, nil
}

func (p *envLedger) Get(ctx context.Context, id string) (contract.Environment, error) {
	env, err := p.Provider.Get(ctx, id)
	if env == nil || err != nil {
		return nil, err
	}
	return &ledgerEnv{Environment: env, p: p}, nil
}

type ledgerEnv struct {
	contract.Environment
	p        *envLedger
	detached bool
}

// Stream, when detached, runs the turn on a context of its own: a caller
// whose context ends gets its cause as the stream's error, and the turn
// plays on unheard.
func (e *ledgerEnv) Stream(ctx context.Context, in *contract.TurnInput) iter.Seq2[contract.EnvironmentEvent, error] {
	if !e.detached {
		return e.Environment.Stream(ctx, in)
	}
	type pulled struct {
		ev  contract.EnvironmentEvent
		err error
	}
	return func(yield func(contract.EnvironmentEvent, error) bool) {
		ch := make(chan pulled)
		go func() {
			defer close(ch)
			for ev, err := range e.Environment.Stream(context.WithoutCancel(ctx), in) {
				ch <- pulled{ev, err}
			}
		}()
		drain := func() {
			go func() {
				for range ch {
				}
			}()
		}
		for {
			select {
			case p, ok := <-ch:
				if !ok {
					return
				}
				if !yield(p.ev, p.err) {
					drain()
					return
				}
			case <-ctx.Done():
				drain()
				yield(contract.EnvironmentEvent{}, context.Cause(ctx))
				return
			}
		}
	}
}

func (e *ledgerEnv) Destroy(ctx context.Context) error {
	e.p.mu.Lock()
	e.p.destroyed[e.ID()]++
	e.p.mu.Unlock()
	return e.Environment.Destroy(ctx)
}

// checkDestroyedOnce fails the test unless every environment the
// provider created was destroyed exactly once, no other was destroyed,
// and none is left alive; it returns how many were created.
func (p *envLedger) checkDestroyedOnce(t *testing.T) int {
	t.Helper()
	p.mu.Lock()
	created, destroyed := slices.Clone(p.created), map[string]int{}
	for id, n := range p.destroyed {
		destroyed[id] = n
	}
	p.mu.Unlock()
	want := map[string]int{}
	for _, id := range created {
		want[id] = 1
	}
	if diff := cmp.Diff(want, destroyed); diff != "" {
		t.Errorf("destroys per environment (-want exactly once each +got):\n%s", diff)
	}
	live, err := p.List(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(live) != 0 {
		t.Errorf("environments left alive on the provider: %+v", live)
	}
	return len(created)
}

// stallAfter is a store whose fenced writes and run reads stall (until
// their context ends) once stall is set: what a worker sees of its
// database when it is cut off, or what the store sees of a worker that
// died or was paused.
type stallAfter struct {
	store.Store
	stall  atomic.Bool
	events atomic.Int64
	// after, when positive, sets stall once that many events were
	// appended.
	after int64
	// atType, when set, sets stall as an event of that type is about to
	// be appended (the turn's terminal, "done": the turn ended in its
	// environment, unrecorded), which then stalls too.
	atType string
}

func (s *stallAfter) wait(ctx context.Context) error {
	if s.stall.Load() {
		<-ctx.Done()
		return fmt.Errorf("stalled: %w", ctx.Err())
	}
	return nil
}

func (s *stallAfter) AppendEvents(ctx context.Context, f store.Fence, events []store.NewEvent) ([]store.Event, error) {
	for _, e := range events {
		if s.atType != "" && e.Type == s.atType {
			s.stall.Store(true)
		}
	}
	if err := s.wait(ctx); err != nil {
		return nil, err
	}
	out, err := s.Store.AppendEvents(ctx, f, events)
	if s.after > 0 && s.events.Add(int64(len(events))) >= s.after {
		s.stall.Store(true)
	}
	return out, err
}

func (s *stallAfter) UpdateFenced(ctx context.Context, f store.Fence, fn func(*store.Run) error) (store.Run, error) {
	if err := s.wait(ctx); err != nil {
		return store.Run{}, err
	}
	return s.Store.UpdateFenced(ctx, f, fn)
}

func (s *stallAfter) GetRun(ctx context.Context, id string) (store.Run, error) {
	if err := s.wait(ctx); err != nil {
		return store.Run{}, err
	}
	return s.Store.GetRun(ctx, id)
}

const reattachProfile = `{"name":"note-writer","harness":"cli-base","model":{"provider":"scripted","default":"scripted/note-writer"}}`

// A worker died mid-run (its process is gone: its attempt's kernel run
// stopped, its lease lapsed, its claim lapsed) on a provider whose
// environments outlive their worker. The worker that takes the run over
// re-attaches to the dead attempt's environment through the kernel
// (kernel.Reattach; spec/runtime.md §5, RES-05/RES-06): a turn that
// completed is the run's outcome, not run again; a turn that died with
// its worker (cancelled, which nobody requested) is run again in a new
// environment — never reported as the run's failure. Either way every
// environment created for the run is destroyed exactly once once the run
// ended, by the attempt that finished it, on the dead attempt's recorded
// proof that the runtime created it (ENV-06): none leaks.
func TestTakeoverDestroysTheDeadWorkersEnvironmentOnce(t *testing.T) {
	f, _ := openTestFleet(t)
	pv, err := canonjson.Decode([]byte(reattachProfile))
	if err != nil {
		t.Fatal(err)
	}
	p, err := profile.FromValue(pv)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		// inCheck: the dead worker died once its turn completed (in its
		// completion check), before recording it; otherwise mid-turn.
		inCheck bool
		// wantEnvs is how many environments the run used; wantTurns how
		// many turns were played.
		wantEnvs  int
		wantTurns int64
		wantText  string
	}{
		{name: "died mid-turn: the turn runs again in a new environment", wantEnvs: 2, wantTurns: 2, wantText: "working done"},
		{name: "died after its turn completed: the turn is re-attached to, not run again", inCheck: true, wantEnvs: 1, wantTurns: 1, wantText: "working done"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prov := newEnvLedger(t, `{"turns":[{"repeat":true,"steps":[{"text":"working "},{"delayMs":1500},{"text":"done"}]}]}`)
			sub, err := f.Submit(t.Context(), Submission{Spec: Spec{Profile: pv, Task: "t", Provider: "scripted"}})
			if err != nil {
				t.Fatal(err)
			}
			deadHolder(t, f, sub.RunID)
			// The dead worker's attempt, as its worker ran it (the turn
			// named after the fleet run) until it died.
			st := &stallAfter{Store: f.store}
			check := kernel.ExpectCheck("")
			if tc.inCheck {
				check = func(ctx context.Context, out kernel.Outcome) (kernel.Verdict, error) {
					st.stall.Store(true)
					time.Sleep(kernel.MinLeaseTTL + 500*time.Millisecond)
					return kernel.ExpectCheck("")(ctx, out)
				}
			} else {
				st.after = 1
			}
			dead, err := kernel.Execute(t.Context(), kernel.Request{Profile: p, Task: "t", Provider: &pinned{Provider: prov, turn: turnID(sub.RunID)},
				Store: st, Check: check, RunID: attemptID(sub.RunID, 1), LeaseTTL: kernel.MinLeaseTTL, CleanupTimeout: 300 * time.Millisecond})
			if dead == nil || dead.Status != store.StatusInterrupted || dead.EnvironmentID == "" {
				t.Fatalf("the dead worker's attempt: %+v, %v; want interrupted in an environment", dead, err)
			}

			w, err := f.NewWorker(t.Context(), WorkerOptions{Providers: map[string]contract.Provider{"scripted": prov}, LeaseTTL: 2 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			if err := w.execute(ctx, sub.RunID, ""); err != nil {
				t.Fatal(err)
			}
			r, err := f.Get(t.Context(), sub.RunID)
			if err != nil {
				t.Fatal(err)
			}
			if r.Status != store.StatusCompleted || r.Outcome == nil || !r.Outcome.Delivered || r.Outcome.Text != tc.wantText {
				t.Fatalf("run %s, outcome %+v, attempts %+v; want completed, delivered, %q", r.Status, r.Outcome, r.Attempts, tc.wantText)
			}
			if n := prov.checkDestroyedOnce(t); n != tc.wantEnvs {
				t.Errorf("%d environments created; want %d", n, tc.wantEnvs)
			}
			if prov.Turns() != tc.wantTurns {
				t.Errorf("%d turns played; want %d", prov.Turns(), tc.wantTurns)
			}
			t.Logf("attempts %+v", r.Attempts)
		})
	}
}

// A worker paused past its lease (here: its database stops answering, a
// black hole, for three leases, then answers again) loses the run to
// another worker of the same process, which re-attaches to its
// environment. The paused worker, once it wakes, destroys nothing under
// the winner (it lost the lease: kernel rule "no effects after a lost
// lease"), and the winner destroys every environment of the run exactly
// once when it is done with it: nothing leaks and nothing is destroyed
// twice.
func TestPausedWorkerLeavesItsEnvironmentToTheWinner(t *testing.T) {
	f, conn := openTestFleet(t)
	u, err := url.Parse(conn)
	if err != nil {
		t.Fatal(err)
	}
	schema := u.Query().Get("search_path")
	proxy := pgtest.NewProxy(t, u.Host)
	u.Host = proxy.Addr()
	viaProxy := u.String()
	pv, err := canonjson.Decode([]byte(reattachProfile))
	if err != nil {
		t.Fatal(err)
	}
	prov := newEnvLedger(t, `{"turns":[{"repeat":true,"steps":[{"text":"working "},{"delayMs":6000},{"text":"done"}]}]}`)
	const lease = 2 * time.Second
	o := WorkerOptions{Providers: map[string]contract.Provider{"scripted": prov}, LeaseTTL: lease, RescueAfter: 2 * time.Second,
		PollInterval: 100 * time.Millisecond, Backoff: 100 * time.Millisecond, MaxBackoff: time.Second}
	paused, stopPaused := runTestWorker(t, viaProxy, schema, o)
	sub, err := f.Submit(t.Context(), Submission{Spec: Spec{Profile: pv, Task: "t", Provider: "scripted"}})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		r, err := f.Get(t.Context(), sub.RunID)
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Attempts) == 1 && r.Attempts[0].Worker == paused.ID() {
			if rec, err := kernel.ReadRun(t.Context(), f.store, r.Attempts[0].RunID); err == nil && rec.Run.Status == store.StatusRunning && rec.Exact != nil && rec.Exact.EnvironmentID != "" {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the worker behind the proxy never started its turn: %+v", r)
		}
		time.Sleep(50 * time.Millisecond)
	}
	proxy.BlackHole()
	_, stopWinner := runTestWorker(t, conn, schema, o)
	time.Sleep(3 * lease)
	proxy.Restore()

	deadline = time.Now().Add(3 * time.Minute)
	var r *Run
	for {
		if r, err = f.Get(t.Context(), sub.RunID); err != nil {
			t.Fatal(err)
		}
		if r.Status.Terminal() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the run did not end: %+v", r)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// Both workers are done with their attempts once they stopped.
	stopPaused()
	stopWinner()
	if r.Status != store.StatusCompleted || r.Outcome == nil || !r.Outcome.Delivered {
		t.Fatalf("run %s, outcome %+v, attempts %+v; want completed and delivered", r.Status, r.Outcome, r.Attempts)
	}
	n := prov.checkDestroyedOnce(t)
	t.Logf("%d environments; attempts %+v", n, r.Attempts)
}
