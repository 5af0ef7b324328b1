package retained_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/retained"
	"github.com/agentrt/agentrt/store"
)

// RG-07, RG-09, RG-10: a subscription profile's credential request
// reaches the provider on the create and on the turn, and again on a new
// turn after a cold lookup of the retained environment by another
// process (a new provider client and store connection). The runtime only
// carries the request; the provider's account owner binds the
// credential.
func TestCredentialRequestReachesCreateTurnAndColdLookupRG07RG09(t *testing.T) {
	forEachStore(t, func(t *testing.T, open func(t *testing.T) store.Store) {
		ctx := testCtx(t)
		log := &requestLog{}
		base := scripted.New(script(0), scripted.Options{})
		team := "team-b"
		seat := func(occasion string) *contract.CredentialRequest {
			return &contract.CredentialRequest{Stage: 1, Harness: "cli-base", Provider: "scripted", Model: "scripted/second",
				Selector: profile.SeatSelector{Kind: profile.SelectorSeat, ID: &team}, Occasion: occasion}
		}
		o := startOptions(&wrapped{Provider: base, requests: log}, open(t), "key-seat", "turn-1", (&recorder{}).hook)
		o.Environment.Credential = seat(contract.CredentialOnCreate)
		o.Turn.Credential = seat(contract.CredentialOnTurn)
		first, err := retained.StartRetainedRun(ctx, o)
		if err != nil {
			t.Fatal(err)
		}
		if res, err := first.Result(ctx); err != nil || !res.Success {
			t.Fatalf("first result %+v, %v", res, err)
		}
		// Another process: a new client and store connection look the
		// environment up by id and run the next turn in it.
		next := retained.InEnvironmentOptions{Provider: &wrapped{Provider: base.Reconnect(), requests: log}, Store: open(t),
			EnvironmentID: first.ControlRef().Run.EnvironmentID, IdempotencyKey: "key-seat",
			Turn:        contract.TurnInput{TurnID: ptr("turn-2"), Prompt: ptr("the next job"), Credential: seat(contract.CredentialOnTurn)},
			OnAdmission: (&recorder{}).hook}
		run, err := retained.StartRetainedRunInEnvironment(ctx, next)
		if err != nil {
			t.Fatal(err)
		}
		if res, err := run.Result(ctx); err != nil || !res.Success {
			t.Fatalf("second result %+v, %v", res, err)
		}
		want := []*contract.CredentialRequest{seat(contract.CredentialOnCreate), seat(contract.CredentialOnTurn), seat(contract.CredentialOnTurn)}
		if diff := cmp.Diff([]string{"create", "dispatch", "dispatch"}, log.occasions); diff != "" {
			t.Fatalf("calls (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(want, log.credentials); diff != "" {
			t.Errorf("credential requests the provider received (-want +got):\n%s", diff)
		}
	})
}

// RG-12: a dispatch whose answer was lost is replayed with exactly the
// admitted request — the turn's bytes are identical, for an admission
// whose turn carries no profile of its own and relies on the
// environment's creation-time profile — and the provider's turn
// idempotency makes it the same run, not a second one.
func TestReplayResendsTheAdmittedRequestRG12(t *testing.T) {
	forEachStore(t, func(t *testing.T, open func(t *testing.T) store.Store) {
		ctx := testCtx(t)
		log := &requestLog{}
		base := scripted.New(script(0), scripted.Options{})
		lost := &wrapped{Provider: base, requests: log, dispatchErr: errors.New("the answer was lost on the way back")}
		o := startOptions(lost, open(t), "key-replay", "turn-1", (&recorder{}).hook)
		if o.Turn.Profile != nil {
			t.Fatal("the fixture's turn must rely on the creation-time profile")
		}
		if _, err := retained.StartRetainedRun(ctx, o); err == nil {
			t.Fatal("the start whose dispatch answer was lost succeeded")
		}
		o.Provider, o.Store = &wrapped{Provider: base.Reconnect(), requests: log}, open(t)
		run, err := retained.StartRetainedRun(ctx, o)
		if err != nil {
			t.Fatal(err)
		}
		if res, err := run.Result(ctx); err != nil || !res.Success {
			t.Fatalf("result %+v, %v", res, err)
		}
		log.mu.Lock()
		defer log.mu.Unlock()
		if len(log.turns) != 2 {
			t.Fatalf("%d dispatches; want the admission and its replay", len(log.turns))
		}
		for i, b := range log.turns[1:] {
			if !bytes.Equal(b, log.turns[0]) {
				t.Errorf("dispatch %d sent %s; the admitted request was %s", i+2, b, log.turns[0])
			}
		}
		if base.Turns() != 1 {
			t.Errorf("%d turns ran; the replay must not start a second", base.Turns())
		}
	})
}
