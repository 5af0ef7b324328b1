package fleet_test

import (
	"net/url"
	"testing"
	"time"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/fleet"
	"github.com/agentrt/agentrt/internal/pgtest"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/store"
)

// A worker whose database stops answering (a black hole: its queries
// wait, nothing fails) for longer than its lease, mid-attempt, then comes
// back: the worker neither hangs nor runs the work twice. Its attempt
// ends interrupted (its lease lapsed; nothing claims it completed), the
// run is run again as a new attempt — by the other worker or by the same
// one once its database answers — and the fleet run ends exactly once,
// completed, with exactly one completed attempt.
func TestWorkerCutOffPastItsLease(t *testing.T) {
	f, conn := openFleet(t)
	schema := schemaOf(t, conn)
	u, err := url.Parse(conn)
	if err != nil {
		t.Fatal(err)
	}
	proxy := pgtest.NewProxy(t, u.Host)
	u.Host = proxy.Addr()
	viaProxy := u.String()

	const lease = 2 * time.Second
	// Each turn works for a few seconds: long enough for the cut to fall
	// inside the first attempt, short enough for a second to finish.
	const script = `{"turns":[{"repeat":true,"steps":[{"text":"working "},{"delayMs":6000},{"text":"done"}]}]}`
	// One scripted provider, environment lookup included
	// (contract.EnvironmentGetter), serves both workers, as it would two
	// workers of one process: the worker that takes the run over
	// re-attaches to the cut-off attempt's environment, whose turn ended
	// cancelled with that attempt (an in-process turn dies with the
	// context of the attempt that lost its lease), and runs the turn
	// again rather than failing (kernel.Reattach).
	shared := provider(t, script)
	o := func() fleet.WorkerOptions {
		return fleet.WorkerOptions{Providers: map[string]contract.Provider{"scripted": shared},
			LeaseTTL: lease, RescueAfter: 2 * time.Second, PollInterval: 100 * time.Millisecond, Backoff: 100 * time.Millisecond, MaxBackoff: time.Second}
	}
	cut, stopCut := startWorker(t, viaProxy, schema, o())

	sub, err := f.Submit(t.Context(), fleet.Submission{Spec: spec(t, "cut off")})
	if err != nil {
		t.Fatal(err)
	}
	// The worker behind the proxy claims the run and starts its attempt.
	deadline := time.Now().Add(2 * time.Minute)
	for {
		r, err := f.Get(t.Context(), sub.RunID)
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Attempts) == 1 && r.Attempts[0].Worker == cut.ID() {
			if rec, err := kernel.ReadRun(t.Context(), f.Store(), r.Attempts[0].RunID); err == nil && rec.Run.Status == store.StatusRunning {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the worker behind the proxy never started an attempt: %+v", r)
		}
		time.Sleep(50 * time.Millisecond)
	}

	proxy.BlackHole()
	other, stopOther := startWorker(t, conn, schema, o())
	time.Sleep(3 * lease)
	proxy.Restore()

	runs := waitEnded(t, f, []string{sub.RunID}, 3*time.Minute)
	r := runs[sub.RunID]
	if r.Status != store.StatusCompleted || r.Outcome == nil || !r.Outcome.Delivered {
		t.Fatalf("run %s, outcome %+v; want completed and delivered", r.Status, r.Outcome)
	}
	if len(r.Attempts) < 2 {
		t.Fatalf("attempts %+v; want the cut-off attempt and another", r.Attempts)
	}
	completed := 0
	for i, a := range r.Attempts {
		rec, err := kernel.ReadRun(t.Context(), f.Store(), a.RunID)
		if err != nil {
			t.Fatalf("attempt %s: %v", a.RunID, err)
		}
		switch {
		case rec.Run.Status == store.StatusCompleted:
			completed++
		case i == 0 && rec.Run.Status != store.StatusInterrupted:
			t.Errorf("the cut-off attempt %s reads %s; want interrupted", a.RunID, rec.Run.Status)
		}
	}
	if completed != 1 {
		t.Errorf("%d attempts completed; want exactly one (attempts %+v)", completed, r.Attempts)
	}
	// Neither worker hangs: both stop (startWorker's stop fails the test
	// after a minute).
	stopCut()
	stopOther()
	s1, s2 := cut.Stats(), other.Stats()
	if n := s1.Completed + s2.Completed; n != 1 {
		t.Errorf("the workers ended %d runs completed; want 1 (cut-off worker %+v, other %+v)", n, s1, s2)
	}
	t.Logf("cut-off worker %+v; other worker %+v; attempts %+v", s1, s2, r.Attempts)
}
