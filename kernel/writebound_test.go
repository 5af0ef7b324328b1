package kernel_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/internal/storefault"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/memory"
	"github.com/agentrt/agentrt/store/sqlite"
)

// returnsWithin runs f and returns how long it took and its error; it fails the test when f
// has not returned after limit. limit is a hang detector, far past the
// bound the caller asserts on the measured time.
func returnsWithin(t *testing.T, what string, limit time.Duration, f func() error) (time.Duration, error) {
	t.Helper()
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- f() }()
	select {
	case err := <-done:
		return time.Since(start), err
	case <-time.After(limit):
		t.Fatalf("%s still blocked %v after the store stopped answering", what, limit)
		return 0, nil
	}
}

// writeBoundSlack is the slack of the bounds below for scheduling on a
// machine shared by many builds, under the race detector.
const writeBoundSlack = 5 * time.Second

// One store call kind that hangs (a half-open pooled connection) while
// the lease renewals succeed on other connections cannot hold Execute,
// whose caller set no deadline: the event append is bounded by the
// lease as last renewed when it began, and the run ends failed
// (ReasonStoreFailed, a *StoreError of Op "record") — recorded so, since
// the terminal write still lands. (checklist: every run ends in exactly
// one terminal state; runtime.md §15: a store failure is a typed
// failure, never a hang or a success.)
func TestExecuteEndsWhenAnEventAppendHangsWhileRenewalsSucceed(t *testing.T) {
	mem := memory.New(nil)
	st := &stallingStore{Store: mem, after: 1, which: func(call string) bool { return call == "AppendEvents" }}
	provider := scripted.New(mustScript(t, `{"turns":[{"steps":[{"text":"first words"},{"usage":{"inputTokens":9,"outputTokens":2},"mode":"cumulative"},{"text":" and the rest"}]}]}`), scripted.Options{})
	const cleanup = 300 * time.Millisecond
	took, err := returnsWithin(t, "Execute", time.Minute, func() error {
		_, err := kernel.Execute(context.Background(), kernel.Request{
			Profile: mustProfile(t, noteWriter), Task: "t", Provider: provider, Store: st, Check: nonEmpty,
			RunID: "append-hangs", LeaseTTL: kernel.MinLeaseTTL, CleanupTimeout: cleanup,
		})
		return err
	})
	if bound := kernel.MinLeaseTTL + cleanup + writeBoundSlack; took > bound {
		t.Errorf("Execute returned after %v; want within the lease and the cleanup window (%v)", took, bound)
	}
	re, ok := errors.AsType[*kernel.RunError](err)
	if !ok || re.Status != store.StatusFailed || re.Reason != kernel.ReasonStoreFailed {
		t.Fatalf("err %v; want a failed run (store-failed)", err)
	}
	if se, ok := errors.AsType[*kernel.StoreError](err); !ok || se.Op != "record" || !errors.Is(se, context.DeadlineExceeded) {
		t.Errorf("err %v; want a *StoreError of Op record caused by the write's deadline", err)
	}
	if st.stalled.Load() == 0 {
		t.Fatal("no event append stalled: the test did not test anything")
	}
	run, err := mem.GetRun(context.Background(), "append-hangs")
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != store.StatusFailed {
		t.Errorf("the run reads %s; want failed, as Execute returned it", run.Status)
	}
}

