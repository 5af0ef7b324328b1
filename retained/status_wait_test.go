package retained_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/retained"
	"github.com/agentrt/agentrt/store"
)

// Spec runtime §3.8 status({waitMs}): the handle's status is a bounded
// long-poll. Without a wait it answers at once; with one it returns as
// soon as the run is terminal (effect not_live, the end recorded) — not
// at the end of the wait — and a run still live when the wait ends is an
// answer (effect unknown), not an error. A wait out of range is refused
// before the provider is asked, and the caller's context ends a wait.
func TestStatusWaitLongPollsUntilTerminal(t *testing.T) {
	forEachStore(t, func(t *testing.T, open func(t *testing.T) store.Store) {
		ctx := testCtx(t)
		st := open(t)
		run, err := retained.StartRetainedRun(ctx, startOptions(scripted.New(script(400*time.Millisecond), scripted.Options{}), st, "key-wait", "turn-1", (&recorder{}).hook))
		if err != nil {
			t.Fatal(err)
		}
		now, err := run.StatusWait(ctx, 0)
		if err != nil {
			t.Fatal(err)
		}
		if now.Terminal() || now.Effect != contract.EffectUnknown {
			t.Fatalf("an immediate snapshot of a run that pauses for 400ms: %+v", now)
		}
		start := time.Now()
		snap, err := run.StatusWait(ctx, 20*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if took := time.Since(start); took > 10*time.Second {
			t.Errorf("the wait took %v: it must end when the run does", took)
		}
		if snap.Status == nil || *snap.Status != contract.SessionCompleted || snap.Effect != contract.EffectNotLive {
			t.Fatalf("snapshot after the wait %+v", snap)
		}
		rec, err := open(t).GetRun(ctx, run.ControlRef().Record)
		if err != nil || rec.Status != store.StatusCompleted {
			t.Errorf("the record after a terminal status: %v, %v", rec.Status, err)
		}
		for _, bad := range []time.Duration{-time.Millisecond, retained.MaxStatusWait + time.Millisecond} {
			if _, err := run.StatusWait(ctx, bad); !errors.Is(err, retained.ErrInvalidOptions) {
				t.Errorf("wait %v: %v, want ErrInvalidOptions", bad, err)
			}
		}
	})
}

// A run still live when the wait ends is reported live, after about the
// wait; a caller's context that ends first ends the wait with its error.
func TestStatusWaitIsBounded(t *testing.T) {
	forEachStore(t, func(t *testing.T, open func(t *testing.T) store.Store) {
		ctx := testCtx(t)
		run, err := retained.StartRetainedRun(ctx, startOptions(scripted.New(script(time.Minute), scripted.Options{}), open(t), "key-bounded", "turn-1", (&recorder{}).hook))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_, _ = run.Cancel(context.Background(), retained.CancelRequest{OperationID: "cleanup"})
		})
		start := time.Now()
		snap, err := run.StatusWait(ctx, 150*time.Millisecond)
		took := time.Since(start)
		if err != nil {
			t.Fatal(err)
		}
		if snap.Terminal() || snap.Effect != contract.EffectUnknown || snap.Status == nil || *snap.Status != contract.SessionRunning {
			t.Fatalf("snapshot of a live run %+v", snap)
		}
		if took < 150*time.Millisecond || took > 10*time.Second {
			t.Errorf("a 150ms wait on a live run took %v", took)
		}
		short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		defer cancel()
		start = time.Now()
		if _, err := run.StatusWait(short, retained.MaxStatusWait); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("a wait whose context ended: %v", err)
		}
		if took := time.Since(start); took > 10*time.Second {
			t.Errorf("the ended context stopped the wait only after %v", took)
		}
	})
}
