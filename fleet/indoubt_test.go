package fleet_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"net"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/fleet"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/supervise"
)

// flakyServer stands for a remote provider whose server dies: its first
// creates are refused (the server is down), and the turns of the
// environments it creates while losing break off after their first event
// (the server died mid-turn).
type flakyServer struct {
	contract.Provider
	refuse atomic.Int32 // creates still to refuse
	cut    atomic.Bool  // cut every turn's stream
	// hush: every turn's stream ends after its first event with neither
	// an error nor a terminal (the server closed the stream cleanly).
	hush  atomic.Bool
	turns atomic.Int32 // turns started
}

func (p *flakyServer) Create(ctx context.Context, in *contract.CreateInput) (contract.Environment, error) {
	if p.refuse.Add(-1) >= 0 {
		return nil, fmt.Errorf("remote: POST /v1/environments: %w", &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED})
	}
	env, err := p.Provider.Create(ctx, in)
	if err != nil {
		return nil, err
	}
	return &flakyEnv{Environment: env, p: p}, nil
}

type flakyEnv struct {
	contract.Environment
	p *flakyServer
}

func (e *flakyEnv) Stream(ctx context.Context, in *contract.TurnInput) iter.Seq2[contract.EnvironmentEvent, error] {
	e.p.turns.Add(1)
	cut, hush := e.p.cut.Load(), e.p.hush.Load()
	return func(yield func(contract.EnvironmentEvent, error) bool) {
		for ev, err := range e.Environment.Stream(ctx, in) {
			if !yield(ev, err) || err != nil || hush {
				return
			}
			if cut {
				yield(contract.EnvironmentEvent{}, errors.New("remote: the turn stream was lost 5 times: connection refused"))
				return
			}
		}
	}
}

// A run whose environment's stream was lost (its remote server died
// mid-turn) is in doubt: the fleet ends it interrupted and never runs it
// again, while a run whose server refused the connection before any
// environment existed is handed back and runs again.
func TestWorkInDoubtIsNeverRunAgain(t *testing.T) {
	f, conn := openFleet(t)
	inner := provider(t, quickScript)

	// In doubt: every turn is cut.
	doubtful := &flakyServer{Provider: inner}
	doubtful.cut.Store(true)
	sub, err := f.Submit(t.Context(), fleet.Submission{Spec: spec(t, "a note in doubt")})
	if err != nil {
		t.Fatal(err)
	}
	w, stop := startWorker(t, conn, schemaOf(t, conn), fleet.WorkerOptions{Providers: map[string]contract.Provider{"scripted": doubtful},
		LeaseTTL: 2 * time.Second, PollInterval: 50 * time.Millisecond})
	r := waitTerminal(t, f, sub.RunID, time.Minute)
	stop()
	if r.Status != store.StatusInterrupted || len(r.Attempts) != 1 || r.Outcome == nil || !strings.Contains(r.Outcome.Error, "in doubt") {
		t.Errorf("run in doubt: %s, attempts %+v, outcome %+v; want interrupted after one attempt, saying why", r.Status, r.Attempts, r.Outcome)
	}
	if got := doubtful.turns.Load(); got != 1 {
		t.Errorf("%d turns started for the run in doubt, want 1 (never re-run)", got)
	}
	if rec, err := kernel.ReadRun(t.Context(), f.Store(), r.Attempts[0].RunID); err != nil || rec.Run.Status != store.StatusFailed {
		t.Errorf("the attempt's kernel run: %+v, %v; want it failed as the kernel saw it", rec, err)
	}
	if s := w.Stats(); s.Started != 1 || s.Released != 0 {
		t.Errorf("worker stats %+v, want one attempt, none handed back", s)
	}

	// Unreachable: two creates refused, then the server answers.
	down := &flakyServer{Provider: inner}
	down.refuse.Store(2)
	sub, err = f.Submit(t.Context(), fleet.Submission{Spec: spec(t, "a note while the server is down")})
	if err != nil {
		t.Fatal(err)
	}
	w, stop = startWorker(t, conn, schemaOf(t, conn), fleet.WorkerOptions{Providers: map[string]contract.Provider{"scripted": down},
		LeaseTTL: 2 * time.Second, PollInterval: 50 * time.Millisecond})
	r = waitTerminal(t, f, sub.RunID, time.Minute)
	stop()
	if r.Status != store.StatusCompleted || len(r.Attempts) != 3 || r.Outcome == nil || !r.Outcome.Delivered {
		t.Fatalf("run while the server was down: %s, attempts %+v, outcome %+v; want completed on the third attempt", r.Status, r.Attempts, r.Outcome)
	}
	for _, a := range r.Attempts[:2] {
		if a.Status != "released" || !strings.Contains(a.Note, "unreachable") {
			t.Errorf("attempt %+v, want released as unreachable", a)
		}
	}
	if s := w.Stats(); s.Released != 2 || s.Completed != 1 {
		t.Errorf("worker stats %+v, want two hand-backs and one completion", s)
	}
}

