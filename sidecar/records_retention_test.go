package sidecar_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt/sidecar"
	"github.com/agentrt/agentrt/store"
)

// Issue 14 leftovers, item 2 (bounded records): a server with a record
// retention deletes the records of keyed creates and exact spawns whose
// key was first used longer ago than the retention — every attempt and
// outcome with its intent — and keeps the newer ones; a spawn re-sent
// after its record expired runs as a new operation. A retention not
// longer than the create timeout is refused at New.
func TestExpireRecordsDeletesOldOperationsOnly(t *testing.T) {
	forEachStore(t, testExpireRecordsDeletesOldOperationsOnly)
}

func testExpireRecordsDeletesOldOperationsOnly(t *testing.T, open func(t *testing.T) store.Store) {
	ctx := testCtx(t)
	// The checks of what is kept hold only while the records are younger
	// than the retention; on a machine so loaded that a request takes
	// longer, they say so instead of failing on time alone.
	const retention = 5 * time.Second
	st := open(t)
	start := time.Now()
	h := newExactHost(t)
	ts, s := serve(t, h, sidecar.Options{Store: st, RecordRetention: retention, CreateTimeout: time.Second})
	if status, body := do(t, ts, http.MethodPost, "/v1/environments", createBody, nil); status != http.StatusCreated {
		t.Fatalf("keyed create: %d %s", status, body)
	}
	env := exactCreate(t, ts)
	procs := "/v1/exact/environments/" + env + "/processes"
	if status, body := do(t, ts, http.MethodPost, procs, exactSpawnBody, nil); status != http.StatusOK {
		t.Fatalf("spawn op-1: %d %s", status, body)
	}
	// Every record of the operations so far was written by now: past
	// this plus the retention, all of them are older than it.
	written := time.Now()
	count := func(scope string) int {
		t.Helper()
		recs, err := st.ListIdempotency(ctx, store.IdempotencyQuery{Scope: scope, Limit: store.MaxIdempotencyBatch})
		if err != nil {
			t.Fatal(err)
		}
		return len(recs)
	}
	scopes := []string{"sidecar.create", "sidecar.create.attempt", "sidecar.create.outcome",
		"sidecar.exact.spawn", "sidecar.exact.spawn.attempt", "sidecar.exact.spawn.outcome"}
	for _, scope := range scopes {
		if n := count(scope); n != 1 {
			t.Fatalf("%d records of %s before the retention passed, want 1", n, scope)
		}
	}
	if n, err := s.ExpireRecords(ctx); err != nil || (n != 0 && time.Since(start) < retention) {
		t.Fatalf("ExpireRecords before the retention passed = %d, %v; want nothing expired", n, err)
	}

	time.Sleep(time.Until(written.Add(retention + 100*time.Millisecond)))
	op2 := strings.Replace(exactSpawnBody, `"op-1"`, `"op-2"`, 1)
	op2At := time.Now()
	if status, body := do(t, ts, http.MethodPost, procs, op2, nil); status != http.StatusOK {
		t.Fatalf("spawn op-2: %d %s", status, body)
	}
	// The server sweeps on its own too; whichever sweep ran, the old
	// operations are gone and the new one stays.
	if _, err := s.ExpireRecords(ctx); err != nil {
		t.Fatalf("ExpireRecords: %v", err)
	}
	young := time.Since(op2At) < retention
	if !young {
		t.Logf("op-2's records are older than the retention already (a loaded machine): expecting them expired too")
	}
	for _, scope := range scopes {
		want := 0
		if young && strings.HasPrefix(scope, "sidecar.exact.spawn") {
			want = 1 // op-2
		}
		if n := count(scope); n != want {
			t.Errorf("%d records of %s after the retention passed, want %d", n, scope, want)
		}
	}
	before := h.spawns.Load()
	if status, body := do(t, ts, http.MethodPost, procs, op2, nil); status != http.StatusOK || h.spawns.Load() != before {
		// In memory too, so a replay even when its record expired.
		t.Errorf("re-sent op-2: %d %s, %d processes started, want a replay", status, body, h.spawns.Load()-before)
	}
	// op-1's record expired: after a restart (nothing in memory) its
	// re-send runs as a new operation.
	s.Close()
	ts.Close()
	ts2, _ := serve(t, h, sidecar.Options{Store: st, RecordRetention: retention, CreateTimeout: time.Second})
	if status, body := do(t, ts2, http.MethodPost, procs, exactSpawnBody, nil); status != http.StatusOK || h.spawns.Load() != before+1 {
		t.Errorf("re-sent op-1 after its record expired: %d %s, %d processes started, want 1", status, body, h.spawns.Load()-before)
	}

	if _, err := sidecar.New(h, sidecar.Options{Store: st, RecordRetention: time.Second, CreateTimeout: time.Second}); err == nil {
		t.Error("New accepted a record retention no longer than the create timeout")
	}
}
