package fleet_test

import (
	"testing"
	"time"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/fleet"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/store"
)

// NSO-01/NSO-02 through the fleet: an attempt on a provider whose
// environments can be found by id (the scripted provider here, a remote
// server's in production) runs in an environment the worker pins to the
// fleet run's turn id. The pin must not hide the environment's owner
// stream: the attempt's run record binds the native session the provider
// observed, as a kernel run outside the fleet does.
func TestFleetAttemptBindsTheNativeSession(t *testing.T) {
	f, conn := openFleet(t)
	sub, err := f.Submit(t.Context(), fleet.Submission{Spec: spec(t, "note")})
	if err != nil {
		t.Fatal(err)
	}
	_, stop := startWorker(t, conn, schemaOf(t, conn), fleet.WorkerOptions{
		Providers: map[string]contract.Provider{"scripted": provider(t, quickScript)}, LeaseTTL: 3 * time.Second, PollInterval: 50 * time.Millisecond})
	defer stop()
	r := waitEnded(t, f, []string{sub.RunID}, time.Minute)[sub.RunID]
	if r.Status != store.StatusCompleted || len(r.Attempts) != 1 {
		t.Fatalf("run %s, attempts %+v; want completed in one attempt", r.Status, r.Attempts)
	}
	rec, err := kernel.ReadRun(t.Context(), f.Store(), r.Attempts[0].RunID)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Exact == nil || rec.Exact.NativeSessionID == "" {
		t.Errorf("the attempt's record %+v binds no native session; want the scripted provider's observed session (NSO-02)", rec.Exact)
	}
}
