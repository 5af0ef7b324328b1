package fleet_test

import (
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/fleet"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/store"
)

// A run whose environment's stream ended without a terminal event (the
// provider's server closed the stream mid-turn) is in doubt like one
// whose stream broke: its turn may have gone on. The fleet ends it
// interrupted, saying why, and never runs it again — not failed, which
// would claim the work's outcome is known.
func TestStreamEndedWithoutTerminalIsInDoubt(t *testing.T) {
	f, conn := openFleet(t)
	hushed := &flakyServer{Provider: provider(t, quickScript)}
	hushed.hush.Store(true)
	sub, err := f.Submit(t.Context(), fleet.Submission{Spec: spec(t, "a note cut short")})
	if err != nil {
		t.Fatal(err)
	}
	_, stop := startWorker(t, conn, schemaOf(t, conn), fleet.WorkerOptions{Providers: map[string]contract.Provider{"scripted": hushed},
		LeaseTTL: 2 * time.Second, PollInterval: 50 * time.Millisecond})
	r := waitTerminal(t, f, sub.RunID, time.Minute)
	stop()
	if r.Status != store.StatusInterrupted || len(r.Attempts) != 1 || r.Outcome == nil || !strings.Contains(r.Outcome.Error, "in doubt") {
		t.Errorf("run %s, attempts %+v, outcome %+v; want interrupted after one attempt, in doubt", r.Status, r.Attempts, r.Outcome)
	}
	if got := hushed.turns.Load(); got != 1 {
		t.Errorf("%d turns started, want 1 (never re-run)", got)
	}
	if rec, err := kernel.ReadRun(t.Context(), f.Store(), r.Attempts[0].RunID); err != nil || rec.Run.Status != store.StatusFailed || rec.Exact == nil || rec.Exact.Terminal == nil || rec.Exact.Terminal.Reason != kernel.ReasonNoTerminal {
		t.Errorf("the attempt's kernel run: %+v, %v; want it failed without a terminal, as the kernel saw it", rec, err)
	}
}
