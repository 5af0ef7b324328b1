package retained_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/internal/storefault"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/retained"
	"github.com/agentrt/agentrt/store"
)

// Runtime §3.8 cancel({operationId}) with a store that stops answering
// (PostgreSQL black-holed or resetting, SQLite locked): Cancel returns
// within its store bound — DefaultCancelStoreTimeout, or the request's
// StoreTimeout — for a caller without a deadline, never in a minute. Its
// outcome is unknown (status and effect "unknown"), a typed
// *retained.CancelUnknownError wrapping the *kernel.StoreError, the
// provider was never asked and the run is not reported cancelled. Once
// the store answers, the same operation id cancels the run.
func TestCancelOnADeadStoreIsBoundedAndUnknown(t *testing.T) {
	for _, sk := range storefault.Stores() {
		for _, tc := range []struct {
			name    string
			timeout time.Duration
			bound   time.Duration
		}{
			{"default", 0, retained.DefaultCancelStoreTimeout},
			{"one-second", time.Second, time.Second},
		} {
			t.Run(string(sk.Fault)+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				st, fail, restore := sk.Open(t)
				w := &wrapped{Provider: scripted.New(script(time.Minute), scripted.Options{})}
				ctx := testCtx(t)
				run, err := retained.StartRetainedRun(ctx, startOptions(w, st, "key-cancel-"+tc.name, "turn-1", (&recorder{}).hook))
				if err != nil {
					t.Fatal(err)
				}
				fail()
				start := time.Now()
				out, err := run.Cancel(context.Background(), retained.CancelRequest{OperationID: "op-dead-store", StoreTimeout: tc.timeout})
				took := time.Since(start)
				// The bound plus slack for a machine shared by many builds.
				if limit := tc.bound + 10*time.Second; took > limit {
					t.Errorf("Cancel returned after %v; want within %v", took, limit)
				}
				cu, ok := errors.AsType[*retained.CancelUnknownError](err)
				if !ok || cu.Sent || cu.OperationID != "op-dead-store" || !errors.Is(err, retained.ErrCancelUnknown) {
					t.Fatalf("err %T %v; want a *retained.CancelUnknownError, not sent", err, err)
				}
				if se, ok := errors.AsType[*kernel.StoreError](err); !ok || se.Op != "cancel" {
					t.Errorf("err %v; want it to wrap the store's failure (Op cancel)", err)
				}
				if out.Status != contract.StatusUnknown || out.Effect != contract.EffectUnknown || out.Message == nil {
					t.Errorf("outcome %+v; want status and effect unknown, with a message", out)
				}
				if out.Snapshot.Status != nil && *out.Snapshot.Status == contract.SessionCancelled {
					t.Errorf("snapshot %+v claims the run cancelled", out.Snapshot)
				}
				if acks := w.acks(); len(acks) != 0 {
					t.Errorf("the provider was asked to cancel (%v) although the operation was never bound", acks)
				}
				restore()
				out, err = run.Cancel(ctx, retained.CancelRequest{OperationID: "op-dead-store", StoreTimeout: tc.timeout})
				if err != nil || (out.Status != contract.StatusAccepted && out.Status != contract.StatusReplayed) {
					t.Fatalf("cancel once the store answers: %+v, %v; want accepted", out, err)
				}
				snap, err := run.StatusWait(ctx, 30*time.Second)
				if err != nil || snap.Status == nil || *snap.Status != contract.SessionCancelled {
					t.Errorf("status after the cancel: %+v, %v; want cancelled", snap, err)
				}
			})
		}
	}
}

// A cancel store timeout outside (0, 30 s] is refused before anything
// is bound or sent.
func TestCancelRefusesAnUnboundedStoreTimeout(t *testing.T) {
	forEachStore(t, func(t *testing.T, open func(t *testing.T) store.Store) {
		w := &wrapped{Provider: scripted.New(script(0), scripted.Options{})}
		ctx := testCtx(t)
		run := finished(t, ctx, w, open(t), "key-cancel-refused")
		for _, d := range []time.Duration{-time.Second, time.Minute} {
			if _, err := run.Cancel(ctx, retained.CancelRequest{OperationID: "op-refused", StoreTimeout: d}); !errors.Is(err, retained.ErrInvalidOptions) {
				t.Errorf("StoreTimeout %v: %v; want ErrInvalidOptions", d, err)
			}
		}
		if acks := w.acks(); len(acks) != 0 {
			t.Errorf("the provider was asked to cancel (%v)", acks)
		}
	})
}

// A provider that stops answering a cancellation leaves it unknown
// within ProviderTimeout, for a caller without a deadline: Cancel used
// to wait on the provider for as long as the caller's context lasted.
// The request was sent (Sent), so the same operation id asks again.
func TestCancelOnAProviderThatDoesNotAnswerIsBoundedAndUnknown(t *testing.T) {
	forEachStore(t, func(t *testing.T, open func(t *testing.T) store.Store) {
		w := &wrapped{Provider: scripted.New(script(time.Minute), scripted.Options{})}
		w.cancelHangs.Store(true)
		ctx := testCtx(t)
		run, err := retained.StartRetainedRun(ctx, startOptions(w, open(t), "key-cancel-hang", "turn-1", (&recorder{}).hook))
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		out, err := run.Cancel(context.Background(), retained.CancelRequest{OperationID: "op-hang", ProviderTimeout: 200 * time.Millisecond})
		if took := time.Since(start); took > 10*time.Second {
			t.Errorf("Cancel returned after %v; want within its 200 ms provider bound", took)
		}
		cu, ok := errors.AsType[*retained.CancelUnknownError](err)
		if !ok || !cu.Sent || out.Status != contract.StatusUnknown || out.Effect != contract.EffectUnknown {
			t.Fatalf("outcome %+v, err %v; want unknown, sent", out, err)
		}
		w.cancelHangs.Store(false)
		out, err = run.Cancel(ctx, retained.CancelRequest{OperationID: "op-hang"})
		if err != nil || (out.Status != contract.StatusAccepted && out.Status != contract.StatusReplayed) {
			t.Fatalf("the same operation once the provider answers: %+v, %v; want accepted", out, err)
		}
	})
}
