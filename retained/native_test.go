package retained_test

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/retained"
	"github.com/agentrt/agentrt/store"
)

// The subscription accounts of the scripted provider's account owner.
const (
	acctAlpha = "acct-alpha-7f3"
	acctBravo = "acct-bravo-19c"
)

// Spec runtime §3.8 contextBoundary / beginNativeContinuation /
// continueNative, RG-07, RG-11: a retained run's session is continued
// natively — in the same session, with no copied history — from the
// boundary proven when the continuation began; the new turn carries the
// seat stage's credential request, which the provider's account owner
// binds; one without it is refused by the subscription provider, an
// error, never a success. Another process (a new client and store
// connection) that sends the same request again gets the same
// continuation replayed, not a second one.
func TestRetainedNativeContinuationKeepsTheSessionRG11(t *testing.T) {
	forEachStore(t, func(t *testing.T, open func(t *testing.T) store.Store) {
		ctx := testCtx(t)
		s := script(0)
		s.Accounts = map[string]scripted.Account{acctBravo: {}}
		base := scripted.New(s, scripted.Options{})
		bravo := acctBravo
		cred := func(occasion string) *contract.CredentialRequest {
			return &contract.CredentialRequest{Stage: 1, Harness: "cli-base", Provider: "scripted", Model: "scripted/second",
				Selector: profile.SeatSelector{Kind: profile.SelectorSeat, ID: &bravo}, Occasion: occasion}
		}
		o := startOptions(base, open(t), "key-native", "turn-1", (&recorder{}).hook)
		o.Environment.Credential, o.Turn.Credential = cred(contract.CredentialOnCreate), cred(contract.CredentialOnTurn)
		run, err := retained.StartRetainedRun(ctx, o)
		if err != nil {
			t.Fatal(err)
		}
		if res, err := run.Result(ctx); err != nil || !res.Success {
			t.Fatalf("result %+v, %v", res, err)
		}
		turn := contract.NativeContextContinuationTurn{Prompt: ptr("and now the summary")}
		req, err := run.BeginNativeContinuation(ctx, "continue-1", turn)
		if err != nil {
			t.Fatal(err)
		}
		bare, err := run.BeginNativeContinuation(ctx, "continue-without-credential", turn)
		if err != nil {
			t.Fatal(err)
		}
		if out, err := run.ContinueNative(ctx, bare, contract.NativeContinuationOptions{Turn: turn}); !errors.Is(err, scripted.ErrNoCredentialRequest) {
			t.Fatalf("a continuation without the credential request: %+v, %v", out, err)
		}
		res, err := run.ContinueNative(ctx, req, contract.NativeContinuationOptions{Turn: turn, Credential: cred(contract.CredentialOnTurn)})
		if err != nil {
			t.Fatal(err)
		}
		ack := res.Acknowledgement
		if ack.Status != contract.ContinuationStatusAccepted || ack.HistoryMessagesSent != 0 || res.Result == nil || !res.Result.Success || res.ControlRef == nil {
			t.Fatalf("continuation %+v", res)
		}
		first := run.ControlRef().Run
		if res.ControlRef.SessionID != first.SessionID || res.ControlRef.RunID == first.RunID {
			t.Errorf("the continued run %+v must be a new run in session %s", res.ControlRef, first.SessionID)
		}
		// Another process replays the persisted request.
		again, err := retained.ReconnectRetainedRun(ctx, retained.ReconnectOptions{Provider: base.Reconnect(), Store: open(t), Ref: run.ControlRef()})
		if err != nil {
			t.Fatal(err)
		}
		replay, err := again.ContinueNative(ctx, req, contract.NativeContinuationOptions{Turn: turn, Credential: cred(contract.CredentialOnTurn)})
		if err != nil {
			t.Fatal(err)
		}
		if replay.Acknowledgement.Status != contract.ContinuationStatusReplayed || replay.ControlRef == nil || *replay.ControlRef != *res.ControlRef {
			t.Errorf("replay %+v; want the original continuation replayed", replay)
		}
		if n := base.Counters().NativeContinuations; n != 1 {
			t.Errorf("%d native continuations; the replay must not continue again", n)
		}
		want := []contract.CredentialRequest{*cred(contract.CredentialOnCreate), *cred(contract.CredentialOnTurn), *cred(contract.CredentialOnTurn)}
		if diff := cmp.Diff(want, base.CredentialRequests()); diff != "" {
			t.Errorf("credential requests (-want +got):\n%s", diff)
		}
		// The session moved on past the handle's run: its boundary is no
		// longer that run's, so the handle proves none (no stale claim).
		deadline := time.Now().Add(10 * time.Second)
		for {
			_, err = again.ContextBoundary(ctx)
			if !errors.Is(err, retained.ErrNoBoundary) || time.Now().After(deadline) {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		if err == nil || errors.Is(err, retained.ErrNoBoundary) {
			t.Errorf("the handle of the first run proved a boundary after the session moved on: %v", err)
		}
	})
}

// A session without native continuation never claims same-chat
// continuity: the handle refuses with ErrNoNativeContinuation.
func TestRetainedNativeContinuationRefusedWithoutTheAbility(t *testing.T) {
	forEachStore(t, func(t *testing.T, open func(t *testing.T) store.Store) {
		ctx := testCtx(t)
		run := finished(t, ctx, &wrapped{Provider: scripted.New(script(0), scripted.Options{})}, open(t), "key-no-native")
		if _, err := run.ContextBoundary(ctx); !errors.Is(err, retained.ErrNoNativeContinuation) {
			t.Errorf("ContextBoundary: %v, want ErrNoNativeContinuation", err)
		}
		turn := contract.NativeContextContinuationTurn{Prompt: ptr("more")}
		if _, err := run.BeginNativeContinuation(ctx, "op", turn); !errors.Is(err, retained.ErrNoNativeContinuation) {
			t.Errorf("BeginNativeContinuation: %v, want ErrNoNativeContinuation", err)
		}
	})
}

// RG-08, RG-11: a native continuation the provider's account owner
// refuses for quota dispatched nothing, so the session's boundary is
// unchanged: the same persisted request, sent again with the next
// authored stage's credential request, continues the same native
// session. The refusal is the typed *contract.QuotaRefusalError.
func TestRetainedNativeContinuationAfterQuotaRefusalRG08RG11(t *testing.T) {
	forEachStore(t, func(t *testing.T, open func(t *testing.T) store.Store) {
		ctx := testCtx(t)
		s := script(0)
		s.Accounts = map[string]scripted.Account{acctAlpha: {Exhausted: true}, acctBravo: {}}
		base := scripted.New(s, scripted.Options{})
		seat := func(k int, acct, occasion string) *contract.CredentialRequest {
			return &contract.CredentialRequest{Stage: k, Harness: "cli-base", Provider: "scripted", Model: "scripted/m",
				Selector: profile.SeatSelector{Kind: profile.SelectorSeat, ID: &acct}, Occasion: occasion}
		}
		o := startOptions(base, open(t), "key-native-quota", "turn-1", (&recorder{}).hook)
		o.Environment.Credential, o.Turn.Credential = seat(1, acctBravo, contract.CredentialOnCreate), seat(1, acctBravo, contract.CredentialOnTurn)
		run, err := retained.StartRetainedRun(ctx, o)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := run.Result(ctx); err != nil {
			t.Fatal(err)
		}
		turn := contract.NativeContextContinuationTurn{Prompt: ptr("keep going")}
		req, err := run.BeginNativeContinuation(ctx, "continue-after-quota", turn)
		if err != nil {
			t.Fatal(err)
		}
		_, err = run.ContinueNative(ctx, req, contract.NativeContinuationOptions{Turn: turn, Credential: seat(0, acctAlpha, contract.CredentialOnTurn)})
		var quota *contract.QuotaRefusalError
		if !errors.As(err, &quota) || quota.Stage != 0 {
			t.Fatalf("a continuation on the exhausted account: %v; want a typed quota refusal of stage 0", err)
		}
		res, err := run.ContinueNative(ctx, req, contract.NativeContinuationOptions{Turn: turn, Credential: seat(1, acctBravo, contract.CredentialOnTurn)})
		if err != nil {
			t.Fatal(err)
		}
		if res.Acknowledgement.Status != contract.ContinuationStatusAccepted || res.ControlRef == nil || res.ControlRef.SessionID != run.ControlRef().Run.SessionID {
			t.Fatalf("continuation after the refusal %+v; want the same session continued", res)
		}
		if n := base.Counters().NativeContinuations; n != 1 {
			t.Errorf("%d native continuations; want the one accepted", n)
		}
		want := []contract.CredentialRequest{*seat(1, acctBravo, contract.CredentialOnCreate), *seat(1, acctBravo, contract.CredentialOnTurn),
			*seat(0, acctAlpha, contract.CredentialOnTurn), *seat(1, acctBravo, contract.CredentialOnTurn)}
		if diff := cmp.Diff(want, base.CredentialRequests()); diff != "" {
			t.Errorf("credential requests (-want +got):\n%s", diff)
		}
	})
}

// Spec runtime §3.8 continueNative: a provider's definite refusal of a
// continuation — here boundary_mismatch, for a request begun before the
// session moved on — is a result naming why, not an error: nothing was
// admitted, and the caller may start fresh. It was once taken for an
// answer that does not answer the request (an unknown outcome).
func TestRetainedNativeContinuationRefusalIsAResult(t *testing.T) {
	forEachStore(t, func(t *testing.T, open func(t *testing.T) store.Store) {
		ctx := testCtx(t)
		base := scripted.New(script(0), scripted.Options{})
		run := finished(t, ctx, base, open(t), "key-native-refused")
		turn := contract.NativeContextContinuationTurn{Prompt: ptr("more")}
		stale, err := run.BeginNativeContinuation(ctx, "continue-stale", turn)
		if err != nil {
			t.Fatal(err)
		}
		first, err := run.BeginNativeContinuation(ctx, "continue-first", turn)
		if err != nil {
			t.Fatal(err)
		}
		if res, err := run.ContinueNative(ctx, first, contract.NativeContinuationOptions{Turn: turn}); err != nil || !res.Succeeded() {
			t.Fatalf("the first continuation: %+v, %v", res, err)
		}
		res, err := run.ContinueNative(ctx, stale, contract.NativeContinuationOptions{Turn: turn})
		if err != nil {
			t.Fatalf("a continuation the provider refused: %v; want its refusal as a result", err)
		}
		if res.Succeeded() || res.Acknowledgement.Status != contract.ContinuationStatusBoundaryMismatch || res.Acknowledgement.OperationID != "continue-stale" {
			t.Errorf("refusal %+v; want boundary_mismatch for continue-stale", res.Acknowledgement)
		}
		if n := base.Counters().NativeContinuations; n != 1 {
			t.Errorf("%d native continuations; the refused one admitted nothing", n)
		}
	})
}