// waitTerminal waits until the run is terminal, interrupted included.
func waitTerminal(t *testing.T, f *fleet.Fleet, id string, within time.Duration) *fleet.Run {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		r, err := f.Get(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		if r.Status.Terminal() {
			return r
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s still %s after %s: %+v", id, r.Status, within, r.Attempts)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Spec §10 tangle.supervise.node.infra: a supervised worker whose fleet
// run ended interrupted (its server died mid-turn) failed for an
// infrastructure reason, and the executor's error says so.
func TestExecutorInterruptedRunIsInfra(t *testing.T) {
	f, conn := openFleet(t)
	doubtful := &flakyServer{Provider: provider(t, quickScript)}
	doubtful.cut.Store(true)
	_, stop := startWorker(t, conn, schemaOf(t, conn), fleet.WorkerOptions{Providers: map[string]contract.Provider{"scripted": doubtful},
		LeaseTTL: 2 * time.Second, PollInterval: 50 * time.Millisecond})
	defer stop()
	p, err := profile.Parse([]byte(noteProfile))
	if err != nil {
		t.Fatal(err)
	}
	e := &fleet.Executor{Fleet: f, Provider: "scripted", PollInterval: 50 * time.Millisecond}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	_, err = e.Execute(ctx, supervise.Work{RunID: "infra-run", Node: "infra-run:s1", Profile: p, Task: "a note in doubt"})
	if err == nil || !supervise.IsInfra(err) {
		t.Errorf("Execute: %v; want an infrastructure failure", err)
	}
	if supervise.RuntimeOf(e) != fleet.RuntimeFleet || !e.PropagatesTrace() {
		t.Errorf("runtime %q, propagates %v", supervise.RuntimeOf(e), e.PropagatesTrace())
	}
}

// stuckBox is a real provider whose environments refuse to be destroyed.
type stuckBox struct{ contract.Provider }

func (p stuckBox) Create(ctx context.Context, in *contract.CreateInput) (contract.Environment, error) {
	env, err := p.Provider.Create(ctx, in)
	if err != nil {
		return nil, err
	}
	return stuckBoxEnv{env}, nil
}

type stuckBoxEnv struct{ contract.Environment }

func (stuckBoxEnv) Destroy(context.Context) error {
	return errors.New("the box did not answer the destroy")
}

// §15 behaviour 51 on the fleet: a supervised worker whose fleet run's
// kernel could not confirm its environment destroyed (kernel
// Result.TeardownUnconfirmed, kept in the attempt's run record) settles
// with its outcome as it was and the executor names the unconfirmed
// teardown, so the supervisor holds the worker's slot; a worker whose
// environment was destroyed names none.
func TestExecutorSurfacesKernelTeardownUnconfirmed(t *testing.T) {
	for _, stuck := range []bool{false, true} {
		t.Run(map[bool]string{false: "destroyed", true: "destroy failed"}[stuck], func(t *testing.T) {
			f, conn := openFleet(t)
			var p contract.Provider = provider(t, quickScript)
			if stuck {
				p = stuckBox{p}
			}
			_, stop := startWorker(t, conn, schemaOf(t, conn), fleet.WorkerOptions{Providers: map[string]contract.Provider{"scripted": p},
				LeaseTTL: 2 * time.Second, PollInterval: 50 * time.Millisecond})
			defer stop()
			np, err := profile.Parse([]byte(noteProfile))
			if err != nil {
				t.Fatal(err)
			}
			e := &fleet.Executor{Fleet: f, Provider: "scripted", PollInterval: 50 * time.Millisecond}
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			res, err := e.Execute(ctx, supervise.Work{RunID: "td-run", Node: "td-run:s1", Profile: np, Task: "write a note"})
			if err != nil || res.Text != "note written" {
				t.Fatalf("Execute = %+v, %v; want the note, the outcome unchanged by the teardown", res, err)
			}
			if got := res.TeardownUnconfirmed != ""; got != stuck {
				t.Errorf("TeardownUnconfirmed %q; want it named: %v", res.TeardownUnconfirmed, stuck)
			}
			if stuck && !strings.Contains(res.TeardownUnconfirmed, "not confirmed destroyed") {
				t.Errorf("TeardownUnconfirmed %q does not carry the kernel's reason", res.TeardownUnconfirmed)
			}
		})
	}
}
