package retained_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/retained"
	"github.com/agentrt/agentrt/store"
)

// Behaviour 56 (FD-08): without OnAdmission the start is refused before
// any provider call.
func TestStartWithoutOnAdmissionIsRefusedBeforeAnyProviderCallBehaviour56(t *testing.T) {
	forEachStore(t, func(t *testing.T, open func(t *testing.T) store.Store) {
		p := &countingProvider{Provider: scripted.New(script(0), scripted.Options{})}
		for _, tc := range []struct {
			name  string
			start func(context.Context) (*retained.Run, error)
		}{
			{"StartRetainedRun", func(ctx context.Context) (*retained.Run, error) {
				return retained.StartRetainedRun(ctx, startOptions(p, open(t), "key-1", "turn-1", nil))
			}},
			{"StartRetainedRunInEnvironment", func(ctx context.Context) (*retained.Run, error) {
				return retained.StartRetainedRunInEnvironment(ctx, retained.InEnvironmentOptions{Provider: p, Store: open(t),
					EnvironmentID: "env", IdempotencyKey: "key-1", Turn: contract.TurnInput{TurnID: ptr("turn-1")}})
			}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				run, err := tc.start(testCtx(t))
				if !errors.Is(err, retained.ErrNoAdmissionHook) || run != nil {
					t.Fatalf("got (%v, %v), want ErrNoAdmissionHook", run, err)
				}
				if n := p.count(); n != 0 {
					t.Fatalf("%d provider calls before the refusal, want 0", n)
				}
			})
		}
	})
}

// Behaviour 56 (FD-08): admissions arrive in order intent → environment →
// dispatched, each durable in the run store (read through a second
// connection) before the hook sees it, and the start returns only after
// the dispatched hook returned.
func TestAdmissionsArriveInOrderDurableBeforeTheHookAndStartAwaitsTheLastBehaviour56(t *testing.T) {
	forEachStore(t, func(t *testing.T, open func(t *testing.T) store.Store) {
		ctx := testCtx(t)
		p := scripted.New(script(0), scripted.Options{})
		observer := open(t)
		release := make(chan struct{})
		rec := &recorder{check: func(ctx context.Context, a retained.Admission) error {
			id := ""
			switch a.Kind {
			case retained.AdmissionIntent:
				id = a.Intent.RunID
			case retained.AdmissionEnvironment, retained.AdmissionDispatched:
				id = mustIntentID(t, a)
			}
			r, err := retained.Load(ctx, observer, id)
			if err != nil {
				return fmt.Errorf("the %s record is not durable: %w", a.Kind, err)
			}
			switch a.Kind {
			case retained.AdmissionIntent:
				if r.Environment != nil || r.Dispatched != nil || r.Status != store.StatusPending {
					return fmt.Errorf("at intent the record is %+v", r)
				}
				if p.Creates() != 0 {
					return errors.New("the environment was created before the intent hook")
				}
			case retained.AdmissionEnvironment:
				if r.Environment == nil || *r.Environment != *a.Environment || r.Dispatched != nil {
					return fmt.Errorf("at environment the record is %+v", r)
				}
				if p.Turns() != 0 {
					return errors.New("the turn was dispatched before the environment hook")
				}
			case retained.AdmissionDispatched:
				if r.Dispatched == nil || r.Dispatched.ControlRef != a.Dispatched.ControlRef || r.Status != store.StatusRunning {
					return fmt.Errorf("at dispatched the record is %+v", r)
				}
				<-release
			}
			return nil
		}}
		done := make(chan error, 1)
		var run *retained.Run
		go func() {
			var err error
			run, err = retained.StartRetainedRun(ctx, startOptions(p, open(t), "key-order", "turn-1", rec.hook))
			done <- err
		}()
		for len(rec.kinds()) < 3 {
			select {
			case err := <-done:
				t.Fatalf("the start returned before the dispatched hook: %v", err)
			case <-time.After(time.Millisecond):
			}
		}
		select {
		case err := <-done:
			t.Fatalf("the start returned while the dispatched hook was still running: %v", err)
		case <-time.After(20 * time.Millisecond):
		}
		close(release)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		want := []retained.AdmissionKind{retained.AdmissionIntent, retained.AdmissionEnvironment, retained.AdmissionDispatched}
		if diff := cmp.Diff(want, rec.kinds()); diff != "" {
			t.Fatalf("admission order (-want +got):\n%s", diff)
		}
		if _, err := run.Result(ctx); err != nil {
			t.Fatal(err)
		}
	})
}

