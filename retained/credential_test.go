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

// seatedProfile is the authored profile whose stage 1 is the seat
// team-b: what a recovering process has, where no record holds the
// account.
const seatedProfile = `{"name":"writer","harness":"cli-base","model":{"provider":"scripted","default":"scripted/first"},
 "seats":[{"harness":"cli-base","provider":"scripted","model":"scripted/first","selector":{"kind":"all-eligible"}},
          {"harness":"cli-base","provider":"scripted","model":"scripted/second","selector":{"kind":"seat","id":"team-b"}}]}`

// RG-09 across processes: a retained run on a subscription seat whose
// process died after its environment was admitted and before the turn was
// dispatched is recovered by another process. The admission records hold
// the seat stage the turn asked for — never the request, which names an
// account, nor any secret the account owner holds. Given the admitted
// turn without its request, recovery refuses to dispatch it bare
// (unverifiable, nothing sent) or with another stage's request; given
// the seated profile, it rebuilds stage 1's request and re-sends it, so
// the provider's account owner binds the seat's account (RG-10).
func TestRecoverResendsTheAdmittedStagesCredentialRequestRG09(t *testing.T) {
	forEachStore(t, func(t *testing.T, open func(t *testing.T) store.Store) {
		ctx := testCtx(t)
		const secret = "sk-live-team-b-9f3a7c1e"
		s := script(0)
		s.Accounts = map[string]scripted.Account{"team-a": {}, "team-b": {}}
		base := scripted.New(s, scripted.Options{})
		owner := &secretOwner{Provider: base, tokens: map[string]string{"team-a": "sk-live-team-a-0b1d", "team-b": secret}}
		prof, err := profile.Parse([]byte(seatedProfile))
		if err != nil {
			t.Fatal(err)
		}
		o := startOptions(owner, open(t), "key-recover-seat", "turn-1", (&recorder{fail: retained.AdmissionEnvironment}).hook)
		o.Environment.Credential = contract.CredentialRequestFor(prof, 1, contract.CredentialOnCreate)
		o.Turn.Credential = contract.CredentialRequestFor(prof, 1, contract.CredentialOnTurn)
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
		if k := rec.Intent.CredentialStage; k == nil || *k != 1 {
			t.Fatalf("recorded credential stage %v; want 1", k)
		}
		// Another process has the turn as the caller wrote it, without
		// the request.
		bare := o.Turn
		bare.Credential = nil
		blind, err := retained.RecoverRetainedRun(ctx, retained.RecoverOptions{Provider: base.Reconnect(), Store: open(t), RunID: recID, Turn: &bare})
		if err != nil || blind.Outcome != retained.Unverifiable || base.Turns() != 0 {
			t.Fatalf("recovery without the request: %+v, %v (%d turns); want unverifiable, nothing dispatched", blind, err, base.Turns())
		}
		wrong := o.Turn
		wrong.Credential = contract.CredentialRequestFor(prof, 0, contract.CredentialOnTurn)
		refused, err := retained.RecoverRetainedRun(ctx, retained.RecoverOptions{Provider: base.Reconnect(), Store: open(t), RunID: recID, Turn: &wrong})
		if err != nil || refused.Outcome != retained.Unverifiable || base.Turns() != 0 {
			t.Fatalf("recovery with stage 0's request: %+v, %v (%d turns); want unverifiable, nothing dispatched", refused, err, base.Turns())
		}
		got, err := retained.RecoverRetainedRun(ctx, retained.RecoverOptions{Provider: base.Reconnect(), Store: open(t), RunID: recID, Turn: &bare, Profile: prof})
		if err != nil || got.Outcome != retained.Recovered || got.Via != retained.ViaResumed {
			t.Fatalf("recovery with the profile: %+v, %v", got, err)
		}
		if res, err := got.Run.Result(ctx); err != nil || !res.Success {
			t.Fatalf("result %+v, %v", res, err)
		}
		wantSent := []contract.CredentialRequest{*contract.CredentialRequestFor(prof, 1, contract.CredentialOnCreate), *contract.CredentialRequestFor(prof, 1, contract.CredentialOnTurn)}
		if diff := cmp.Diff(wantSent, base.CredentialRequests()); diff != "" {
			t.Errorf("credential requests the account owner received (-want +got):\n%s", diff)
		}
		// Nothing the store holds names the account or its secret.
		st := open(t)
		runs, err := st.ListRuns(ctx, store.ListOptions{})
		if err != nil || len(runs) == 0 {
			t.Fatalf("%d runs (%v)", len(runs), err)
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
			for _, word := range []string{"team-a", "team-b", owner.tokens["team-a"], secret} {
				if strings.Contains(blob, word) {
					t.Errorf("run %s holds %q", r.ID, word)
				}
			}
		}
	})
}

