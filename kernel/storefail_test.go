package kernel_test

import (
	"context"
	"errors"
	"iter"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/internal/storefault"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/store"
)

// hookProvider calls at(point) at three places of a run — when the
// environment is created, after the turn's first event, and (through
// the test's Check) once the turn settled — and counts destroys.
type hookProvider struct {
	contract.Provider
	at        func(point string)
	destroyed atomic.Int64
}

func (p *hookProvider) Create(ctx context.Context, in *contract.CreateInput) (contract.Environment, error) {
	env, err := p.Provider.Create(ctx, in)
	if err != nil {
		return nil, err
	}
	p.at("after-create")
	return &hookEnv{Environment: env, p: p}, nil
}

type hookEnv struct {
	contract.Environment
	p *hookProvider
}

func (e *hookEnv) Stream(ctx context.Context, in *contract.TurnInput) iter.Seq2[contract.EnvironmentEvent, error] {
	return func(yield func(contract.EnvironmentEvent, error) bool) {
		first := true
		for ev, err := range e.Environment.Stream(ctx, in) {
			if !yield(ev, err) {
				return
			}
			if first {
				first = false
				e.p.at("between-events")
			}
		}
	}
}

func (e *hookEnv) Destroy(ctx context.Context) error {
	e.p.destroyed.Add(1)
	return e.Environment.Destroy(ctx)
}

