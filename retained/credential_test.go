package retained_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/canonjson"
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

// secretOwner is an account owner that holds a real secret per account:
// it resolves each credential request it receives to the token of the
// account the selector names. The runtime only ever sees the request.
type secretOwner struct {
	*scripted.Provider
	tokens map[string]string
	mu     sync.Mutex
	bound  []string
}

func (o *secretOwner) bind(c *contract.CredentialRequest) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if c != nil && c.Selector.ID != nil {
		o.bound = append(o.bound, o.tokens[*c.Selector.ID])
	}
}

func (o *secretOwner) Create(ctx context.Context, in *contract.CreateInput) (contract.Environment, error) {
	o.bind(in.Credential)
	return o.Provider.Create(ctx, in)
}

// RG-09 across processes: a retained run on a subscription seat whose
// process died after its environment was admitted and before the turn was
// dispatched is recovered by another process that passes the admitted
// turn without its credential request; the recorded request — an account
// reference, never a credential — is re-sent, so the provider's account
// owner binds the seat's account (RG-10). A credential request that
// differs from the recorded one is refused, and no secret the account
// owner holds ever reaches the run store.
func TestRecoverResendsTheRecordedCredentialRequestRG09(t *testing.T) {
	forEachStore(t, func(t *testing.T, open func(t *testing.T) store.Store) {
		ctx := testCtx(t)
		const secret = "sk-live-team-b-9f3a7c1e"
		s := script(0)
		s.Accounts = map[string]scripted.Account{"team-a": {}, "team-b": {}}
		base := scripted.New(s, scripted.Options{})
		owner := &secretOwner{Provider: base, tokens: map[string]string{"team-a": "sk-live-team-a-0b1d", "team-b": secret}}
		team := "team-b"
		seat := func(occasion string) *contract.CredentialRequest {
			return &contract.CredentialRequest{Stage: 1, Harness: "cli-base", Provider: "scripted", Model: "scripted/second",
				Selector: profile.SeatSelector{Kind: profile.SelectorSeat, ID: &team}, Occasion: occasion}
		}
		o := startOptions(owner, open(t), "key-recover-seat", "turn-1", (&recorder{fail: retained.AdmissionEnvironment}).hook)
		o.Environment.Credential = seat(contract.CredentialOnCreate)
		o.Turn.Credential = seat(contract.CredentialOnTurn)
		if _, err := retained.StartRetainedRun(ctx, o); err == nil {
			t.Fatal("the start succeeded although its hook failed")
		}
		if base.Turns() != 0 || len(owner.bound) != 1 || owner.bound[0] != secret {
			t.Fatalf("%d turns, bound %d credentials before the process died; want the create's only", base.Turns(), len(owner.bound))
		}
		_, recID, _ := retained.DeriveIdentity("key-recover-seat", "turn-1")
		rec, err := retained.Load(ctx, open(t), recID)
		if err != nil {
			t.Fatal(err)
		}
		want := &retained.CredentialRecord{Stage: 1, Harness: "cli-base", Provider: "scripted", Model: "scripted/second",
			Selector: profile.SeatSelector{Kind: profile.SelectorSeat, ID: &team}}
		if diff := cmp.Diff(want, rec.Intent.Credential); diff != "" {
			t.Fatalf("recorded credential request (-want +got):\n%s", diff)
		}
		// Another process does not know the seat: it passes the turn as
		// the caller wrote it, without the credential request.
		bare := o.Turn
		bare.Credential = nil
		other := seat(contract.CredentialOnTurn)
		other.Selector.ID = ptr("team-a")
		wrong := o.Turn
		wrong.Credential = other
		refused, err := retained.RecoverRetainedRun(ctx, retained.RecoverOptions{Provider: base.Reconnect(), Store: open(t), RunID: recID, Turn: &wrong})
		if err != nil || refused.Outcome != retained.Unverifiable || base.Turns() != 0 {
			t.Fatalf("recovery with another seat's request: %+v, %v (%d turns); want unverifiable, nothing dispatched", refused, err, base.Turns())
		}
		got, err := retained.RecoverRetainedRun(ctx, retained.RecoverOptions{Provider: base.Reconnect(), Store: open(t), RunID: recID, Turn: &bare})
		if err != nil || got.Outcome != retained.Recovered || got.Via != retained.ViaResumed {
			t.Fatalf("recovery: %+v, %v", got, err)
		}
		if res, err := got.Run.Result(ctx); err != nil || !res.Success {
			t.Fatalf("result %+v, %v", res, err)
		}
		wantSent := []contract.CredentialRequest{*seat(contract.CredentialOnCreate), *seat(contract.CredentialOnTurn)}
		if diff := cmp.Diff(wantSent, base.CredentialRequests()); diff != "" {
			t.Errorf("credential requests the account owner received (-want +got):\n%s", diff)
		}
		// Nothing the store holds for the run names a secret.
		st := open(t)
		runs, err := st.ListRuns(ctx, store.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range runs {
			events, err := st.Events(ctx, r.ID, "", 0)
			if err != nil {
				t.Fatal(err)
			}
			blob := string(canonjson.Marshal(r.Doc))
			for _, e := range events {
				blob += string(canonjson.Marshal(e.Body))
			}
			for _, token := range owner.tokens {
				if strings.Contains(blob, token) {
					t.Errorf("run %s holds the account's secret %q", r.ID, token)
				}
			}
		}
	})
}
