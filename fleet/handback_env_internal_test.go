package fleet

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/store"
)

// An attempt whose own kernel lease is lost mid-attempt (its kernel
// store stops answering: renewals, events and its end all stall) while
// its worker keeps the fleet run's claim: the kernel leaves the
// environment alive to "the run's next holder" (kernel rule: no effects
// after a lost lease) and the worker hands the run back, pending. The
// next claim is that holder (issue 14): it re-attaches to the
// environment (kernel.Reattach) rather than leaking it. A turn that had
// completed in it, its end unrecorded, is settled there and never run
// again (runtime.md §15: a turn whose end is known is not run again); a
// turn still running there (a server's, which runs on after its caller
// went away: work in doubt) is followed to its end, never started a
// second time beside it; a turn that died with the lost lease
// (cancelled, nobody asked) runs again in a new environment and the old
// one is destroyed. On a provider that cannot find environments by id
// nobody could re-attach, so the worker that handed the run back
// destroys what its kernel run left. Either way
// every environment the provider created is destroyed exactly once
// (ENV-06) and none is left alive.
func TestHandedBackAttemptsEnvironmentIsNotLeaked(t *testing.T) {
	f, _ := openTestFleet(t)
	pv, err := canonjson.Decode([]byte(reattachProfile))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		// stall cuts the first attempt's kernel store off.
		stall *stallAfter
		// detached: the turn goes on in its environment after its caller
		// went away (a remote server's), unheard.
		detached bool
		// unfindable: the provider cannot find environments by id (no
		// contract.EnvironmentGetter), so nobody could re-attach to one.
		unfindable bool
		script     string
		// wantEnvs is how many environments the run used; wantTurns how
		// many turns were played.
		wantEnvs  int
		wantTurns int64
	}{
		{name: "lost mid-turn: the turn runs again in a new environment", stall: &stallAfter{after: 1}, wantEnvs: 2, wantTurns: 2},
		{name: "lost once its turn ended unrecorded: the turn is re-attached to, not run again", stall: &stallAfter{atType: "done"}, wantEnvs: 1, wantTurns: 1},
		// The turn outlives the handed-back attempt (still running when
		// the next claim re-attaches: the attempt hands back within its
		// lease plus the kernel's cleanup window): followed, not run again.
		{name: "lost mid-turn on a server that runs it on: the turn is re-attached to, not run again", stall: &stallAfter{after: 1}, detached: true,
			script: `{"turns":[{"repeat":true,"steps":[{"text":"working "},{"delayMs":10000},{"text":"done"}]}]}`, wantEnvs: 1, wantTurns: 1},
		// Nobody can find the environment again: worker A destroys what
		// its kernel run left, and the run runs again.
		{name: "lost mid-turn on a provider that cannot find environments: the worker destroys it, the turn runs again", stall: &stallAfter{after: 1}, unfindable: true, wantEnvs: 2, wantTurns: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
			defer cancel()
			script := tc.script
			if script == "" {
				script = `{"turns":[{"repeat":true,"steps":[{"text":"working "},{"delayMs":300},{"text":"done"}]}]}`
			}
			prov := newEnvLedger(t, script)
			prov.detached = tc.detached
			sub, err := f.Submit(ctx, Submission{Spec: Spec{Profile: pv, Task: "t", Provider: "scripted"}})
			if err != nil {
				t.Fatal(err)
			}
			var use contract.Provider = prov
			if tc.unfindable {
				use = struct{ contract.Provider }{prov}
			}
			o := WorkerOptions{Providers: map[string]contract.Provider{"scripted": use}, LeaseTTL: 2 * time.Second}
			a, err := f.NewWorker(ctx, o)
			if err != nil {
				t.Fatal(err)
			}
			a.kernelStore = func(s store.Store) store.Store {
				tc.stall.Store = s
				return tc.stall
			}
			if err := a.execute(ctx, sub.RunID, ""); !errors.Is(err, errHandBack) {
				t.Fatalf("worker A: %v; want the run handed back", err)
			}
			r, err := f.Get(ctx, sub.RunID)
			if err != nil {
				t.Fatal(err)
			}
			if r.Status != store.StatusPending || len(r.Attempts) != 1 || r.Attempts[0].Status != "released" {
				t.Fatalf("after worker A: run %s, attempts %+v; want pending with one released attempt", r.Status, r.Attempts)
			}
			rec, err := kernel.ReadRun(ctx, f.store, r.Attempts[0].RunID)
			if err != nil || rec.Exact == nil || rec.Exact.EnvironmentID == "" {
				t.Fatalf("worker A's attempt: %+v, %v; want its environment recorded", rec, err)
			}
			if live, err := prov.List(ctx, nil); err != nil || tc.unfindable != (len(live) == 0) {
				t.Fatalf("environments alive after worker A: %+v, %v; want its one environment left to the next holder, or none when none could find it", live, err)
			}

			b, err := f.NewWorker(ctx, o)
			if err != nil {
				t.Fatal(err)
			}
			for {
				err := b.execute(ctx, sub.RunID, "")
				if busy, ok := errors.AsType[*busyError](err); ok {
					// Worker A's kernel lease has not lapsed yet.
					select {
					case <-time.After(time.Until(busy.until) + 50*time.Millisecond):
						continue
					case <-ctx.Done():
						t.Fatalf("worker B waited for worker A's attempt until the deadline: %v", err)
					}
				}
				if err != nil {
					t.Fatalf("worker B: %v", err)
				}
				break
			}
			if r, err = f.Get(ctx, sub.RunID); err != nil {
				t.Fatal(err)
			}
			t.Logf("attempts %+v", r.Attempts)
			if r.Status != store.StatusCompleted || r.Outcome == nil || !r.Outcome.Delivered || r.Outcome.Text != "working done" {
				t.Fatalf("run %s, outcome %+v; want completed, delivered, %q", r.Status, r.Outcome, "working done")
			}
			if n := prov.checkDestroyedOnce(t); n != tc.wantEnvs {
				t.Errorf("%d environments created; want %d", n, tc.wantEnvs)
			}
			if n := prov.Turns(); n != tc.wantTurns {
				t.Errorf("%d turns played; want %d", n, tc.wantTurns)
			}
		})
	}
}
