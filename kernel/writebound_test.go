package kernel_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/memory"
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
