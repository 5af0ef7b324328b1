package retained_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/retained"
	"github.com/agentrt/agentrt/store"
)

// credentialKey is the key a caller keeps outside the store.
var credentialKey = bytes.Repeat([]byte{0x5a}, retained.MinCredentialKeySize)

// seatAccounts is a scripted provider that serves the accounts team-a,
// team-b and team-c: any of them would be bound if asked for.
func seatAccounts(t *testing.T) *scripted.Provider {
	return seatedScripted(t, `{"accounts":{"team-a":{},"team-b":{},"team-c":{}},"turns":[{"repeat":true,"steps":[{"text":"done"}]}]}`)
}

// reseated is twoSeats with stage 0's account selector team-a changed
// to team-c, and nothing else.
func reseated(t *testing.T) *profile.Profile {
	t.Helper()
	p, err := profile.Parse([]byte(strings.Replace(twoSeats, `"id":"team-a"`, `"id":"team-c"`, 1)))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// RG-12, RG-10 (issue 15): a seated retained run admitted on stage 0
// under the account selector team-a, whose process died before its turn
// was dispatched (after its environment was admitted, or before its
// create), is recovered by another process from a profile whose stage 0
// selector changed to team-c — the same stage otherwise, so the profile
// digest the intent records still matches and AdmittedRequest rebuilds
// the request. Recovery refuses it: Unverifiable with a
// *CredentialChangedError naming stage 0 and no selector, nothing
// created or dispatched under team-c, the environment kept; and so does
// starting the seated run again with that profile (a *MismatchError).
// With the profile it was admitted with, recovery proceeds as before,
// under team-a. On SQLite and PostgreSQL.
func TestRecoverRefusesAChangedAccountSelectorRG12(t *testing.T) {
	for _, died := range []retained.AdmissionKind{retained.AdmissionEnvironment, retained.AdmissionIntent} {
		t.Run("died after "+string(died), func(t *testing.T) {
			forEachStore(t, func(t *testing.T, open func(t *testing.T) store.Store) {
				ctx := testCtx(t)
				base := seatAccounts(t)
				log := &requestLog{}
				prof, err := profile.Parse([]byte(twoSeats))
				if err != nil {
					t.Fatal(err)
				}
				const task = "write it"
				o := retained.SeatedOptions{Accounts: kernel.AccountManagerFunc(func(context.Context, int, profile.Seat) (contract.Provider, error) {
					return &wrapped{Provider: base, requests: log}, nil
				}), Store: open(t), Profile: prof, IdempotencyKey: "k-selector", TurnID: "turn-1", Task: task,
					OnAdmission: (&recorder{fail: died}).hook, CredentialKey: credentialKey}
				if _, err := retained.StartSeated(ctx, o); err == nil {
					t.Fatal("the seated start whose process died succeeded")
				}
				_, id, _ := retained.DeriveIdentity("k-selector", "turn-1")
				st := open(t)
				rec, err := retained.Load(ctx, st, id)
				if err != nil {
					t.Fatal(err)
				}
				if rec.Intent.CredentialDigest == nil || rec.Dispatched != nil || (rec.Environment != nil) != (died == retained.AdmissionEnvironment) {
					t.Fatalf("admission %+v, environment %+v; want a credential digest, nothing dispatched", rec.Intent, rec.Environment)
				}
				creates, turns := base.Creates(), base.Turns()
				sent := len(base.CredentialRequests())

				changed := reseated(t)
				create, turn, err := retained.AdmittedRequest(changed, rec.Intent, task)
				if err != nil {
					t.Fatalf("AdmittedRequest with the changed selector: %v (the selector is no part of the profile digest)", err)
				}
				bare := turn
				bare.Credential = nil
				for name, ro := range map[string]retained.RecoverOptions{
					"the request rebuilt by AdmittedRequest": {Environment: create, Turn: &turn, Profile: changed},
					"the request rebuilt from the profile":   {Environment: &contract.CreateInput{IdempotencyKey: create.IdempotencyKey, Profile: create.Profile}, Turn: &bare, Profile: changed},
				} {
					ro.Provider, ro.Store, ro.RunID, ro.CredentialKey = &wrapped{Provider: base.Reconnect(), requests: log}, open(t), id, credentialKey
					got, err := retained.RecoverRetainedRun(ctx, ro)
					if err != nil || got.Outcome != retained.Unverifiable {
						t.Fatalf("%s: recovery %+v, %v; want unverifiable", name, got, err)
					}
					var changedErr *retained.CredentialChangedError
					if !errors.As(got.Cause, &changedErr) || changedErr.Stage != 0 || changedErr.RunID != id || !errors.Is(got.Cause, retained.ErrCredentialChanged) {
						t.Fatalf("%s: cause %v; want a *CredentialChangedError for stage 0 of %s", name, got.Cause, id)
					}
					for _, word := range []string{"team-a", "team-c", "selector\":"} {
						if strings.Contains(got.Reason, word) || strings.Contains(got.Cause.Error(), word) {
							t.Errorf("%s: the refusal %q names %q", name, got.Reason, word)
						}
					}
				}
				if base.Creates() != creates || base.Turns() != turns || len(base.CredentialRequests()) != sent {
					t.Fatalf("%d creates, %d turns, %d credential requests after the refusals; want %d, %d, %d: nothing sent under another account",
						base.Creates(), base.Turns(), len(base.CredentialRequests()), creates, turns, sent)
				}
				if rec.Environment != nil {
					if env, err := base.Get(ctx, rec.Environment.EnvironmentID); err != nil || env == nil {
						t.Fatalf("the admitted environment after the refusals: %v, %v; want it kept", env, err)
					}
				}
				// Without the key the digest cannot be checked: nothing is
				// sent either.
				nokey, err := retained.RecoverRetainedRun(ctx, retained.RecoverOptions{Provider: base.Reconnect(), Store: open(t), RunID: id,
					Environment: create, Turn: &turn, Profile: changed})
				if err != nil || nokey.Outcome != retained.Unverifiable || !errors.Is(nokey.Cause, retained.ErrInvalidOptions) || base.Creates() != creates || base.Turns() != turns {
					t.Fatalf("recovery without the key: %+v, %v; want unverifiable for want of the key, nothing sent", nokey, err)
				}
				// Starting the seated run again with the changed profile is
				// refused before anything is sent.
				again := o
				again.Profile, again.Store, again.OnAdmission = changed, open(t), (&recorder{}).hook
				if _, err := retained.StartSeated(ctx, again); !errors.Is(err, retained.ErrMismatch) {
					t.Fatalf("started again with the changed selector: %v; want a mismatch", err)
				}
				if base.Creates() != creates || base.Turns() != turns {
					t.Fatalf("started again with the changed selector: %d creates, %d turns; want %d, %d", base.Creates(), base.Turns(), creates, turns)
				}

				// With the selector unchanged, recovery proceeds as today.
				create, turn, err = retained.AdmittedRequest(prof, rec.Intent, task)
				if err != nil {
					t.Fatal(err)
				}
				got, err := retained.RecoverRetainedRun(ctx, retained.RecoverOptions{Provider: &wrapped{Provider: base.Reconnect(), requests: log},
					Store: open(t), RunID: id, Environment: create, Turn: &turn, Profile: prof, CredentialKey: credentialKey})
				if err != nil || got.Outcome != retained.Recovered || got.Via != retained.ViaResumed || got.Cause != nil {
					t.Fatalf("recovery with the admitted profile: %+v, %v", got, err)
				}
				if res, err := got.Run.Result(ctx); err != nil || !res.Success {
					t.Fatalf("result %+v, %v", res, err)
				}
				if base.Creates() != 1 || base.Turns() != 1 {
					t.Errorf("%d creates, %d turns; want the admitted one of each", base.Creates(), base.Turns())
				}
				for _, c := range base.CredentialRequests() {
					if c.Selector.ID == nil || *c.Selector.ID != "team-a" {
						t.Errorf("a request for account %v reached the provider; every one must be the admitted team-a's", c.Selector.ID)
					}
				}
			})
		})
	}
}

// RG-10, RG-12: the admission records of a seated retained run — each
// delivered to the hook and the run-store documents themselves — hold a
// keyed digest of each stage's credential request and never its
// selector: no account name, no selector member. The digest is keyed:
// the same request under the same key digests the same in another run,
// under another key differently. On SQLite and PostgreSQL.
func TestAdmissionRecordsHoldTheKeyedCredentialDigestNotTheSelectorRG10(t *testing.T) {
	forEachStore(t, func(t *testing.T, open func(t *testing.T) store.Store) {
		ctx := testCtx(t)
		base := seatAccounts(t)
		prof, err := profile.Parse([]byte(twoSeats))
		if err != nil {
			t.Fatal(err)
		}
		st := open(t)
		start := func(key string, credKey []byte) (*recorder, *retained.Record) {
			t.Helper()
			rec := &recorder{}
			res, err := retained.StartSeated(ctx, retained.SeatedOptions{Accounts: kernel.AccountManagerFunc(func(context.Context, int, profile.Seat) (contract.Provider, error) {
				return base, nil
			}), Store: st, Profile: prof, IdempotencyKey: key, TurnID: "turn-1", Task: "write it", OnAdmission: rec.hook, CredentialKey: credKey})
			if err != nil {
				t.Fatal(err)
			}
			r, err := retained.Load(ctx, st, res.ID)
			if err != nil {
				t.Fatal(err)
			}
			return rec, r
		}
		rec, first := start("k-digest-1", credentialKey)
		_, same := start("k-digest-2", credentialKey)
		otherKey := bytes.Repeat([]byte{0xa5}, retained.MinCredentialKeySize)
		_, other := start("k-digest-3", otherKey)
		d := first.Intent.CredentialDigest
		if d == nil || !strings.HasPrefix(*d, "hmac-sha256:") {
			t.Fatalf("credential digest %v; want a keyed one", d)
		}
		if same.Intent.CredentialDigest == nil || *same.Intent.CredentialDigest != *d {
			t.Errorf("the same request under the same key digests %v, then %v", *d, same.Intent.CredentialDigest)
		}
		if other.Intent.CredentialDigest == nil || *other.Intent.CredentialDigest == *d {
			t.Errorf("the same request under another key digests %v, as under the first", other.Intent.CredentialDigest)
		}
		if diff := cmp.Diff([]retained.AdmissionKind{retained.AdmissionIntent, retained.AdmissionEnvironment, retained.AdmissionDispatched}, rec.kinds()); diff != "" {
			t.Fatalf("admissions (-want +got):\n%s", diff)
		}
		var blobs []string
		for _, a := range rec.seen {
			v, err := canonjson.ToValue(a)
			if err != nil {
				t.Fatal(err)
			}
			blobs = append(blobs, string(canonjson.Marshal(v)))
		}
		runs, err := st.ListRuns(ctx, store.ListOptions{})
		if err != nil || len(runs) != 3 {
			t.Fatalf("%d runs (%v); want the three started", len(runs), err)
		}
		for _, r := range runs {
			blobs = append(blobs, string(canonjson.Marshal(r.Doc)))
		}
		for _, b := range blobs {
			for _, word := range []string{"team-a", "team-b", "selector", "Selector"} {
				if strings.Contains(b, word) {
					t.Errorf("a record holds %q: %s", word, b)
				}
			}
		}
	})
}

// RG-12, issue 15: a record without a credential digest — made before
// digests were recorded, or by a caller that gave no key — is recovered
// as before, by a recovery that gives a key: its request is checked for
// its stage only, and re-sent.
func TestRecoverARecordWithoutACredentialDigestAsBefore(t *testing.T) {
	forEachStore(t, func(t *testing.T, open func(t *testing.T) store.Store) {
		ctx := testCtx(t)
		base := seatAccounts(t)
		prof, err := profile.Parse([]byte(twoSeats))
		if err != nil {
			t.Fatal(err)
		}
		const task = "write it"
		id, rec := seatedAdmittedThenDied(t, ctx, open, base, prof, "k-undigested", task, nil)
		if rec.Intent.CredentialStage == nil || rec.Intent.CredentialDigest != nil {
			t.Fatalf("admission %+v; want a credential stage and no digest", rec.Intent)
		}
		create, turn, err := retained.AdmittedRequest(prof, rec.Intent, task)
		if err != nil {
			t.Fatal(err)
		}
		got, err := retained.RecoverRetainedRun(ctx, retained.RecoverOptions{Provider: base.Reconnect(), Store: open(t), RunID: id,
			Environment: create, Turn: &turn, Profile: prof, CredentialKey: credentialKey})
		if err != nil || got.Outcome != retained.Recovered || got.Via != retained.ViaResumed {
			t.Fatalf("recovery: %+v, %v", got, err)
		}
		if res, err := got.Run.Result(ctx); err != nil || !res.Success {
			t.Fatalf("result %+v, %v", res, err)
		}
	})
}

// RG-12 (issue 15): a start whose create asks for another account than
// its turn is refused before anything is recorded or sent — a recovery
// replaying that create would be refused against the admitted digest.
// The refusal names the stage, never the selector.
func TestStartRefusesACreateForAnotherAccountThanItsTurn(t *testing.T) {
	forEachStore(t, func(t *testing.T, open func(t *testing.T) store.Store) {
		ctx := testCtx(t)
		base := seatAccounts(t)
		prof, err := profile.Parse([]byte(twoSeats))
		if err != nil {
			t.Fatal(err)
		}
		st := open(t)
		o := startOptions(base, st, "k-split", "turn-1", (&recorder{}).hook)
		o.CredentialKey = credentialKey
		o.Environment.Credential = contract.CredentialRequestFor(reseated(t), 0, contract.CredentialOnCreate)
		o.Turn.Credential = contract.CredentialRequestFor(prof, 0, contract.CredentialOnTurn)
		_, err = retained.StartRetainedRun(ctx, o)
		if !errors.Is(err, retained.ErrInvalidOptions) || !errors.Is(err, retained.ErrCredentialChanged) {
			t.Fatalf("start: %v; want invalid options, the credential changed", err)
		}
		if strings.Contains(err.Error(), "team-") {
			t.Errorf("the refusal names an account: %v", err)
		}
		if runs, err := st.ListRuns(ctx, store.ListOptions{}); err != nil || len(runs) != 0 || base.Creates() != 0 {
			t.Errorf("%d runs recorded (%v), %d creates; want nothing", len(runs), err, base.Creates())
		}
	})
}

// RG-12, issue 15: an admission names the key its credential digest was
// made under (Intent.CredentialKeyID, a keyed digest of a fixed text:
// the same for the same key, another for another, and never the key).
// A recovery given another key is refused as such — unverifiable with a
// *CredentialKeyError, nothing sent — not taken for a changed account;
// with the admitted key a changed selector is a *CredentialChangedError
// that says the key was checked. On SQLite and PostgreSQL.
func TestRecoverWithAnotherKeyIsRefusedAsSuchRG12(t *testing.T) {
	forEachStore(t, func(t *testing.T, open func(t *testing.T) store.Store) {
		ctx := testCtx(t)
		base := seatAccounts(t)
		prof, err := profile.Parse([]byte(twoSeats))
		if err != nil {
			t.Fatal(err)
		}
		const task = "write it"
		id, rec := seatedAdmittedThenDied(t, ctx, open, base, prof, "k-key-id", task, credentialKey)
		kid := rec.Intent.CredentialKeyID
		if kid == nil || !strings.HasPrefix(*kid, "hmac-sha256:") || strings.Contains(*kid, fmt.Sprintf("%x", credentialKey[:4])) {
			t.Fatalf("credential key id %v; want a keyed digest that is not the key", kid)
		}
		creates, turns, sent := base.Creates(), base.Turns(), len(base.CredentialRequests())
		recoverWith := func(p *profile.Profile, key []byte) retained.Recovery {
			t.Helper()
			create, turn, err := retained.AdmittedRequest(p, rec.Intent, task)
			if err != nil {
				t.Fatal(err)
			}
			got, err := retained.RecoverRetainedRun(ctx, retained.RecoverOptions{Provider: base.Reconnect(), Store: open(t), RunID: id,
				Environment: create, Turn: &turn, Profile: p, CredentialKey: key})
			if err != nil {
				t.Fatal(err)
			}
			return got
		}
		otherKey := bytes.Repeat([]byte{0xa5}, retained.MinCredentialKeySize)
		for name, p := range map[string]*profile.Profile{"the admitted profile": prof, "a changed selector": reseated(t)} {
			got := recoverWith(p, otherKey)
			var keyErr *retained.CredentialKeyError
			if got.Outcome != retained.Unverifiable || !errors.As(got.Cause, &keyErr) || keyErr.RunID != id || keyErr.Stage != 0 ||
				!errors.Is(got.Cause, retained.ErrInvalidOptions) || errors.Is(got.Cause, retained.ErrCredentialChanged) {
				t.Fatalf("%s under another key: %+v; want unverifiable with a *CredentialKeyError for stage 0", name, got)
			}
		}
		got := recoverWith(reseated(t), credentialKey)
		var changedErr *retained.CredentialChangedError
		if got.Outcome != retained.Unverifiable || !errors.As(got.Cause, &changedErr) || !changedErr.KeyChecked ||
			strings.Contains(got.Cause.Error(), "CredentialKey") {
			t.Fatalf("a changed selector under the admitted key: %+v; want a *CredentialChangedError that checked the key", got)
		}
		if base.Creates() != creates || base.Turns() != turns || len(base.CredentialRequests()) != sent {
			t.Fatalf("%d creates, %d turns, %d credential requests after the refusals; want %d, %d, %d: nothing sent",
				base.Creates(), base.Turns(), len(base.CredentialRequests()), creates, turns, sent)
		}
		if got := recoverWith(prof, credentialKey); got.Outcome != retained.Recovered {
			t.Fatalf("recovery with the admitted key and profile: %+v", got)
		}
	})
}

// seatedAdmittedThenDied starts a seated retained run of prof on base
// under idempotency key key (credential key credKey; nil for none) whose
// process dies once its environment is admitted, and returns the run's
// record id and its admission record as another process loads it.
func seatedAdmittedThenDied(t *testing.T, ctx context.Context, open func(t *testing.T) store.Store, base *scripted.Provider, prof *profile.Profile, key, task string, credKey []byte) (string, *retained.Record) {
	t.Helper()
	o := retained.SeatedOptions{Accounts: kernel.AccountManagerFunc(func(context.Context, int, profile.Seat) (contract.Provider, error) {
		return base, nil
	}), Store: open(t), Profile: prof, IdempotencyKey: key, TurnID: "turn-1", Task: task,
		OnAdmission: (&recorder{fail: retained.AdmissionEnvironment}).hook, CredentialKey: credKey}
	if _, err := retained.StartSeated(ctx, o); err == nil {
		t.Fatal("the seated start whose process died succeeded")
	}
	_, id, _ := retained.DeriveIdentity(key, "turn-1")
	rec, err := retained.Load(ctx, open(t), id)
	if err != nil {
		t.Fatal(err)
	}
	return id, rec
}
