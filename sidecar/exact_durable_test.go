package sidecar_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/contract/wire"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/sidecar"
	"github.com/agentrt/agentrt/store"
)

// exactHost serves the scripted provider's exact facet with two faults
// a real machine has: hidden pids are unknown to the provider (their
// process died with the server that started them, and nothing recovered
// it), and spawns counts every process really started.
type exactHost struct {
	*scripted.Provider
	hidden atomic.Int64 // a pid Get does not know; 0: none
	spawns atomic.Int64
}

func (h *exactHost) ExactProcess() contract.ExactProcessProvider {
	return exactFacet{h.Provider.ExactProcess(), h}
}

type exactFacet struct {
	contract.ExactProcessProvider
	h *exactHost
}

func (f exactFacet) Get(ctx context.Context, id string) (contract.ExactProcessEnvironment, error) {
	env, err := f.ExactProcessProvider.Get(ctx, id)
	if env == nil || err != nil {
		return env, err
	}
	return exactEnvironment{env, f.h}, nil
}

type exactEnvironment struct {
	contract.ExactProcessEnvironment
	h *exactHost
}

func (e exactEnvironment) Processes() contract.ExactProcessManager {
	return exactManager{e.ExactProcessEnvironment.Processes(), e.h}
}

type exactManager struct {
	contract.ExactProcessManager
	h *exactHost
}

func (m exactManager) Get(ctx context.Context, pid int64) (contract.ExactProcess, error) {
	if pid == m.h.hidden.Load() {
		return nil, nil
	}
	return m.ExactProcessManager.Get(ctx, pid)
}

func (m exactManager) Spawn(ctx context.Context, l *contract.ExactProcessLaunch) (contract.ExactProcess, error) {
	m.h.spawns.Add(1)
	return m.ExactProcessManager.Spawn(ctx, l)
}

func newExactHost(t testing.TB) *exactHost {
	t.Helper()
	s, err := scripted.ParseScript([]byte(scripted.ConformanceScript))
	if err != nil {
		t.Fatal(err)
	}
	return &exactHost{Provider: scripted.New(s, scripted.Options{})}
}

// failingOutcomes is a store whose claims of spawn outcomes fail: the
// server that uses it dies, as far as the store knows, between starting
// a process and recording its pid.
type failingOutcomes struct{ store.Store }

func (f failingOutcomes) ClaimIdempotency(ctx context.Context, rec store.Idempotency) (store.Idempotency, bool, error) {
	if strings.HasSuffix(rec.Scope, ".spawn.outcome") {
		return store.Idempotency{}, false, errors.New("the store went away")
	}
	return f.Store.ClaimIdempotency(ctx, rec)
}

// Issue 14 (serve gaps, item 1; EXP-11 over a restart): a spawn whose
// answer was lost, re-sent to a server restarted on the same store, is
// answered with the process the first server started — never a second
// one — and a changed launch under the used operation id is still an
// idempotency conflict. Without the store the restarted server would
// have started a second process.
func TestExactSpawnReplaysAcrossRestart(t *testing.T) {
	forEachStore(t, testExactSpawnReplaysAcrossRestart)
}

func testExactSpawnReplaysAcrossRestart(t *testing.T, open func(t *testing.T) store.Store) {
	h := newExactHost(t)
	ts1, s1 := serve(t, h, sidecar.Options{Store: open(t)})
	env := exactCreate(t, ts1)
	procs := "/v1/exact/environments/" + env + "/processes"
	status, body := do(t, ts1, http.MethodPost, procs, exactSpawnBody, nil)
	if status != http.StatusOK {
		t.Fatalf("spawn: %d %s", status, body)
	}
	first, err := wire.ParseExactProcessStatus(body)
	if err != nil {
		t.Fatal(err)
	}
	s1.Close()
	ts1.Close()

	ts2, _ := serve(t, h, sidecar.Options{Store: open(t)})
	status, body = do(t, ts2, http.MethodPost, procs, exactSpawnBody, nil)
	if status != http.StatusOK {
		t.Fatalf("re-sent spawn after restart: %d %s", status, body)
	}
	again, err := wire.ParseExactProcessStatus(body)
	if err != nil {
		t.Fatal(err)
	}
	if again.PID != first.PID {
		t.Fatalf("the restarted server answered pid %d, want %d", again.PID, first.PID)
	}
	if n := h.spawns.Load(); n != 1 {
		t.Fatalf("%d processes started, want 1", n)
	}
	other := strings.Replace(exactSpawnBody, `"world"`, `"other"`, 1)
	status, body = do(t, ts2, http.MethodPost, procs, other, nil)
	wantError(t, status, body, http.StatusConflict, wire.CodeIdempotencyConflict, nil)
	if n := h.spawns.Load(); n != 1 {
		t.Fatalf("%d processes started after a conflicting re-send, want 1", n)
	}
}

