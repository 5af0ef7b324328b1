package kernel_test

import (
	"context"
	"errors"
	"iter"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/memory"
)

// blipServer stands for a live server reached over a network that
// blips: with cut set, the caller's stream breaks off after the turn's
// first event while the server runs the turn on to its end; with hush,
// the stream ends after the first event with neither an error nor a
// terminal. Every turn carries one turn id, so a caller that
// re-attaches replays the turn rather than starting another. It counts
// each destroy, through whichever handle.
type blipServer struct {
	*scripted.Provider
	cut, hush atomic.Bool
	mu        sync.Mutex
	destroyed map[string]int
}

func newBlipServer(t *testing.T, script string) *blipServer {
	return &blipServer{Provider: scripted.New(mustScript(t, script), scripted.Options{}), destroyed: map[string]int{}}
}

func (p *blipServer) Create(ctx context.Context, in *contract.CreateInput) (contract.Environment, error) {
	env, err := p.Provider.Create(ctx, in)
	if err != nil {
		return nil, err
	}
	return &blipEnv{Environment: env, p: p}, nil
}

func (p *blipServer) Get(ctx context.Context, id string) (contract.Environment, error) {
	env, err := p.Provider.Get(ctx, id)
	if env == nil || err != nil {
		return nil, err
	}
	return &blipEnv{Environment: env, p: p}, nil
}

func (p *blipServer) destroys(id string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.destroyed[id]
}

type blipEnv struct {
	contract.Environment
	p *blipServer
}

func (e *blipEnv) Destroy(ctx context.Context) error {
	e.p.mu.Lock()
	e.p.destroyed[e.ID()]++
	e.p.mu.Unlock()
	return e.Environment.Destroy(ctx)
}

func (e *blipEnv) Stream(ctx context.Context, in *contract.TurnInput) iter.Seq2[contract.EnvironmentEvent, error] {
	turn := *in
	id := "turn-1"
	turn.TurnID = &id
	cut, hush := e.p.cut.Load(), e.p.hush.Load()
	return func(yield func(contract.EnvironmentEvent, error) bool) {
		reading := true
		for ev, err := range e.Environment.Stream(ctx, &turn) {
			if !reading {
				continue // the server runs the turn on; nobody hears it
			}
			if !yield(ev, err) || err != nil {
				return
			}
			switch {
			case hush:
				reading = false
			case cut:
				yield(contract.EnvironmentEvent{}, errors.New("remote: the turn stream was lost: connection reset"))
				reading = false
			}
		}
	}
}

const blipScript = `{"turns":[{"repeat":true,"steps":[{"text":"note "},{"text":"written"},{"usage":{"inputTokens":3,"outputTokens":2},"mode":"delta"}]}]}`

// Issue 14: a run whose stream broke off (transport) or ended without a
// terminal event, with KeepInDoubt, keeps its environment alive and says
// so on its Result and its record; without KeepInDoubt, and on every
// other ending, the environment it created is destroyed as before
// (ENV-06).
func TestInDoubtKeepsEnvironment(t *testing.T) {
	cases := []struct {
		name      string
		cut, hush bool
		keep      bool
		script    string
		cancel    bool
		status    store.Status
		reason    string
		kept      bool
	}{
		{name: "transport kept", cut: true, keep: true, script: blipScript, status: store.StatusFailed, reason: kernel.ReasonTransport, kept: true},
		{name: "no terminal kept", hush: true, keep: true, script: blipScript, status: store.StatusFailed, reason: kernel.ReasonNoTerminal, kept: true},
		{name: "transport without KeepInDoubt destroyed", cut: true, script: blipScript, status: store.StatusFailed, reason: kernel.ReasonTransport},
		{name: "completed destroyed", keep: true, script: blipScript, status: store.StatusCompleted},
		{name: "failed destroyed", keep: true, script: `{"turns":[{"steps":[{"text":"partial"}],"end":"failed","error":"quota exhausted"}]}`,
			status: store.StatusFailed, reason: kernel.ReasonInBandError},
		{name: "cancelled destroyed", keep: true, cancel: true, script: `{"turns":[{"steps":[{"text":"a"},{"delayMs":60000},{"text":"b"}]}]}`,
			status: store.StatusCancelled, reason: kernel.ReasonCancelled},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := newBlipServer(t, tc.script)
			srv.cut.Store(tc.cut)
			srv.hush.Store(tc.hush)
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			if tc.cancel {
				go func() {
					time.Sleep(200 * time.Millisecond)
					cancel()
				}()
			}
			s := memory.New(time.Now)
			res, err := kernel.Execute(ctx, kernel.Request{Profile: mustProfile(t, noteWriter), Task: "a note", Provider: srv, Store: s,
				Check: nonEmpty, KeepInDoubt: tc.keep, CleanupTimeout: 10 * time.Second})
			if res == nil || res.Status != tc.status || res.Reason != tc.reason || (err == nil) != (tc.status == store.StatusCompleted) {
				t.Fatalf("Execute: %+v, %v; want %s (%q)", res, err, tc.status, tc.reason)
			}
			if res.EnvironmentID == "" {
				t.Fatal("the run names no environment")
			}
			if res.EnvironmentKept != tc.kept {
				t.Errorf("Result.EnvironmentKept = %v, want %v", res.EnvironmentKept, tc.kept)
			}
			wantDestroys := 1
			if tc.kept {
				wantDestroys = 0
			}
			if got := srv.destroys(res.EnvironmentID); got != wantDestroys {
				t.Errorf("environment destroyed %d times, want %d", got, wantDestroys)
			}
			env, err := srv.Get(t.Context(), res.EnvironmentID)
			if err != nil || (env != nil) != tc.kept {
				t.Errorf("Get(%s) = %v, %v; want alive %v", res.EnvironmentID, env, err, tc.kept)
			}
			rec, err := kernel.ReadRun(t.Context(), s, res.RunID)
			if err != nil || rec.Exact == nil || rec.Exact.EnvironmentKept != tc.kept || (tc.kept && !rec.Exact.EnvironmentCreated) {
				t.Errorf("record %+v, %v; want environmentKept %v with its creation proved", rec.Exact, err, tc.kept)
			}
		})
	}
}

