package retained_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/retained"
	"github.com/agentrt/agentrt/store"
)

// lostCreate is a provider whose create takes effect and whose answer is
// lost on the way back: the starter then dies with only its intent
// recorded, while the provider holds an environment under the key.
type lostCreate struct {
	*scripted.Provider
}

func (l *lostCreate) Create(ctx context.Context, in *contract.CreateInput) (contract.Environment, error) {
	if _, err := l.Provider.Create(ctx, in); err != nil {
		return nil, err
	}
	return nil, errors.New("the create's answer was lost on the way back")
}

// FD-08, RES-05, RES-06, ENV-10 (spec/runtime.md §3.8): a starter that
// died after the provider's create and before the environment record was
// written left only its intent. Recovery cannot call that not_found
// ("nothing to clean up"): without the create input it is unverifiable
// and destroys nothing; given the create input it replays the keyed
// create, adopts the environment the provider answers with (the same
// one, replayed, no second create), records it and resumes the admitted
// turn.
func TestRecoverAfterCreateBeforeEnvironmentRecordRES05RES06(t *testing.T) {
	forEachStore(t, func(t *testing.T, open func(t *testing.T) store.Store) {
		ctx := testCtx(t)
		base := scripted.New(script(0), scripted.Options{})
		o := startOptions(&lostCreate{base}, open(t), "key-lost-create", "turn-1", (&recorder{}).hook)
		if _, err := retained.StartRetainedRun(ctx, o); err == nil {
			t.Fatal("the start whose create answer was lost succeeded")
		}
		_, recID, _ := retained.DeriveIdentity("key-lost-create", "turn-1")
		rec, err := retained.Load(ctx, open(t), recID)
		if err != nil {
			t.Fatal(err)
		}
		if rec.Environment != nil || base.Creates() != 1 {
			t.Fatalf("environment record %+v after %d creates; want none recorded after one create", rec.Environment, base.Creates())
		}

		blind, err := retained.RecoverRetainedRun(ctx, retained.RecoverOptions{Provider: base.Reconnect(), Store: open(t), RunID: recID, Turn: &o.Turn})
		if err != nil || blind.Outcome != retained.Unverifiable || !strings.Contains(blind.Reason, "idempotency key") {
			t.Fatalf("recovery without the create input: %+v, %v; want unverifiable", blind, err)
		}

		changed := *o.Environment
		changed.Profile.CatalogID = "another-worker"
		refused, err := retained.RecoverRetainedRun(ctx, retained.RecoverOptions{Provider: base.Reconnect(), Store: open(t), RunID: recID, Turn: &o.Turn, Environment: &changed})
		if err != nil || refused.Outcome != retained.Unverifiable || !strings.Contains(refused.Reason, "requestDigest") || base.Creates() != 1 {
			t.Fatalf("recovery with a changed create: %+v, %v (%d creates); want unverifiable, nothing created", refused, err, base.Creates())
		}

		seen := &recorder{}
		got, err := retained.RecoverRetainedRun(ctx, retained.RecoverOptions{Provider: base.Reconnect(), Store: open(t), RunID: recID,
			Turn: &o.Turn, Environment: o.Environment, OnAdmission: seen.hook})
		if err != nil || got.Outcome != retained.Recovered || got.Via != retained.ViaResumed {
			t.Fatalf("recovery replaying the keyed create: %+v, %v", got, err)
		}
		if base.Creates() != 1 {
			t.Errorf("%d creates; the replay must answer with the environment created under the key", base.Creates())
		}
		if res, err := got.Run.Result(ctx); err != nil || !res.Success {
			t.Fatalf("result %+v, %v", res, err)
		}
		if k := seen.kinds(); len(k) != 2 || k[0] != retained.AdmissionEnvironment || k[1] != retained.AdmissionDispatched {
			t.Errorf("admissions delivered %v; want environment, dispatched", k)
		}
		rec, err = retained.Load(ctx, open(t), recID)
		if err != nil {
			t.Fatal(err)
		}
		if rec.Environment == nil || rec.Environment.EnvironmentID != got.EnvironmentID || rec.Dispatched == nil {
			t.Fatalf("records after recovery: environment %+v, dispatched %+v", rec.Environment, rec.Dispatched)
		}
		again, err := retained.RecoverRetainedRun(ctx, retained.RecoverOptions{Provider: base.Reconnect(), Store: open(t), RunID: recID})
		if err != nil || again.Outcome != retained.Recovered || again.Via != retained.ViaReattached {
			t.Fatalf("a second recovery: %+v, %v; want reattached", again, err)
		}
	})
}