// A runtime run whose ledger writes hang while its lease renewals
// succeed: Observe, with no deadline of its own, returns a *StoreError
// (Op "record") within the lease, not the *LeaseLostError (the lease
// holds); Complete still ends the run, recorded completed.
func TestRuntimeRunObserveWhenLedgerWriteHangs(t *testing.T) {
	mem := memory.New(nil)
	st := &stallingStore{Store: mem, which: func(c string) bool { return c == "AppendLedger" }}
	const lease, cleanup = time.Second, time.Second
	r, err := kernel.StartRuntimeRun(context.Background(), kernel.RuntimeRunOptions{WorkspaceID: "w", TaskID: "t", Store: st, LeaseTTL: lease, CleanupTimeout: cleanup})
	if err != nil {
		t.Fatal(err)
	}
	st.stall.Store(true)
	took, err := returnsWithin(t, "Observe", time.Minute, func() error {
		return r.Observe(kernel.RuntimeEvent{Type: kernel.RuntimeEventLLMCall, Usage: ledger.NoUsage()})
	})
	if bound := lease + writeBoundSlack; took > bound {
		t.Errorf("Observe returned after %v; want within the lease (%v)", took, bound)
	}
	if se, ok := errors.AsType[*kernel.StoreError](err); !ok || se.Op != "record" {
		t.Errorf("Observe: %v; want a *StoreError of Op record", err)
	}
	if _, ok := errors.AsType[*kernel.LeaseLostError](err); ok {
		t.Errorf("Observe: %v; the lease was renewed throughout, it is not lost", err)
	}
	took, err = returnsWithin(t, "Complete", time.Minute, func() error {
		return r.Complete(kernel.RuntimeCompletion{Status: store.StatusCompleted})
	})
	if bound := lease + cleanup + writeBoundSlack; took > bound {
		t.Errorf("Complete returned after %v; want within the lease and the cleanup window (%v)", took, bound)
	}
	if err != nil {
		t.Errorf("Complete: %v; the terminal write answers, the run is completed", err)
	}
	run, err := mem.GetRun(context.Background(), r.ID())
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != store.StatusCompleted {
		t.Errorf("the run reads %s; want completed", run.Status)
	}
}

// A runtime run whose store stops answering altogether — PostgreSQL
// black-holed or reset, SQLite's write lock held elsewhere — with a
// model call's ledger write in flight and a caller that set no
// deadline: Observe returns a typed error once the lease (1 s) lapses,
// and Complete then ends the run interrupted (a *RunError, the lease
// lost or the end unrecorded) within the cleanup window; neither is held
// by the store. (checklist: a lost lease reads interrupted; runtime.md
// §15: every store call is bounded.)
func TestRuntimeRunEndsWhenStoreStopsAnswering(t *testing.T) {
	const lease, cleanup = time.Second, time.Second
	for _, fs := range storefault.Stores() {
		t.Run(string(fs.Fault), func(t *testing.T) {
			st, fail, restore := fs.Open(t)
			defer restore()
			r, err := kernel.StartRuntimeRun(context.Background(), kernel.RuntimeRunOptions{WorkspaceID: "w", TaskID: "t", Store: st, LeaseTTL: lease, CleanupTimeout: cleanup})
			if err != nil {
				t.Fatal(err)
			}
			fail()
			took, err := returnsWithin(t, "Observe", time.Minute, func() error {
				return r.Observe(kernel.RuntimeEvent{Type: kernel.RuntimeEventLLMCall, Usage: ledger.NoUsage()})
			})
			if bound := lease + cleanup + storefault.SQLiteBusyTimeout + writeBoundSlack; took > bound {
				t.Errorf("Observe returned after %v; want within the lease (%v)", took, bound)
			}
			_, isStore := errors.AsType[*kernel.StoreError](err)
			_, isLost := errors.AsType[*kernel.LeaseLostError](err)
			if !isStore && !isLost {
				t.Errorf("Observe: %v; want a *StoreError or the *LeaseLostError", err)
			}
			took, err = returnsWithin(t, "Complete", time.Minute, func() error {
				return r.Complete(kernel.RuntimeCompletion{Status: store.StatusCompleted})
			})
			if bound := lease + 2*cleanup + storefault.SQLiteBusyTimeout + writeBoundSlack; took > bound {
				t.Errorf("Complete returned after %v; want within the lease and the cleanup window (%v)", took, bound)
			}
			re, ok := errors.AsType[*kernel.RunError](err)
			if !ok || re.Status != store.StatusInterrupted {
				t.Fatalf("Complete: %v; want the run interrupted", err)
			}
			if r.Status() != store.StatusInterrupted {
				t.Errorf("Status() is %s; want interrupted", r.Status())
			}
			restore()
			// Readers see the run interrupted, never completed.
			rctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			run, err := st.GetRun(rctx, r.ID())
			if err != nil {
				t.Fatal(err)
			}
			if got := store.Effective(run, time.Now().Add(lease)); got == store.StatusCompleted {
				t.Errorf("the run reads %s; a run that lost its store is never completed", got)
			}
		})
	}
}