// Issue 14: a kept environment's turn, which ran on to its end while
// nobody heard it, is settled by re-attaching with Reattach.Settle: the
// run completes with the turn's text and whole usage and destroys the
// environment it proves the runtime created; a settle whose environment
// is gone fails with ReasonEnvironmentGone and creates nothing (the work
// is never run again).
func TestSettleKeptEnvironment(t *testing.T) {
	srv := newBlipServer(t, blipScript)
	srv.cut.Store(true)
	s := memory.New(time.Now)
	p := mustProfile(t, noteWriter)
	first, _ := kernel.Execute(t.Context(), kernel.Request{Profile: p, Task: "a note", Provider: srv, Store: s, Check: nonEmpty, KeepInDoubt: true})
	if first == nil || !first.EnvironmentKept {
		t.Fatalf("first run %+v, want its environment kept", first)
	}
	srv.cut.Store(false)
	env, err := srv.Get(t.Context(), first.EnvironmentID)
	if err != nil || env == nil {
		t.Fatalf("Get: %v, %v", env, err)
	}
	settled, err := kernel.Execute(t.Context(), kernel.Request{Profile: p, Task: "a note", Provider: srv, Store: s, Check: nonEmpty,
		Reattach: &kernel.Reattach{Environment: env, Created: true, Settle: true}})
	if err != nil || settled.Status != store.StatusCompleted || settled.Text != "note written" || !settled.Delivered {
		t.Fatalf("settle: %+v, %v; want completed with the turn's text", settled, err)
	}
	if in, out := settled.Usage.InputTokens, settled.Usage.OutputTokens; !in.Known() || in.Value != 3 || !out.Known() || out.Value != 2 {
		t.Errorf("settled usage %+v, want the turn's whole usage 3/2", settled.Usage)
	}
	if settled.EnvironmentID != first.EnvironmentID || srv.destroys(first.EnvironmentID) != 1 {
		t.Errorf("settled in %s, destroyed %d times; want the kept environment, destroyed once", settled.EnvironmentID, srv.destroys(first.EnvironmentID))
	}

	// Gone: the environment is destroyed before the settle follows it.
	srv.cut.Store(true)
	second, _ := kernel.Execute(t.Context(), kernel.Request{Profile: p, Task: "another note", Provider: srv, Store: s, Check: nonEmpty, KeepInDoubt: true})
	if second == nil || !second.EnvironmentKept {
		t.Fatalf("second run %+v, want its environment kept", second)
	}
	env, err = srv.Get(t.Context(), second.EnvironmentID)
	if err != nil || env == nil {
		t.Fatalf("Get: %v, %v", env, err)
	}
	if err := env.Destroy(t.Context()); err != nil {
		t.Fatal(err)
	}
	gone, err := kernel.Execute(t.Context(), kernel.Request{Profile: p, Task: "another note", Provider: srv, Store: s, Check: nonEmpty,
		Reattach: &kernel.Reattach{Environment: env, Created: true, Settle: true}})
	if err == nil || gone.Status != store.StatusFailed || gone.Reason != kernel.ReasonEnvironmentGone || gone.EnvironmentID != second.EnvironmentID {
		t.Errorf("settle of a gone environment: %+v, %v; want failed %q in that environment, nothing created", gone, err, kernel.ReasonEnvironmentGone)
	}
}