// Issue 14 (serve gaps, item 1): when the server died between starting
// a process and recording its pid, the re-sent spawn cannot know the
// process: it is answered spawn_in_doubt (409, final) and starts none;
// the process that server started and handed to nobody was killed.
// When the pid was recorded but the provider no longer knows the
// process, the answer is spawn_in_doubt too, never a second process.
func TestExactSpawnInDoubtNeverSpawnsTwice(t *testing.T) {
	forEachStore(t, testExactSpawnInDoubtNeverSpawnsTwice)
}

func testExactSpawnInDoubtNeverSpawnsTwice(t *testing.T, open func(t *testing.T) store.Store) {
	t.Run("no recorded pid", func(t *testing.T) {
		h := newExactHost(t)
		ts1, s1 := serve(t, h, sidecar.Options{Store: failingOutcomes{open(t)}})
		env := exactCreate(t, ts1)
		procs := "/v1/exact/environments/" + env + "/processes"
		status, body := do(t, ts1, http.MethodPost, procs, exactSpawnBody, nil)
		if status < 500 {
			t.Fatalf("spawn with a failing store: %d %s, want a fault", status, body)
		}
		s1.Close()
		ts1.Close()

		ts2, _ := serve(t, h, sidecar.Options{Store: open(t)})
		for range 2 {
			status, body = do(t, ts2, http.MethodPost, procs, exactSpawnBody, nil)
			wantError(t, status, body, http.StatusConflict, wire.CodeSpawnInDoubt, nil)
		}
		if n := h.spawns.Load(); n != 1 {
			t.Fatalf("%d processes started, want 1", n)
		}
		list := exactList(t, ts2, procs)
		if len(list) != 1 || list[0].Running {
			t.Fatalf("processes %+v, want the one unrecorded process, killed", list)
		}
	})
	t.Run("recorded pid the provider lost", func(t *testing.T) {
		h := newExactHost(t)
		ts, _ := serve(t, h, sidecar.Options{Store: open(t)})
		env := exactCreate(t, ts)
		// Its own operation id: the store is the one the first case used.
		lostBody := strings.Replace(exactSpawnBody, `"op-1"`, `"op-lost"`, 1)
		procs := "/v1/exact/environments/" + env + "/processes"
		status, body := do(t, ts, http.MethodPost, procs, lostBody, nil)
		st, err := wire.ParseExactProcessStatus(body)
		if status != http.StatusOK || err != nil {
			t.Fatalf("spawn: %d %s (%v)", status, body, err)
		}
		h.hidden.Store(st.PID)
		status, body = do(t, ts, http.MethodPost, procs, lostBody, nil)
		wantError(t, status, body, http.StatusConflict, wire.CodeSpawnInDoubt, nil)
		if n := h.spawns.Load(); n != 1 {
			t.Fatalf("%d processes started, want 1", n)
		}
	})
}

func exactCreate(t testing.TB, ts *httptest.Server) string {
	t.Helper()
	status, body := do(t, ts, http.MethodPost, wire.PathExactEnvironments, exactCreateBody, nil)
	if status != http.StatusOK {
		t.Fatalf("exact create: %d %s", status, body)
	}
	env, err := wire.ParseExactEnvironment(body)
	if err != nil {
		t.Fatal(err)
	}
	return env.ID
}

func exactList(t testing.TB, ts *httptest.Server, procs string) []contract.ExactProcessStatus {
	t.Helper()
	status, body := do(t, ts, http.MethodGet, procs, "", nil)
	list, err := wire.ParseExactProcessList(body)
	if status != http.StatusOK || err != nil {
		t.Fatalf("list: %d %s (%v)", status, body, err)
	}
	return list.Processes
}