// RG-12, an older admission: a retained run of a seated profile admitted
// before runs recorded seat stages and credential requests — its
// environment created with the whole authored profile, its turn carrying
// no profile and no credential request (it relied on the creation-time
// profile) — whose process died before the turn was dispatched, is
// recovered by a process that derives the turn from the profile as it
// reads it now (stage 0's, with stage 0's credential request, as agentrt
// runs recover does). The resend is exactly the admitted request: the
// turn's bytes are the admitted ones (its digest is the intent's), and
// it carries no credential request the admission did not carry. On
// SQLite and PostgreSQL.
func TestReplayOfAnOlderAdmissionKeepsTheAdmittedRequestRG12(t *testing.T) {
	forEachStore(t, func(t *testing.T, open func(t *testing.T) store.Store) {
		ctx := testCtx(t)
		prof, err := profile.Parse([]byte(seatedProfile))
		if err != nil {
			t.Fatal(err)
		}
		log := &requestLog{}
		// A provider without accounts of its own: the older admission
		// carried no credential request, and it served it.
		base := scripted.New(script(0), scripted.Options{})
		// The older admission: the whole seated profile on the create, no
		// stage, no credential request; the process dies once its
		// environment is admitted.
		o := startOptions(&wrapped{Provider: base, requests: log}, open(t), "key-older", "turn-1", (&recorder{fail: retained.AdmissionEnvironment}).hook)
		o.Environment.Profile = profile.Ref{Inline: prof}
		if _, err := retained.StartRetainedRun(ctx, o); err == nil {
			t.Fatal("the start whose process died succeeded")
		}
		_, id, _ := retained.DeriveIdentity("key-older", "turn-1")
		st := open(t)
		rec, err := retained.Load(ctx, st, id)
		if err != nil {
			t.Fatal(err)
		}
		if rec.Intent.Stage != nil || rec.Intent.CredentialStage != nil || rec.Environment == nil || rec.Dispatched != nil {
			t.Fatalf("the older admission %+v; want no stage, no credential stage, an environment and no dispatch", rec.Intent)
		}
		// Another process derives the request from the profile as it is
		// read now.
		_, turn, err := retained.StageRequest(prof, 0, "key-older", "turn-1", "do the long job")
		if err != nil {
			t.Fatal(err)
		}
		if turn.Credential == nil {
			t.Fatal("the fixture's re-derived turn must carry a credential request the admission did not")
		}
		got, err := retained.RecoverRetainedRun(ctx, retained.RecoverOptions{Provider: &wrapped{Provider: base.Reconnect(), requests: log},
			Store: st, RunID: id, Turn: &turn, Profile: prof})
		if err != nil || got.Outcome != retained.Recovered || got.Via != retained.ViaResumed {
			t.Fatalf("recovery: %+v, %v", got, err)
		}
		if res, err := got.Run.Result(ctx); err != nil || !res.Success {
			t.Fatalf("result %+v, %v", res, err)
		}
		log.mu.Lock()
		defer log.mu.Unlock()
		if diff := cmp.Diff([]string{"create", "dispatch"}, log.occasions); diff != "" {
			t.Fatalf("calls (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]*contract.CredentialRequest{nil, nil}, log.credentials); diff != "" {
			t.Errorf("credential requests sent (-want +got): the replay must carry none, as the admission did not:\n%s", diff)
		}
		if base.Turns() != 1 {
			t.Errorf("%d turns ran; want the admitted one", base.Turns())
		}
	})
}

// RG-12, RG-09: an older admission of a seated profile — its environment
// to be created with the whole authored profile and stage 0's credential
// request, recorded before runs recorded their stage — whose process died
// before the create, is recovered from the same profile by rebuilding
// exactly the admitted request (AdmittedRequest): the keyed create is
// replayed with the creation-time profile, the turn re-sent with the
// admitted stage's credential request on both. The request today's rule
// derives (stage 0's projection) is not the admitted one: recovery with
// it is unverifiable and sends nothing, and a changed profile is a
// *MismatchError before anything is sent. On SQLite and PostgreSQL.
func TestRecoverAnOlderAdmissionWithItsCreationTimeProfileRG12(t *testing.T) {
	forEachStore(t, func(t *testing.T, open func(t *testing.T) store.Store) {
		ctx := testCtx(t)
		prof, err := profile.Parse([]byte(seatedProfile))
		if err != nil {
			t.Fatal(err)
		}
		s := script(0)
		s.Accounts = map[string]scripted.Account{"team-a": {}, "team-b": {}}
		base := scripted.New(s, scripted.Options{})
		// The older admission, as agentrt run --retain made it then.
		o := startOptions(base, open(t), "key-older-create", "turn-1", (&recorder{fail: retained.AdmissionIntent}).hook)
		o.Environment.Profile = profile.Ref{Inline: prof}
		o.Environment.Credential = contract.CredentialRequestFor(prof, 0, contract.CredentialOnCreate)
		o.Turn.Credential = contract.CredentialRequestFor(prof, 0, contract.CredentialOnTurn)
		if _, err := retained.StartRetainedRun(ctx, o); err == nil {
			t.Fatal("the start whose process died succeeded")
		}
		_, id, _ := retained.DeriveIdentity("key-older-create", "turn-1")
		st := open(t)
		rec, err := retained.Load(ctx, st, id)
		if err != nil {
			t.Fatal(err)
		}
		if rec.Intent.Stage != nil || rec.Environment != nil || base.Creates() != 0 {
			t.Fatalf("the older admission %+v, %d creates; want no stage, nothing created", rec.Intent, base.Creates())
		}
		recoverWith := func(create *contract.CreateInput, turn contract.TurnInput) (retained.Recovery, error) {
			return retained.RecoverRetainedRun(ctx, retained.RecoverOptions{Provider: base.Reconnect(), Store: st, RunID: id,
				Environment: create, Turn: &turn, Profile: prof})
		}
		today, todayTurn, err := retained.StageRequest(prof, 0, "key-older-create", "turn-1", *o.Turn.Prompt)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := recoverWith(today, todayTurn); err != nil || got.Outcome != retained.Unverifiable || base.Creates() != 0 {
			t.Fatalf("recovery with today's derivation: %+v, %v, %d creates; want unverifiable, nothing created", got, err, base.Creates())
		}
		changed, err := profile.Parse([]byte(strings.Replace(seatedProfile, `"scripted/second"`, `"scripted/third"`, 1)))
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := retained.AdmittedRequest(changed, rec.Intent, *o.Turn.Prompt); !errors.As(err, new(*retained.MismatchError)) {
			t.Fatalf("AdmittedRequest with a changed profile: %v; want a *MismatchError", err)
		}
		create, turn, err := retained.AdmittedRequest(prof, rec.Intent, *o.Turn.Prompt)
		if err != nil {
			t.Fatal(err)
		}
		got, err := recoverWith(create, turn)
		if err != nil || got.Outcome != retained.Recovered || got.Via != retained.ViaResumed {
			t.Fatalf("recovery with the admitted request: %+v, %v", got, err)
		}
		if res, err := got.Run.Result(ctx); err != nil || !res.Success {
			t.Fatalf("result %+v, %v", res, err)
		}
		want := []contract.CredentialRequest{*contract.CredentialRequestFor(prof, 0, contract.CredentialOnCreate), *contract.CredentialRequestFor(prof, 0, contract.CredentialOnTurn)}
		if diff := cmp.Diff(want, base.CredentialRequests()); diff != "" {
			t.Errorf("credential requests the account owner received (-want +got):\n%s", diff)
		}
		if base.Creates() != 1 || base.Turns() != 1 {
			t.Errorf("%d creates, %d turns; want the admitted one of each", base.Creates(), base.Turns())
		}
	})
}