// RES-05: a starter that died after recording its intent and before any
// create is recovered too: the keyed create finds nothing under the key
// and creates the environment, which recovery records before resuming
// the admitted turn — never an environment left without a record.
func TestRecoverAfterIntentOnlyCreatesOnceRES05(t *testing.T) {
	forEachStore(t, func(t *testing.T, open func(t *testing.T) store.Store) {
		ctx := testCtx(t)
		base := scripted.New(script(0), scripted.Options{})
		o := startOptions(base, open(t), "key-intent-only", "turn-1", (&recorder{fail: retained.AdmissionIntent}).hook)
		if _, err := retained.StartRetainedRun(ctx, o); err == nil {
			t.Fatal("the start succeeded although its intent hook failed")
		}
		if base.Creates() != 0 {
			t.Fatalf("%d creates before the starter died; want none", base.Creates())
		}
		_, recID, _ := retained.DeriveIdentity("key-intent-only", "turn-1")
		got, err := retained.RecoverRetainedRun(ctx, retained.RecoverOptions{Provider: base.Reconnect(), Store: open(t), RunID: recID,
			Turn: &o.Turn, Environment: o.Environment})
		if err != nil || got.Outcome != retained.Recovered || got.Via != retained.ViaResumed || base.Creates() != 1 {
			t.Fatalf("recovery: %+v, %v (%d creates)", got, err, base.Creates())
		}
		if res, err := got.Run.Result(ctx); err != nil || !res.Success {
			t.Fatalf("result %+v, %v", res, err)
		}
	})
}

// RG-09 on the replayed create: a subscription run whose starter died
// after the create and before the environment record is recovered by a
// process that has the create input and turn as the caller wrote them,
// without the requests (which name an account no record holds). Without
// the seated profile recovery refuses to replay the create bare
// (unverifiable, nothing sent); with it, the replayed create and the
// re-sent turn carry the admitted stage's requests.
func TestRecoverReplaysTheCreateWithTheStagesCredentialRequestRG09(t *testing.T) {
	forEachStore(t, func(t *testing.T, open func(t *testing.T) store.Store) {
		ctx := testCtx(t)
		s := script(0)
		s.Accounts = map[string]scripted.Account{"team-a": {}, "team-b": {}}
		base := scripted.New(s, scripted.Options{})
		prof, err := profile.Parse([]byte(seatedProfile))
		if err != nil {
			t.Fatal(err)
		}
		o := startOptions(&lostCreate{base}, open(t), "key-lost-seat", "turn-1", (&recorder{}).hook)
		o.Environment.Credential = contract.CredentialRequestFor(prof, 1, contract.CredentialOnCreate)
		o.Turn.Credential = contract.CredentialRequestFor(prof, 1, contract.CredentialOnTurn)
		if _, err := retained.StartRetainedRun(ctx, o); err == nil {
			t.Fatal("the start whose create answer was lost succeeded")
		}
		_, recID, _ := retained.DeriveIdentity("key-lost-seat", "turn-1")
		create, turn := *o.Environment, o.Turn
		create.Credential, turn.Credential = nil, nil
		blind, err := retained.RecoverRetainedRun(ctx, retained.RecoverOptions{Provider: base.Reconnect(), Store: open(t), RunID: recID,
			Environment: &create, Turn: &turn})
		if err != nil || blind.Outcome != retained.Unverifiable || len(base.CredentialRequests()) != 1 {
			t.Fatalf("recovery without the requests: %+v, %v (%d requests); want unverifiable, nothing sent", blind, err, len(base.CredentialRequests()))
		}
		got, err := retained.RecoverRetainedRun(ctx, retained.RecoverOptions{Provider: base.Reconnect(), Store: open(t), RunID: recID,
			Environment: &create, Turn: &turn, Profile: prof})
		if err != nil || got.Outcome != retained.Recovered || got.Via != retained.ViaResumed {
			t.Fatalf("recovery with the profile: %+v, %v", got, err)
		}
		if res, err := got.Run.Result(ctx); err != nil || !res.Success {
			t.Fatalf("result %+v, %v", res, err)
		}
		onCreate := *contract.CredentialRequestFor(prof, 1, contract.CredentialOnCreate)
		want := []contract.CredentialRequest{onCreate, onCreate, *contract.CredentialRequestFor(prof, 1, contract.CredentialOnTurn)}
		if diff := cmp.Diff(want, base.CredentialRequests()); diff != "" {
			t.Errorf("credential requests the account owner received (-want +got):\n%s", diff)
		}
		if base.Creates() != 1 {
			t.Errorf("%d creates; the replay must find the environment made under the key", base.Creates())
		}
	})
}

