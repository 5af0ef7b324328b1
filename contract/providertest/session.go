package providertest

import (
	"context"
	"slices"

	"github.com/agentrt/agentrt/contract"
)

func (o Options) sessionTurn() *contract.TurnInput {
	if o.Sessions.Turn != nil {
		in := *o.Sessions.Turn
		return &in
	}
	return &contract.TurnInput{Prompt: ptr(o.prompt())}
}

// sessionReplay is the testkit's session replay family (spec L.2;
// checklist CTL-01, CTL-05, CTL-07; seed 003 "session-replay"): a detached
// run's control reference names its provider, environment and session; a
// competing reference is refused; its events have stable unique ids; a
// replay after a cursor returns exactly the later ids, from the same
// client and from a reconnected one.
func sessionReplay(t TB, p contract.Provider, opts Options) {
	env := create(t, p, opts.createInput(""))
	c := envCaps(t, p, env)
	if !c.Streaming.Detach || !c.Streaming.Replay {
		t.Skip("the provider declares no detach and replay (streaming.detach, streaming.replay)")
	}
	ctx := bounded(t)
	var (
		ref        *contract.SessionRef
		controlRef contract.RunControlRef
		s          contract.Session
	)
	ok := t.Step("detach-control-reference", func(t TB) {
		d := ability[contract.Dispatcher](t, env, "Dispatcher", "streaming.detach")
		o := ability[contract.SessionOpener](t, env, "SessionOpener", "streaming.replay")
		in := opts.sessionTurn()
		in.Detach = ptr(true)
		var err error
		if ref, err = d.Dispatch(ctx, in); err != nil {
			t.Fatalf("Dispatch: %v", err)
		}
		if ref == nil || ref.ControlRef == nil {
			t.Fatal("a detached session needs a durable control reference")
		}
		if _, err := contract.Validate(contract.KindSessionRef, contract.SessionRefSchema, ref); err != nil {
			t.Fatalf("the session reference is invalid: %v", err)
		}
		controlRef = *ref.ControlRef
		if controlRef.Provider != p.Name() || controlRef.EnvironmentID != env.ID() || controlRef.SessionID == nil || *controlRef.SessionID != ref.ID {
			t.Fatalf("the control reference %+v does not name provider %s, environment %s and session %s", controlRef, p.Name(), env.ID(), ref.ID)
		}
		if s, err = o.Session(ctx, ref.ID, &controlRef); err != nil {
			t.Fatalf("Session: %v", err)
		}
		if s.ID() != ref.ID || s.ControlRef() == nil || !contract.SameRunControlRef(*s.ControlRef(), controlRef) {
			t.Fatal("the session's control reference differs from the dispatch's")
		}
	})
	if !ok {
		return
	}
	t.Step("competing-run-isolation", func(t TB) {
		competing := controlRef
		competing.RunID += "-competing"
		if competing.ExecutionID != nil {
			competing.ExecutionID = ptr(*competing.ExecutionID + "-competing")
		}
		o := env.(contract.SessionOpener)
		rival, err := o.Session(ctx, ref.ID, &competing)
		if err != nil {
			return // refused
		}
		if rival.ControlRef() == nil || !contract.SameRunControlRef(*rival.ControlRef(), competing) {
			return // refused: the session is not bound to the competing run
		}
		execution := ""
		if competing.ExecutionID != nil {
			execution = *competing.ExecutionID
		}
		if _, err := Collect(rival.Events(ctx, "", execution)); err != nil {
			return // refused when read
		}
		t.Error("a session accepted a competing run control reference and served its events")
	})
	var ids []string
	ok = t.Step("stable-event-ids", func(t TB) {
		events, err := Collect(s.Events(ctx, "", ""))
		if err != nil {
			t.Fatalf("Events: %v", err)
		}
		if len(events) < 2 {
			t.Fatalf("the replay check needs at least two events; the run emitted %d", len(events))
		}
		if _, ok := terminal(events); !ok {
			t.Error("the session's event stream did not terminate")
		}
		seen := map[string]bool{}
		for i, e := range events {
			if e.ID == nil || *e.ID == "" {
				t.Fatalf("event %d has no stable id", i)
			}
			if seen[*e.ID] {
				t.Fatalf("event id %s repeats", *e.ID)
			}
			seen[*e.ID] = true
			ids = append(ids, *e.ID)
		}
	})
	if !ok {
		return
	}
	execution := ""
	if controlRef.ExecutionID != nil {
		execution = *controlRef.ExecutionID
	}
	replayAfter := func(t TB, s contract.Session) {
		t.Helper()
		events, err := Collect(s.Events(ctx, ids[0], execution))
		if err != nil {
			t.Fatalf("Events(since %s): %v", ids[0], err)
		}
		var got []string
		for _, e := range events {
			if e.ID != nil {
				got = append(got, *e.ID)
			} else {
				got = append(got, "")
			}
		}
		if !slices.Equal(got, ids[1:]) {
			t.Errorf("replay after %s returned %v, want %v", ids[0], got, ids[1:])
		}
	}
	t.Step("same-client-replay", func(t TB) { replayAfter(t, s) })
	t.Step("reconnected-replay", func(t TB) {
		renv := reconnectedEnvironment(t, opts.reconnect(p), env)
		o := ability[contract.SessionOpener](t, renv, "SessionOpener", "streaming.replay")
		again, err := o.Session(ctx, ref.ID, &controlRef)
		if err != nil {
			t.Fatalf("reconnected Session: %v", err)
		}
		if again.ID() != ref.ID || again.ControlRef() == nil || !contract.SameRunControlRef(*again.ControlRef(), controlRef) {
			t.Fatal("the reconnected session's identity differs from the dispatch's")
		}
		replayAfter(t, again)
	})
}