// Persist after the end, on a store that does not answer, for a caller
// without a deadline: bounded by the cleanup timeout, a *StoreError of
// Op "persist".
func TestRuntimeRunPersistWhenStoreHangs(t *testing.T) {
	st := &stallingStore{Store: memory.New(nil), which: func(c string) bool { return c == "UpdateRun" }}
	const cleanup = time.Second
	r, err := kernel.StartRuntimeRun(context.Background(), kernel.RuntimeRunOptions{WorkspaceID: "w", TaskID: "t", Store: st, LeaseTTL: time.Second, CleanupTimeout: cleanup})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Complete(kernel.RuntimeCompletion{Status: store.StatusCompleted}); err != nil {
		t.Fatal(err)
	}
	st.stall.Store(true)
	took, err := returnsWithin(t, "Persist", time.Minute, func() error {
		return r.Persist(context.Background(), map[string]canonjson.Value{"k": canonjson.StringValue("v")})
	})
	if bound := cleanup + writeBoundSlack; took > bound {
		t.Errorf("Persist returned after %v; want within the cleanup timeout (%v)", took, bound)
	}
	if se, ok := errors.AsType[*kernel.StoreError](err); !ok || se.Op != "persist" {
		t.Errorf("Persist: %v; want a *StoreError of Op persist", err)
	}
	if st.stalled.Load() == 0 {
		t.Fatal("Persist's write did not stall: the test did not test anything")
	}
}