// quotaCreates is a provider whose creates are refused on quota until
// allowed: a definite refusal, nothing created.
type quotaCreates struct {
	*scripted.Provider
	refuse atomic.Bool
}

func (q *quotaCreates) Create(ctx context.Context, in *contract.CreateInput) (contract.Environment, error) {
	if q.refuse.Load() {
		after := 30 * time.Second
		return nil, &contract.QuotaRefusalError{Provider: q.Name(), Stage: 0, RetryAfter: &after, Message: "quota used up"}
	}
	return q.Provider.Create(ctx, in)
}

// A start whose create the provider refused on quota is recorded as
// refused: a recovery answers NotFound (start again), not Unverifiable
// ("the provider may hold one created"), and nothing is created by it;
// a later start under the same key creates, and the refusal is gone.
func TestRecoverAfterRefusedCreateIsNotFound(t *testing.T) {
	forEachStore(t, func(t *testing.T, open func(t *testing.T) store.Store) {
		ctx := testCtx(t)
		p := &quotaCreates{Provider: scripted.New(script(0), scripted.Options{})}
		p.refuse.Store(true)
		st := open(t)
		o := startOptions(p, st, "key-refused", "turn-1", (&recorder{}).hook)
		if _, err := retained.StartRetainedRun(ctx, o); !errors.Is(err, contract.ErrQuotaRefused) {
			t.Fatalf("start: %v, want the quota refusal", err)
		}
		_, recID, _ := retained.DeriveIdentity("key-refused", "turn-1")
		rec, err := retained.Load(ctx, st, recID)
		if err != nil || rec.CreateRefused == nil || rec.CreateRefused.RetryAfterMS == nil || *rec.CreateRefused.RetryAfterMS != 30000 {
			t.Fatalf("record after the refusal: %+v, %v", rec, err)
		}
		got, err := retained.RecoverRetainedRun(ctx, retained.RecoverOptions{Provider: p, Store: st, RunID: recID, Environment: o.Environment})
		if err != nil || got.Outcome != retained.NotFound || !strings.Contains(got.Reason, "refused") {
			t.Fatalf("recovery: %+v, %v; want NotFound naming the refusal", got, err)
		}
		if n := p.Creates(); n != 0 {
			t.Errorf("%d creates; want none", n)
		}
		p.refuse.Store(false)
		run, err := retained.StartRetainedRun(ctx, o)
		if err != nil {
			t.Fatalf("start again: %v", err)
		}
		if res, err := run.Result(ctx); err != nil || !res.Success {
			t.Fatalf("result %+v, %v", res, err)
		}
		if rec, err := retained.Load(ctx, st, recID); err != nil || rec.CreateRefused != nil {
			t.Errorf("record after the second start: %+v, %v; want no refusal", rec, err)
		}
	})
}