// reconnectedEnvironment finds env through a reconnected provider client;
// a provider that cannot get environments by id keeps env.
func reconnectedEnvironment(t TB, rp contract.Provider, env contract.Environment) contract.Environment {
	t.Helper()
	g, ok := rp.(contract.EnvironmentGetter)
	if !ok {
		return env
	}
	renv, err := g.Get(context.Background(), env.ID())
	if err != nil || renv == nil {
		t.Fatalf("the reconnected provider does not find environment %s: %v", env.ID(), err)
	}
	return renv
}

// cancellationAcknowledgement is the retained-control cancellation family
// (spec E and O.27; checklist CAN-01..CAN-05, CTL-08; seed 003
// "cancellation acknowledgement"; the testkit has no runner for it):
// cancelling an exact run is acknowledged with a known effect and matches
// its request; the same request again is replayed with the same effect;
// the same operation id with a different request is a conflict naming the
// original digest; a run the session does not hold is unknown, explained
// and not retryable.
func cancellationAcknowledgement(t TB, p contract.Provider, opts Options) {
	env := create(t, p, opts.createInput(""))
	c := envCaps(t, p, env)
	if c.RetainedControl == nil {
		t.Skip("the provider declares no retainedControl")
	}
	ctx := bounded(t)
	d := ability[contract.Dispatcher](t, env, "Dispatcher", "retainedControl")
	o := ability[contract.SessionOpener](t, env, "SessionOpener", "retainedControl")
	in := opts.sessionTurn()
	live := opts.Sessions.LivePrompt != ""
	if live {
		in = &contract.TurnInput{Prompt: ptr(opts.Sessions.LivePrompt)}
	}
	in.Detach = ptr(true)
	ref, err := d.Dispatch(ctx, in)
	if err != nil {
		t.Fatalf("Dispatch: %v", err)
	}
	run, ok := exactRef(ref.ControlRef)
	if !ok {
		t.Fatal("retained control needs an exact control reference from dispatch")
	}
	s, err := o.Session(ctx, ref.ID, ref.ControlRef)
	if err != nil {
		t.Fatalf("Session: %v", err)
	}
	if !live {
		if _, err := s.Result(ctx); err != nil {
			t.Fatalf("the run did not end: %v", err)
		}
	}
	rc := ability[contract.RunCanceller](t, s, "RunCanceller", "retainedControl")
	req, err := contract.NewRunCancellationRequest("providertest-cancel", run, ptr("providertest"))
	if err != nil {
		t.Fatal(err)
	}
	check := func(t TB, r *contract.RunCancellationRequest, ack *contract.RunCancellationAcknowledgement, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("CancelRun: %v", err)
		}
		if _, err := contract.Validate(contract.KindRunCancellationAcknowledgement, contract.RunCancellationAcknowledgementSchema, ack); err != nil {
			t.Fatalf("the acknowledgement is invalid: %v", err)
		}
		if !contract.CancellationAcknowledgementMatchesRequest(r, ack) {
			t.Error("the acknowledgement does not repeat the request's operation, digest and run")
		}
	}
	var first *contract.RunCancellationAcknowledgement
	ok = t.Step("cancel-accepted", func(t TB) {
		ack, err := rc.CancelRun(ctx, req)
		check(t, req, ack, err)
		first = ack
		if ack.Status != contract.StatusAccepted || ack.Effect == contract.EffectUnknown {
			t.Fatalf("a first cancellation answered %s/%s, want accepted with a known effect", ack.Status, ack.Effect)
		}
		if !live {
			if ack.Effect != contract.EffectNotLive {
				t.Errorf("cancelling an ended run answered effect %s, want not_live", ack.Effect)
			}
			return
		}
		if ack.Effect == contract.EffectNotLive {
			t.Fatal("the live run was not live when cancelled (LivePrompt must keep running until cancelled)")
		}
		events, err := Collect(s.Events(ctx, "", ""))
		if err != nil {
			t.Fatalf("Events after cancel: %v", err)
		}
		if kind, ok := terminal(events); !ok || kind != contract.TerminalCancelled {
			t.Errorf("a cancelled run ended %q (terminal %v), want cancelled", kind, ok)
		}
	})
	if !ok {
		return
	}
	t.Step("cancel-replay", func(t TB) {
		ack, err := rc.CancelRun(ctx, req)
		check(t, req, ack, err)
		if ack.Status != contract.StatusReplayed && !(ack.Status == contract.StatusAccepted && *ack == *first) {
			t.Errorf("the same cancellation again answered %s, want replayed", ack.Status)
		}
		if ack.Effect != first.Effect {
			t.Errorf("the replay's effect %s differs from the original %s", ack.Effect, first.Effect)
		}
	})
	t.Step("cancel-conflict", func(t TB) {
		changed, err := contract.NewRunCancellationRequest(req.OperationID, run, ptr("providertest changed"))
		if err != nil {
			t.Fatal(err)
		}
		ack, err := rc.CancelRun(ctx, changed)
		check(t, changed, ack, err)
		if ack.Status != contract.StatusConflict || ack.ExistingRequestDigest == nil || *ack.ExistingRequestDigest != req.RequestDigest {
			t.Errorf("a changed cancellation under the same operation id answered %s (existing %v), want conflict naming %s",
				ack.Status, ack.ExistingRequestDigest, req.RequestDigest)
		}
	})
	t.Step("cancel-unknown-run", func(t TB) {
		other := run
		other.RunID += "-unknown"
		other.ExecutionID += "-unknown"
		r, err := contract.NewRunCancellationRequest("providertest-cancel-unknown", other, nil)
		if err != nil {
			t.Fatal(err)
		}
		ack, err := rc.CancelRun(ctx, r)
		check(t, r, ack, err)
		if ack.Status != contract.StatusUnknown {
			t.Errorf("cancelling a run the session does not hold answered %s/%s, want unknown", ack.Status, ack.Effect)
		}
	})
}