// mustIntentID recovers the record id from an environment or dispatched
// admission: the identity derivation is deterministic.
func mustIntentID(t *testing.T, a retained.Admission) string {
	var key, turn string
	if a.Environment != nil {
		key, turn = a.Environment.IdempotencyKey, a.Environment.TurnID
	} else {
		key, turn = a.Dispatched.IdempotencyKey, a.Dispatched.TurnID
	}
	_, id, err := retained.DeriveIdentity(key, turn)
	if err != nil {
		t.Error(err)
	}
	return id
}

const identityChildEnv = "AGENTRT_TEST_RETAINED_IDENTITY_CHILD"

// Behaviour 57 (RES-06): omitting the identity derives the same session
// and execution ids in two processes from (idempotencyKey, turnId); a
// different turn derives different ones.
func TestOmittedIdentityDerivesTheSameIDsInTwoProcessesBehaviour57(t *testing.T) {
	if os.Getenv(identityChildEnv) == "1" {
		id, rec, err := retained.DeriveIdentity("key-57", "turn-57")
		if err != nil {
			t.Fatal(err)
		}
		fmt.Printf("IDENTITY %s %s %s\n", id.SessionID, id.ExecutionID, rec)
		return
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(testCtx(t), exe, "-test.run=^TestOmittedIdentityDerivesTheSameIDsInTwoProcessesBehaviour57$", "-test.v")
	cmd.Env = append(os.Environ(), identityChildEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	id, rec, err := retained.DeriveIdentity("key-57", "turn-57")
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("IDENTITY %s %s %s", id.SessionID, id.ExecutionID, rec)
	if !strings.Contains(string(out), want) {
		t.Fatalf("the child derived another identity; want %q in:\n%s", want, out)
	}
	other, otherRec, _ := retained.DeriveIdentity("key-57", "turn-58")
	if other == id || otherRec == rec || other.SessionID == other.ExecutionID {
		t.Fatalf("distinct turns or roles share an id: %+v %s vs %+v %s", id, rec, other, otherRec)
	}
	for _, tc := range []struct{ key, turn string }{{"", "t"}, {"k", ""}} {
		if _, _, err := retained.DeriveIdentity(tc.key, tc.turn); !errors.Is(err, retained.ErrInvalidOptions) {
			t.Errorf("DeriveIdentity(%q, %q): %v, want ErrInvalidOptions", tc.key, tc.turn, err)
		}
	}
}

// Behaviour 57 (RES-06): two starters with their own store connections
// and provider clients, given the same options and no identity, admit one
// run with one identity: the second continues the first (one environment,
// one dispatch).
func TestSecondStarterWithSameOptionsContinuesTheSameRunBehaviour57(t *testing.T) {
	forEachStore(t, func(t *testing.T, open func(t *testing.T) store.Store) {
		ctx := testCtx(t)
		p := scripted.New(script(0), scripted.Options{})
		rec := &recorder{}
		first, err := retained.StartRetainedRun(ctx, startOptions(p, open(t), "key-twice", "turn-1", rec.hook))
		if err != nil {
			t.Fatal(err)
		}
		second, err := retained.StartRetainedRun(ctx, startOptions(p.Reconnect(), open(t), "key-twice", "turn-1", rec.hook))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(first.ControlRef(), second.ControlRef()); diff != "" {
			t.Fatalf("control refs differ (-first +second):\n%s", diff)
		}
		id, recID, _ := retained.DeriveIdentity("key-twice", "turn-1")
		ref := first.ControlRef()
		if ref.Record != recID || ref.Run.SessionID != id.SessionID || ref.Run.ExecutionID != id.ExecutionID {
			t.Fatalf("control ref %+v does not carry the derived identity %+v / %s", ref, id, recID)
		}
		if p.Creates() != 1 || p.Turns() != 1 {
			t.Fatalf("%d creates and %d turns, want one of each", p.Creates(), p.Turns())
		}
		// A changed request under the same key and turn is refused.
		changed := startOptions(p, open(t), "key-twice", "turn-1", rec.hook)
		changed.Turn.Prompt = ptr("another job")
		if _, err := retained.StartRetainedRun(ctx, changed); !errors.Is(err, retained.ErrMismatch) {
			t.Fatalf("a changed request: %v, want ErrMismatch", err)
		}
	})
}

// A caller-supplied identity is the provider's too, and a replayed intent
// must recompute exactly.
func TestExplicitIdentityAndReplayedIntent(t *testing.T) {
	forEachStore(t, func(t *testing.T, open func(t *testing.T) store.Store) {
		ctx := testCtx(t)
		p := scripted.New(script(0), scripted.Options{})
		rec := &recorder{}
		o := startOptions(p, open(t), "key-explicit", "turn-1", rec.hook)
		o.Identity = &retained.Identity{SessionID: "session-a", ExecutionID: "execution-a"}
		run, err := retained.StartRetainedRun(ctx, o)
		if err != nil {
			t.Fatal(err)
		}
		if got := run.ControlRef().Run; got.SessionID != "session-a" || got.ExecutionID != "execution-a" {
			t.Fatalf("control ref %+v", got)
		}
		intent := *rec.seen[0].Intent
		o.Intent = &intent
		if _, err := retained.StartRetainedRun(ctx, o); err != nil {
			t.Fatalf("replaying the persisted intent: %v", err)
		}
		bad := intent
		bad.SessionID = "session-b"
		o.Intent = &bad
		var me *retained.MismatchError
		if _, err := retained.StartRetainedRun(ctx, o); !errors.As(err, &me) || me.Field != "sessionId" {
			t.Fatalf("a changed intent: %v, want a mismatch at sessionId", err)
		}
	})
}

// A provider without retained control is refused before anything is
// created.
func TestProviderWithoutRetainedControlIsRefused(t *testing.T) {
	forEachStore(t, func(t *testing.T, open func(t *testing.T) store.Store) {
		p := &countingProvider{Provider: scripted.New(script(0), scripted.Options{}),
			caps: func(c *contract.Capabilities) { c.RetainedControl = nil }}
		rec := &recorder{}
		_, err := retained.StartRetainedRun(testCtx(t), startOptions(p, open(t), "key-refused", "turn-1", rec.hook))
		if !errors.Is(err, retained.ErrNotRetainable) {
			t.Fatalf("got %v, want ErrNotRetainable", err)
		}
		if p.Creates() != 0 || len(rec.kinds()) != 0 {
			t.Fatalf("%d creates and admissions %v after the refusal", p.Creates(), rec.kinds())
		}
	})
}

// FD-08, RES-05, RES-06: the starting handle and its store connection are
// dropped mid-run; a new store connection and a new provider client
// re-attach by the control ref and receive exactly the remaining events
// and the result, under the same identity.
func TestDroppedStarterReattachesFromANewStoreConnection(t *testing.T) {
	forEachStore(t, func(t *testing.T, open func(t *testing.T) store.Store) {
		ctx := testCtx(t)
		p := scripted.New(script(300*time.Millisecond), scripted.Options{})
		starterStore := open(t)
		rec := &recorder{}
		run, err := retained.StartRetainedRun(ctx, startOptions(p, starterStore, "key-drop", "turn-1", rec.hook))
		if err != nil {
			t.Fatal(err)
		}
		ticket := run.ControlRef()
		var seen []retained.Event
		for ev, err := range run.Events(ctx, retained.Cursor{}) {
			if err != nil {
				t.Fatal(err)
			}
			seen = append(seen, ev)
			break
		}
		// The starter dies: its handle, its provider client and its store
		// connection are gone.
		run = nil
		starterStore.Close()

		s2 := open(t)
		again, err := retained.ReconnectRetainedRun(ctx, retained.ReconnectOptions{Provider: p.Reconnect(), Store: s2, Ref: ticket})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(ticket, again.ControlRef()); diff != "" {
			t.Fatalf("identity changed across the re-attach (-before +after):\n%s", diff)
		}
		rest, err := collect(t, ctx, again, seen[0].After())
		if err != nil {
			t.Fatal(err)
		}
		if len(seen) != 1 || len(rest) == 0 {
			t.Fatalf("%d events before the drop and %d after, want 1 and some", len(seen), len(rest))
		}
		res, err := again.Result(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !res.Success || !strings.Contains(res.Text, "second") {
			t.Fatalf("result %+v", res)
		}
		all, err := collect(t, ctx, again, retained.Cursor{})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(all, append(seen, rest...), cmp.Comparer(canonjson.Equal)); diff != "" {
			t.Fatalf("events before the drop plus after it are not the run's events (-all +joined):\n%s", diff)
		}
		for i, ev := range all {
			if ev.Sequence != int64(i+1) {
				t.Fatalf("event %d has sequence %d", i, ev.Sequence)
			}
		}
		r, err := retained.Load(ctx, s2, ticket.Record)
		if err != nil {
			t.Fatal(err)
		}
		if r.Status != store.StatusCompleted {
			t.Fatalf("record status %s, want completed", r.Status)
		}
		// Attach by record id alone (what agentrt runs attach does) finds
		// the same run.
		byID, err := retained.Attach(ctx, p.Reconnect(), open(t), ticket.Record)
		if err != nil {
			t.Fatal(err)
		}
		if byID.ControlRef() != ticket {
			t.Fatalf("Attach found %+v, want %+v", byID.ControlRef(), ticket)
		}
	})
}

// Behaviour 58: reconnecting with a control ref whose request digest (or
// any other coordinate) differs fails loud; so does a record that was
// never dispatched or does not exist.
func TestReconnectWithAChangedControlRefFailsBehaviour58(t *testing.T) {
	forEachStore(t, func(t *testing.T, open func(t *testing.T) store.Store) {
		ctx := testCtx(t)
		p := scripted.New(script(0), scripted.Options{})
		s := open(t)
		run, err := retained.StartRetainedRun(ctx, startOptions(p, s, "key-58", "turn-1", (&recorder{}).hook))
		if err != nil {
			t.Fatal(err)
		}
		good := run.ControlRef()
		for _, tc := range []struct {
			name   string
			change func(*retained.ControlRef)
			want   error
		}{
			{"request digest", func(r *retained.ControlRef) {
				r.Run.RequestDigest = "sha256:" + strings.Repeat("0", 64)
			}, retained.ErrMismatch},
			{"run id", func(r *retained.ControlRef) { r.Run.RunID += "x" }, retained.ErrMismatch},
			{"execution id", func(r *retained.ControlRef) { r.Run.ExecutionID += "x" }, retained.ErrMismatch},
			{"session id", func(r *retained.ControlRef) { r.Run.SessionID += "x" }, retained.ErrMismatch},
			{"environment", func(r *retained.ControlRef) { r.Run.EnvironmentID += "x" }, retained.ErrMismatch},
			{"record", func(r *retained.ControlRef) { r.Record = "retained-nope" }, retained.ErrNoRecord},
		} {
			t.Run(tc.name, func(t *testing.T) {
				ref := good
				tc.change(&ref)
				got, err := retained.ReconnectRetainedRun(ctx, retained.ReconnectOptions{Provider: p.Reconnect(), Store: open(t), Ref: ref})
				if !errors.Is(err, tc.want) || got != nil {
					t.Fatalf("got (%v, %v), want %v", got, err, tc.want)
				}
			})
		}
	})
}

// Behaviour 58: recovery that cannot verify the environment reports
// unverifiable and destroys nothing; the environment still holds the run
// and a later recovery re-attaches.
func TestRecoverUnverifiableNeverDestroysTheEnvironmentBehaviour58(t *testing.T) {
	forEachStore(t, func(t *testing.T, open func(t *testing.T) store.Store) {
		ctx := testCtx(t)
		base := scripted.New(script(0), scripted.Options{})
		run, err := retained.StartRetainedRun(ctx, startOptions(base, open(t), "key-unverifiable", "turn-1", (&recorder{}).hook))
		if err != nil {
			t.Fatal(err)
		}
		ref := run.ControlRef()
		flaky := &countingProvider{Provider: base.Reconnect(), getErr: errors.New("the provider's control plane is unreachable")}
		got, err := retained.RecoverRetainedRun(ctx, retained.RecoverOptions{Provider: flaky, Store: open(t), RunID: ref.Record})
		if err != nil {
			t.Fatal(err)
		}
		if got.Outcome != retained.Unverifiable || got.Run != nil || got.EnvironmentID != ref.Run.EnvironmentID {
			t.Fatalf("recovery %+v, want unverifiable for %s", got, ref.Run.EnvironmentID)
		}
		env, err := base.Get(ctx, ref.Run.EnvironmentID)
		if err != nil || env == nil {
			t.Fatalf("the environment is gone after an unverifiable recovery: %v", err)
		}
		if st, err := env.Status(ctx); err != nil || st == contract.EnvironmentStatus("stopped") {
			t.Fatalf("environment status %q, %v", st, err)
		}
		later, err := retained.RecoverRetainedRun(ctx, retained.RecoverOptions{Provider: base.Reconnect(), Store: open(t), RunID: ref.Record})
		if err != nil {
			t.Fatal(err)
		}
		if later.Outcome != retained.Recovered || later.Via != retained.ViaReattached || later.Run.ControlRef() != ref {
			t.Fatalf("later recovery %+v", later)
		}
		if _, err := later.Run.Result(ctx); err != nil {
			t.Fatal(err)
		}
	})
}

// Behaviour 58: not_found reports nothing to clean: no record, or an
// environment that no longer exists.
func TestRecoverNotFoundReportsNothingToCleanBehaviour58(t *testing.T) {
	forEachStore(t, func(t *testing.T, open func(t *testing.T) store.Store) {
		ctx := testCtx(t)
		p := scripted.New(script(0), scripted.Options{})
		s := open(t)
		none, err := retained.RecoverRetainedRun(ctx, retained.RecoverOptions{Provider: p, Store: s, RunID: "retained-none"})
		if err != nil || none.Outcome != retained.NotFound || none.EnvironmentID != "" {
			t.Fatalf("recovery of no record: %+v, %v", none, err)
		}
		run, err := retained.StartRetainedRun(ctx, startOptions(p, s, "key-gone", "turn-1", (&recorder{}).hook))
		if err != nil {
			t.Fatal(err)
		}
		ref := run.ControlRef()
		if _, err := run.Result(ctx); err != nil {
			t.Fatal(err)
		}
		env, err := p.Get(ctx, ref.Run.EnvironmentID)
		if err != nil {
			t.Fatal(err)
		}
		if err := env.Destroy(ctx); err != nil {
			t.Fatal(err)
		}
		gone, err := retained.RecoverRetainedRun(ctx, retained.RecoverOptions{Provider: p.Reconnect(), Store: open(t), RunID: ref.Record})
		if err != nil || gone.Outcome != retained.NotFound || gone.Run != nil {
			t.Fatalf("recovery after the environment is gone: %+v, %v", gone, err)
		}
		if _, err := retained.Attach(ctx, p.Reconnect(), open(t), ref.Record); !errors.Is(err, retained.ErrEnvironmentGone) {
			t.Fatalf("attach after the environment is gone: %v, want ErrEnvironmentGone", err)
		}
	})
}

// A start whose hook fails after the environment was admitted leaves the
// dispatch unrecorded: the environment is kept; recovery without the turn
// cannot prove a dispatch (unverifiable, nothing destroyed), and with the
// admitted turn it resumes the same identity.
func TestRecoverResumesAnUnrecordedDispatchWithTheAdmittedTurn(t *testing.T) {
	forEachStore(t, func(t *testing.T, open func(t *testing.T) store.Store) {
		ctx := testCtx(t)
		p := scripted.New(script(0), scripted.Options{})
		o := startOptions(p, open(t), "key-resume", "turn-1", (&recorder{fail: retained.AdmissionEnvironment}).hook)
		if _, err := retained.StartRetainedRun(ctx, o); err == nil {
			t.Fatal("the start succeeded although its hook failed")
		}
		id, recID, _ := retained.DeriveIdentity("key-resume", "turn-1")
		if p.Turns() != 0 {
			t.Fatalf("%d turns dispatched after a failed environment hook", p.Turns())
		}
		blind, err := retained.RecoverRetainedRun(ctx, retained.RecoverOptions{Provider: p.Reconnect(), Store: open(t), RunID: recID})
		if err != nil || blind.Outcome != retained.Unverifiable {
			t.Fatalf("recovery without the turn: %+v, %v", blind, err)
		}
		if env, err := p.Get(ctx, blind.EnvironmentID); err != nil || env == nil {
			t.Fatalf("the environment was not kept: %v", err)
		}
		wrong := o.Turn
		wrong.Prompt = ptr("not the admitted turn")
		if got, _ := retained.RecoverRetainedRun(ctx, retained.RecoverOptions{Provider: p.Reconnect(), Store: open(t), RunID: recID, Turn: &wrong}); got.Outcome != retained.Unverifiable {
			t.Fatalf("recovery with another turn: %+v", got)
		}
		hook := &recorder{}
		got, err := retained.RecoverRetainedRun(ctx, retained.RecoverOptions{Provider: p.Reconnect(), Store: open(t), RunID: recID, Turn: &o.Turn, OnAdmission: hook.hook})
		if err != nil || got.Outcome != retained.Recovered || got.Via != retained.ViaResumed {
			t.Fatalf("recovery with the turn: %+v, %v", got, err)
		}
		if ref := got.Run.ControlRef().Run; ref.SessionID != id.SessionID || ref.ExecutionID != id.ExecutionID {
			t.Fatalf("resumed under %+v, want %+v", ref, id)
		}
		if diff := cmp.Diff([]retained.AdmissionKind{retained.AdmissionDispatched}, hook.kinds()); diff != "" {
			t.Fatalf("recovery admissions (-want +got):\n%s", diff)
		}
		if res, err := got.Run.Result(ctx); err != nil || !res.Success {
			t.Fatalf("result %+v, %v", res, err)
		}
		// Recovering again re-attaches; nothing is dispatched twice.
		again, err := retained.RecoverRetainedRun(ctx, retained.RecoverOptions{Provider: p.Reconnect(), Store: open(t), RunID: recID, Turn: &o.Turn})
		if err != nil || again.Via != retained.ViaReattached || p.Turns() != 1 {
			t.Fatalf("second recovery %+v, %v; %d turns", again, err, p.Turns())
		}
	})
}

// A start whose dispatched hook fails keeps the dispatched run; recovery
// re-attaches to it.
func TestFailedDispatchedHookKeepsTheRunForRecovery(t *testing.T) {
	forEachStore(t, func(t *testing.T, open func(t *testing.T) store.Store) {
		ctx := testCtx(t)
		p := scripted.New(script(0), scripted.Options{})
		if _, err := retained.StartRetainedRun(ctx, startOptions(p, open(t), "key-hook", "turn-1", (&recorder{fail: retained.AdmissionDispatched}).hook)); err == nil {
			t.Fatal("the start succeeded although its hook failed")
		}
		_, recID, _ := retained.DeriveIdentity("key-hook", "turn-1")
		got, err := retained.RecoverRetainedRun(ctx, retained.RecoverOptions{Provider: p.Reconnect(), Store: open(t), RunID: recID})
		if err != nil || got.Outcome != retained.Recovered || got.Via != retained.ViaReattached {
			t.Fatalf("recovery %+v, %v", got, err)
		}
		// The scripted turn counts itself when it starts playing, which
		// may be after recovery returned: wait for the run's result.
		if _, err := got.Run.Result(ctx); err != nil {
			t.Fatal(err)
		}
		if p.Turns() != 1 {
			t.Fatalf("%d turns, want 1", p.Turns())
		}
	})
}
