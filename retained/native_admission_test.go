package retained_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/retained"
	"github.com/agentrt/agentrt/store"
)

// Spec runtime §3.8 (FD-08): a native continuation of a retained run is
// admitted like every retained run. Its intent and environment records
// are durable — read back through another store connection — and seen by
// the hook before the provider is sent anything; its dispatched record
// (the continued run's control reference) is durable before the hook
// sees it and before the caller gets the result. Another process
// re-attaches to the continued run by its claim ticket; the same request
// sent again continues the same admission, and the provider replays the
// continuation instead of continuing twice. On SQLite and PostgreSQL.
func TestRetainedNativeContinuationIsAdmitted(t *testing.T) {
	forEachStore(t, func(t *testing.T, open func(t *testing.T) store.Store) {
		ctx := testCtx(t)
		base := scripted.New(script(0), scripted.Options{})
		run := finished(t, ctx, base, open(t), "key-native-admit")
		other := open(t)
		rec := &recorder{check: func(ctx context.Context, a retained.Admission) error {
			var id string
			switch a.Kind {
			case retained.AdmissionIntent:
				id = a.Intent.RunID
			case retained.AdmissionEnvironment, retained.AdmissionDispatched:
				id, _ = retained.NativeContinuationRecordID("key-native-admit", "continue-1")
			}
			r, err := retained.Load(ctx, other, id)
			if err != nil {
				return fmt.Errorf("%s: the record is not durable: %w", a.Kind, err)
			}
			sent := base.Counters().NativeContinuations
			switch {
			case a.Kind == retained.AdmissionIntent && sent != 0:
				return errors.New("the continuation was sent before its intent was admitted")
			case a.Kind == retained.AdmissionEnvironment && (r.Environment == nil || sent != 0):
				return fmt.Errorf("environment record %+v, %d continuations sent", r.Environment, sent)
			case a.Kind == retained.AdmissionDispatched && (r.Dispatched == nil || r.Dispatched.ControlRef != a.Dispatched.ControlRef):
				return fmt.Errorf("dispatched record %+v", r.Dispatched)
			}
			return nil
		}}
		turn := contract.NativeContextContinuationTurn{Prompt: ptr("and now the summary")}
		req, err := run.BeginNativeContinuation(ctx, "continue-1", turn)
		if err != nil {
			t.Fatal(err)
		}
		opts := retained.NativeContinueOptions{Request: req, Continuation: contract.NativeContinuationOptions{Turn: turn}, OnAdmission: rec.hook}
		cont, err := run.ContinueNativeRetained(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]retained.AdmissionKind{retained.AdmissionIntent, retained.AdmissionEnvironment, retained.AdmissionDispatched}, rec.kinds()); diff != "" {
			t.Fatalf("admissions (-want +got):\n%s", diff)
		}
		if !cont.Result.Succeeded() || cont.ControlRef.Run != *cont.Result.ControlRef || cont.ControlRef.Record == run.ControlRef().Record {
			t.Fatalf("continuation %+v", cont)
		}
		stored, err := retained.Load(ctx, other, cont.ControlRef.Record)
		if err != nil {
			t.Fatal(err)
		}
		in := stored.Intent
		if in.NativeContinuation == nil || in.NativeContinuation.Continues != run.ControlRef().Record || in.NativeContinuation.OperationID != "continue-1" ||
			in.NativeContinuation.RequestDigest != req.RequestDigest || in.TurnDigest != req.TurnDigest || in.SessionID != run.ControlRef().Run.SessionID {
			t.Errorf("intent %+v", in)
		}
		if stored.Status != store.StatusRunning && !stored.Status.Terminal() {
			t.Errorf("record status %s after the dispatch", stored.Status)
		}

		// Another process re-attaches to the continued run by its ticket.
		attached, err := retained.ReconnectRetainedRun(ctx, retained.ReconnectOptions{Provider: base.Reconnect(), Store: open(t), Ref: cont.ControlRef})
		if err != nil {
			t.Fatal(err)
		}
		if res, err := attached.Result(ctx); err != nil || !res.Success {
			t.Errorf("the continued run's result %+v, %v", res, err)
		}
		// The same request again, from another handle: the same admission.
		again, err := retained.ReconnectRetainedRun(ctx, retained.ReconnectOptions{Provider: base.Reconnect(), Store: open(t), Ref: run.ControlRef()})
		if err != nil {
			t.Fatal(err)
		}
		replay, err := again.ContinueNativeRetained(ctx, retained.NativeContinueOptions{Request: req, Continuation: opts.Continuation, OnAdmission: (&recorder{}).hook})
		if err != nil {
			t.Fatal(err)
		}
		if replay.ControlRef != cont.ControlRef || replay.Result.Acknowledgement.Status != contract.ContinuationStatusReplayed {
			t.Errorf("replay %+v; want the same admission, replayed", replay)
		}
		if n := base.Counters().NativeContinuations; n != 1 {
			t.Errorf("%d native continuations, want 1", n)
		}
	})
}

// A native continuation whose admission stops (the hook refuses its
// environment record) sends nothing; its record holds intent and
// environment, and RecoverRetainedRun reports it Unverifiable — it never
// dispatches a continuation as a turn, nor destroys the environment it
// shares with the continued run. Without a hook nothing happens at all.
func TestRetainedNativeContinuationStoppedBeforeTheSend(t *testing.T) {
	forEachStore(t, func(t *testing.T, open func(t *testing.T) store.Store) {
		ctx := testCtx(t)
		base := scripted.New(script(0), scripted.Options{})
		st := open(t)
		run := finished(t, ctx, base, st, "key-native-stop")
		turn := contract.NativeContextContinuationTurn{Prompt: ptr("more")}
		req, err := run.BeginNativeContinuation(ctx, "continue-stop", turn)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := run.ContinueNativeRetained(ctx, retained.NativeContinueOptions{Request: req}); !errors.Is(err, retained.ErrNoAdmissionHook) {
			t.Fatalf("without a hook: %v", err)
		}
		rec := &recorder{fail: retained.AdmissionEnvironment}
		if _, err := run.ContinueNativeRetained(ctx, retained.NativeContinueOptions{Request: req, Continuation: contract.NativeContinuationOptions{Turn: turn}, OnAdmission: rec.hook}); err == nil {
			t.Fatal("a refused admission continued")
		}
		if n := base.Counters().NativeContinuations; n != 0 {
			t.Fatalf("%d continuations sent before the admission was complete", n)
		}
		id, err := retained.NativeContinuationRecordID("key-native-stop", "continue-stop")
		if err != nil {
			t.Fatal(err)
		}
		got, err := retained.RecoverRetainedRun(ctx, retained.RecoverOptions{Provider: base.Reconnect(), Store: open(t), RunID: id})
		if err != nil || got.Outcome != retained.Unverifiable || got.EnvironmentID != run.ControlRef().Run.EnvironmentID {
			t.Fatalf("recovery %+v, %v; want Unverifiable naming the shared environment", got, err)
		}
		if n := base.Counters().NativeContinuations; n != 0 {
			t.Errorf("recovery sent %d continuations", n)
		}
		if _, err := retained.ReconnectRetainedRun(ctx, retained.ReconnectOptions{Provider: base.Reconnect(), Store: open(t), Ref: run.ControlRef()}); err != nil {
			t.Errorf("the continued run's environment is gone: %v", err)
		}
	})
}
