package sidecar_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/contract/wire"
	"github.com/agentrt/agentrt/sidecar"
	"github.com/agentrt/agentrt/store"
)

// Issue 14 leftovers, item 1 (EXP-11 across a restart; spawn records
// keyed by the environment's incarnation): the scripted provider numbers
// exact environments from a counter that restarts with its process, so
// after a restart a new environment gets the id of an old one. A spawn
// in it under an operation id the old environment used must start a
// fresh process — not replay the old record (a wrong pid, or
// spawn_in_doubt) — whether the new environment came from another
// create key or from the same one (the provider lost the first
// environment); a re-send in the new environment still replays its own
// spawn. Destroying the environment expires its incarnation and spawn
// records.
func TestExactSpawnRunsFreshInAReusedEnvironmentID(t *testing.T) {
	forEachStore(t, testExactSpawnRunsFreshInAReusedEnvironmentID)
}

func testExactSpawnRunsFreshInAReusedEnvironmentID(t *testing.T, open func(t *testing.T) store.Store) {
	ctx := testCtx(t)
	spawn := func(t *testing.T, ts *httptest.Server, env string) int64 {
		t.Helper()
		status, body := do(t, ts, http.MethodPost, "/v1/exact/environments/"+env+"/processes", exactSpawnBody, nil)
		if status != http.StatusOK {
			t.Fatalf("spawn op-1 in %s: %d %s", env, status, body)
		}
		st, err := wire.ParseExactProcessStatus(body)
		if err != nil {
			t.Fatal(err)
		}
		return st.PID
	}
	// Each restart is a new provider process (its counter starts again)
	// and a new server on the same store.
	restart := func(t *testing.T) (*exactHost, *httptest.Server, *sidecar.Server) {
		h := newExactHost(t)
		ts, s := serve(t, h, sidecar.Options{Store: open(t)})
		return h, ts, s
	}

	_, ts1, s1 := restart(t)
	env := exactCreate(t, ts1)
	spawn(t, ts1, env)
	s1.Close()
	ts1.Close()

	for _, c := range []struct {
		name, key string
	}{
		{"another create key", "sidecar-exact-2"},
		{"the same create key", "sidecar-exact"},
	} {
		t.Run(c.name, func(t *testing.T) {
			h, ts, s := restart(t)
			defer func() { s.Close(); ts.Close() }()
			status, body := do(t, ts, http.MethodPost, wire.PathExactEnvironments, strings.Replace(exactCreateBody, `"sidecar-exact"`, `"`+c.key+`"`, 1), nil)
			got, err := wire.ParseExactEnvironment(body)
			if status != http.StatusOK || err != nil {
				t.Fatalf("create: %d %s (%v)", status, body, err)
			}
			if got.ID != env {
				t.Fatalf("the restarted provider made %q, not the reused id %q: the case needs the reuse", got.ID, env)
			}
			pid := spawn(t, ts, env)
			if n := h.spawns.Load(); n != 1 {
				t.Fatalf("%d processes started in the new environment, want 1 (a fresh spawn)", n)
			}
			list := exactList(t, ts, "/v1/exact/environments/"+env+"/processes")
			if len(list) != 1 || list[0].PID != pid {
				t.Fatalf("processes %+v, want the one just started (pid %d)", list, pid)
			}
			// A re-send in this environment replays its own spawn.
			if again := spawn(t, ts, env); again != pid || h.spawns.Load() != 1 {
				t.Fatalf("re-sent spawn: pid %d (want %d), %d processes started", again, pid, h.spawns.Load())
			}
		})
	}

	// Only the last incarnation's spawn is recorded (the older ones were
	// expired when their id was reused), and destroying the environment
	// expires it and its incarnation.
	st := open(t)
	count := func(scope string) int {
		t.Helper()
		recs, err := st.ListIdempotency(context.WithoutCancel(ctx), store.IdempotencyQuery{Scope: scope, Limit: store.MaxIdempotencyBatch})
		if err != nil {
			t.Fatal(err)
		}
		return len(recs)
	}
	if n := count("sidecar.exact.spawn"); n != 1 {
		t.Errorf("%d spawn operations recorded, want 1 (the live incarnation's)", n)
	}
	_, ts, _ := restart(t)
	env = exactCreate(t, ts)
	spawn(t, ts, env)
	if status, body := do(t, ts, http.MethodDelete, "/v1/exact/environments/"+env, "", nil); status != http.StatusOK {
		t.Fatalf("destroy: %d %s", status, body)
	}
	for _, scope := range []string{"sidecar.exact.spawn", "sidecar.exact.spawn.attempt", "sidecar.exact.spawn.outcome", "sidecar.exact.incarnation"} {
		if n := count(scope); n != 0 {
			t.Errorf("%d records of %s after the destroy, want 0", n, scope)
		}
	}
}