// A store that stops answering mid-run — after the run was created,
// between two events, at the terminal write — on PostgreSQL (black hole,
// reset) and SQLite (write lock held elsewhere): Execute, whose caller
// set no deadline at all, returns within the lease and cleanup bounds
// with a *RunError that is never "completed"; the environment the run
// created is destroyed; nothing panics. When the store answers again,
// the run reads interrupted or failed — never completed — and holds
// every event the result counts. (runtime.md §15 lifecycle: every run
// ends in exactly one terminal state; a lost lease reads interrupted.)
func TestExecuteWhenStoreStopsAnswering(t *testing.T) {
	const lease, cleanup = 3 * time.Second, time.Second
	// The lease must lapse and the cleanup window close; the rest is
	// slack for a machine shared by many builds.
	const bound = lease + 3*cleanup + 20*time.Second
	script := `{"turns":[{"steps":[{"text":"first words"},{"usage":{"inputTokens":9,"outputTokens":2},"mode":"cumulative"},{"text":" and the rest"}]}]}`
	for _, fs := range storefault.Stores() {
		t.Run(string(fs.Fault)+"/before-create", func(t *testing.T) {
			st, fail, restore := fs.Open(t)
			p := &hookProvider{Provider: scripted.New(mustScript(t, script), scripted.Options{}), at: func(string) {}}
			fail()
			start := time.Now()
			runID := kernel.NewID("storefail")
			res, err := kernel.Execute(context.Background(), kernel.Request{
				Profile: mustProfile(t, noteWriter), Task: "t", Provider: p, Store: st, Check: nonEmpty,
				RunID: runID, LeaseTTL: lease, CleanupTimeout: cleanup,
			})
			took := time.Since(start)
			restore()
			if took > bound {
				t.Errorf("Execute returned %v after it began on a store that does not answer; want within %v", took, bound)
			}
			se, ok := errors.AsType[*kernel.StoreError](err)
			if !ok || se.Op != "create" || se.RunID != runID || res != nil {
				t.Fatalf("result %+v, err %T %v; want no result and a *kernel.StoreError for the create", res, err, err)
			}
			if p.destroyed.Load() != 0 {
				t.Error("an environment was created for a run that was never recorded")
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			// Nothing was recorded, or (a create that landed unseen) a run
			// that never ran and reads interrupted once its lease lapses.
			for {
				run, err := st.GetRun(ctx, runID)
				if errors.Is(err, store.ErrNotFound) || (err == nil && run.Status == store.StatusInterrupted) {
					break
				}
				if ctx.Err() != nil {
					t.Fatalf("the run reads %s (%v) after the store answered again", run.Status, err)
				}
				time.Sleep(100 * time.Millisecond)
			}
		})
		for _, point := range []string{"after-create", "between-events", "terminal-write"} {
			t.Run(string(fs.Fault)+"/"+point, func(t *testing.T) {
				st, fail, restore := fs.Open(t)
				reached, ack := make(chan struct{}), make(chan struct{})
				hook := func(p string) {
					if p == point {
						reached <- struct{}{}
						<-ack
					}
				}
				p := &hookProvider{Provider: scripted.New(mustScript(t, script), scripted.Options{}), at: hook}
				check := func(ctx context.Context, out kernel.Outcome) (kernel.Verdict, error) {
					hook("terminal-write")
					return nonEmpty(ctx, out)
				}
				runID := kernel.NewID("storefail")
				type outcome struct {
					res *kernel.Result
					err error
				}
				done := make(chan outcome, 1)
				go func() {
					res, err := kernel.Execute(context.Background(), kernel.Request{
						Profile: mustProfile(t, noteWriter), Task: "t", Provider: p, Store: st, Check: check,
						RunID: runID, LeaseTTL: lease, CleanupTimeout: cleanup,
					})
					done <- outcome{res, err}
				}()
				select {
				case <-reached:
				case o := <-done:
					t.Fatalf("the run ended (%v) before reaching %s", o.err, point)
				case <-time.After(2 * time.Minute):
					t.Fatalf("the run never reached %s", point)
				}
				fail()
				start := time.Now()
				close(ack)
				var o outcome
				select {
				case o = <-done:
				case <-time.After(bound + time.Minute):
					restore()
					t.Fatalf("Execute did not return %v after the store stopped answering at %s", bound+time.Minute, point)
				}
				if took := time.Since(start); took > bound {
					t.Errorf("Execute returned %v after the store stopped answering; want within %v", took, bound)
				}
				re, ok := errors.AsType[*kernel.RunError](o.err)
				if !ok {
					t.Fatalf("err %T %v; want a *kernel.RunError", o.err, o.err)
				}
				if re.Status == store.StatusCompleted || !re.Status.Terminal() {
					t.Errorf("run error status %s; want a terminal status other than completed", re.Status)
				}
				if o.res == nil || o.res.Status != re.Status || o.res.Delivered {
					t.Fatalf("result %+v; want status %s, not delivered", o.res, re.Status)
				}
				// A store that fails at once leaves the lease held: the run
				// destroys what it created, once. A store that hangs holds
				// the run's writes past its lease, and a process whose
				// lease lapsed destroys nothing: the run reads interrupted
				// and recovery (a fleet takeover, a retained run's
				// recovery) may adopt the environment. Never twice.
				if n := p.destroyed.Load(); n > 1 || (n == 0 && fs.Fault != storefault.BlackHole) {
					t.Errorf("the environment the run created was destroyed %d times; want once (or, past a lapsed lease, not at all)", n)
				}

				restore()
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				defer cancel()
				// The run's record is terminal once its lease lapses, at
				// the latest.
				var run store.Run
				for {
					var err error
					run, err = st.GetRun(ctx, runID)
					if err == nil && run.Status.Terminal() {
						break
					}
					if ctx.Err() != nil {
						t.Fatalf("the run still reads %s (%v) after the store answered again", run.Status, err)
					}
					time.Sleep(100 * time.Millisecond)
				}
				if run.Status == store.StatusCompleted {
					t.Fatalf("the run reads completed after its store stopped answering at %s", point)
				}
				events, err := st.Events(ctx, runID, "", 0)
				if err != nil {
					t.Fatal(err)
				}
				if len(events) < o.res.Events {
					t.Errorf("the store holds %d events; the result counts %d recorded", len(events), o.res.Events)
				}
			})
		}
	}
}

// A store that stops answering for a few seconds at a run's terminal
// write, and then answers again, while the run still holds its lease: the
// run's end is tried again until it lands, so a turn that completed reads
// completed (and delivered) — not interrupted, which would make a fleet
// run it again and pay twice (issue 14) — and so is its closing ledger
// entry, so the ledger states the usage the record does. On PostgreSQL (black hole,
// reset) and SQLite (write lock held elsewhere). (runtime.md §15
// lifecycle: every run ends in exactly one terminal state, the one it
// reached when it can still be recorded.)
func TestTerminalWriteRetriedWhileTheLeaseHolds(t *testing.T) {
	// The outage ends well within the lease: at the end the lease has at
	// least two thirds of it left (renewed every third).
	const lease, cleanup, outage = 9 * time.Second, time.Second, 2 * time.Second
	script := `{"turns":[{"steps":[{"text":"a note"},{"usage":{"inputTokens":9,"outputTokens":2},"mode":"cumulative"}]}]}`
	for _, fs := range storefault.Stores() {
		t.Run(string(fs.Fault), func(t *testing.T) {
			st, fail, restore := fs.Open(t)
			var restored atomic.Bool
			p := &hookProvider{Provider: scripted.New(mustScript(t, script), scripted.Options{}), at: func(string) {}}
			check := func(ctx context.Context, out kernel.Outcome) (kernel.Verdict, error) {
				// The turn completed; the store goes away before the run
				// records its end, and comes back a little later.
				fail()
				time.AfterFunc(outage, func() { restored.Store(true); restore() })
				return nonEmpty(ctx, out)
			}
			t.Cleanup(restore)
			runID := kernel.NewID("endretry")
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			res, err := kernel.Execute(ctx, kernel.Request{
				Profile: mustProfile(t, noteWriter), Task: "t", Provider: p, Store: st, Check: check,
				RunID: runID, LeaseTTL: lease, CleanupTimeout: cleanup,
			})
			if err != nil || res == nil || res.Status != store.StatusCompleted || !res.Delivered {
				t.Fatalf("result %+v, err %v; want completed and delivered once the store answered", res, err)
			}
			if !restored.Load() {
				t.Fatal("Execute returned before the store answered again")
			}
			rec, err := kernel.ReadRun(ctx, st, runID)
			if err != nil {
				t.Fatal(err)
			}
			if rec.Run.Status != store.StatusCompleted || rec.Exact == nil || rec.Exact.Delivered == nil || !*rec.Exact.Delivered {
				t.Fatalf("the run reads %s, record %+v; want completed and delivered", rec.Run.Status, rec.Exact)
			}
			if u := rec.Exact.Usage; u == nil || !u.InputTokens.Known() || u.InputTokens.Value != 9 {
				t.Errorf("recorded usage %+v; want the turn's 9 input tokens, exact", u)
			}
			// The closing ledger entry, written in the outage too, was
			// tried again as well: the ledger states what the record says
			// (issue 14: ledger totals equal the sum of run usage), not
			// the last progress entry's floor.
			if s := rec.Spend; !s.InputTokens.Known() || s.InputTokens.Value != 9 || !s.OutputTokens.Known() || s.OutputTokens.Value != 2 {
				t.Errorf("the ledger states %+v spent; want the record's 9 in / 2 out, exact", s)
			}
		})
	}
}