// A runtime run that lost its lease, and that another process has taken
// over since (a newer generation), is not this process's to write:
// Persist is refused with the store's *FenceError (superseded) and the
// new holder's document is left as it is.
func TestRuntimeRunPersistAfterTakeover(t *testing.T) {
	ctx := t.Context()
	mem := memory.New(nil)
	st := &stallingStore{Store: mem, which: func(c string) bool { return c == "UpdateFenced" }}
	r, err := kernel.StartRuntimeRun(ctx, kernel.RuntimeRunOptions{WorkspaceID: "w", TaskID: "t", Store: st, LeaseTTL: time.Second, CleanupTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	st.stall.Store(true) // renewals stall: the lease lapses
	select {
	case <-r.Context().Done():
	case <-time.After(time.Minute):
		t.Fatal("the run's context did not end a minute after its renewals stalled")
	}
	if _, ok := errors.AsType[*kernel.LeaseLostError](context.Cause(r.Context())); !ok {
		t.Fatalf("the run ended with %v; want the *LeaseLostError", context.Cause(r.Context()))
	}
	st.stall.Store(false)
	// Another process takes the run over, with its own document.
	theirs := canonjson.ObjectValue([]canonjson.Member{{Name: "holder", Value: canonjson.StringValue("next")}})
	if _, err := mem.UpdateRun(ctx, r.ID(), func(run *store.Run) error {
		run.Generation++
		run.Owner, run.LeaseUntil, run.Doc = "next", time.Now().Add(time.Minute), theirs
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := r.Complete(kernel.RuntimeCompletion{Status: store.StatusCompleted}); !errors.Is(err, kernel.ErrRuntimeRunState) {
		if re, ok := errors.AsType[*kernel.RunError](err); !ok || re.Reason != kernel.ReasonLeaseLost {
			t.Fatalf("Complete: %v; want the lease lost", err)
		}
	}
	err = r.Persist(ctx, map[string]canonjson.Value{"k": canonjson.StringValue("v")})
	if fe, ok := errors.AsType[*store.FenceError](err); !ok || fe.Reason != store.FenceSuperseded {
		t.Fatalf("Persist: %v; want the store's *FenceError (superseded)", err)
	}
	run, err := mem.GetRun(ctx, r.ID())
	if err != nil {
		t.Fatal(err)
	}
	if !canonjson.Equal(run.Doc, theirs) {
		t.Errorf("the new holder's document became %v", run.Doc)
	}
}

// A runtime run taken over by another process while one of its ledger
// writes hangs: the heartbeat's next renewal is refused, and the lost
// lease starts the cleanup window, so the write in flight is cut within
// it — not held to the lease this process last renewed, which is long —
// and Observe returns the *LeaseLostError. (checklist: a lost lease reads
// interrupted; runtime.md §15: every store call made once the run's
// context ended shares one cleanup window.)
func TestRuntimeRunTakenOverCutsItsWriteInFlight(t *testing.T) {
	mem := memory.New(nil)
	st := &stallingStore{Store: mem, which: func(c string) bool { return c == "AppendLedger" }}
	// The lease is long: the write in flight, bounded by it alone, would
	// take far longer than the renewal that finds the takeover.
	const lease, cleanup = 30 * time.Second, 500 * time.Millisecond
	r, err := kernel.StartRuntimeRun(context.Background(), kernel.RuntimeRunOptions{WorkspaceID: "w", TaskID: "t", Store: st, LeaseTTL: lease, CleanupTimeout: cleanup})
	if err != nil {
		t.Fatal(err)
	}
	st.stall.Store(true)
	took, err := returnsWithin(t, "Observe", 2*time.Minute, func() error {
		go func() {
			// Another process takes the run over while the write hangs.
			for deadline := time.Now().Add(time.Minute); st.stalled.Load() == 0 && time.Now().Before(deadline); {
				time.Sleep(10 * time.Millisecond)
			}
			if _, err := mem.UpdateRun(context.Background(), r.ID(), func(run *store.Run) error {
				run.Generation++
				run.Owner, run.LeaseUntil = "next", time.Now().Add(time.Minute)
				return nil
			}); err != nil {
				t.Error(err)
			}
		}()
		return r.Observe(kernel.RuntimeEvent{Type: kernel.RuntimeEventLLMCall, Usage: ledger.NoUsage()})
	})
	if bound := lease/3 + cleanup + writeBoundSlack; took > bound {
		t.Errorf("Observe returned after %v; want within a renewal and the cleanup window (%v), not the lease (%v)", took, bound, lease)
	}
	if _, ok := errors.AsType[*kernel.LeaseLostError](err); !ok {
		t.Errorf("Observe: %v; want the *LeaseLostError", err)
	}
	if fe, ok := errors.AsType[*store.FenceError](err); !ok || fe.Reason != store.FenceSuperseded {
		t.Errorf("Observe: %v; want the store's refusal (superseded) within", err)
	}
}

// A cancel request ends a runtime run's context, but the caller drives
// the work and may take longer than the cleanup window to wind it down:
// Complete then still records the run cancelled (on SQLite, whose calls
// honor a cancelled context), rather than finding the window closed.
// (checklist: every run ends in exactly one terminal state.)
func TestRuntimeRunCompletedWellAfterACancelRequest(t *testing.T) {
	st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "runs.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	const cleanup = 200 * time.Millisecond
	r, err := kernel.StartRuntimeRun(context.Background(), kernel.RuntimeRunOptions{WorkspaceID: "w", TaskID: "t", Store: st, LeaseTTL: 10 * time.Second, CleanupTimeout: cleanup})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := kernel.RequestCancel(t.Context(), st, r.ID(), "enough", time.Now()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-r.Context().Done():
	case <-time.After(time.Minute):
		t.Fatal("the run's context did not end a minute after its cancellation was requested")
	}
	if _, ok := errors.AsType[*kernel.CancelRequestedError](context.Cause(r.Context())); !ok {
		t.Fatalf("the run's context ended with %v; want the *CancelRequestedError", context.Cause(r.Context()))
	}
	time.Sleep(5 * cleanup) // the caller winds its work down
	if err := r.Complete(kernel.RuntimeCompletion{Status: store.StatusCancelled}); err != nil {
		t.Fatalf("Complete: %v; want the run recorded cancelled", err)
	}
	run, err := st.GetRun(t.Context(), r.ID())
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != store.StatusCancelled {
		t.Errorf("the run reads %s; want cancelled", run.Status)
	}
}
