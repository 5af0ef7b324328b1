package retained_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/retained"
	"github.com/agentrt/agentrt/store"
)

// midTurnSeats: stage 0's account runs out part way through its turn
// (after a draft), leaving the draft in its native session; the next
// turn of the same task finishes the note on the second model.
const midTurnSeats = `{"accounts":{"team-a":{},"team-b":{}},"turns":[
 {"match":"write a note","servedModel":"scripted/first","steps":[{"text":"a draft"}],"end":"quota","error":"the five-hour window is used up"},
 {"match":"write a note","servedModel":"scripted/second","steps":[{"text":"the note, finished"}]}]}`

// followToEnd follows a stage's run to its end: the error its events
// end with (a mid-turn quota refusal), else its result's failure.
func followToEnd(ctx context.Context, run *retained.Run, _ kernel.StageAttempt) error {
	for _, err := range run.Events(ctx, retained.Cursor{}) {
		if err != nil {
			return err
		}
	}
	res, err := run.Result(ctx)
	if err != nil {
		return err
	}
	if !res.Success {
		return errors.New("the run failed")
	}
	return nil
}

// credentialTrail is the stage and occasion of every credential request
// the provider's account owner received.
func credentialTrail(p *scripted.Provider) []string {
	var out []string
	for _, c := range p.CredentialRequests() {
		out = append(out, fmt.Sprintf("%d/%s", c.Stage, c.Occasion))
	}
	return out
}

// RG-07, RG-08, RG-10, RG-11 (seed 003) for retained runs: a quota
// refusal that breaks stage 0's turn off part way keeps its native
// session; the kernel's rule proves the next stage, served by the same
// provider under its own account, can continue it, so stage 1 is a
// native continuation of stage 0's run — the same environment and native
// session id, no second create, the same logical id, node and turn id
// (in its operation id) and the caller's deadline — recorded
// ContinuityNative. Its credential request reaches the account owner on
// the continued turn (the runtime never picks the account). Every
// admission record — stage 1's intent and environment before the
// continuation is sent — is durable, read through a second store handle,
// before the hook sees it. Started again with the same options, each
// stage replays: the recorded continuation is sent again and answered
// replayed, never a second turn. On SQLite and PostgreSQL.
func TestStartSeatedContinuesTheRefusedSessionNatively(t *testing.T) {
	forEachStore(t, func(t *testing.T, open func(t *testing.T) store.Store) {
		ctx := testCtx(t)
		deadline, _ := ctx.Deadline()
		s, other := open(t), open(t)
		p := seatedScripted(t, midTurnSeats)
		prof, err := profile.Parse([]byte(twoSeats))
		if err != nil {
			t.Fatal(err)
		}
		// Each admission record is read back through another handle when
		// the hook sees it; a native stage's continuation is sent only
		// once its intent and environment records are durable.
		var current string // the record of the stage being admitted
		var sent int64     // native continuations sent before this start
		rec := &recorder{check: func(ctx context.Context, a retained.Admission) error {
			if a.Kind == retained.AdmissionIntent {
				current = a.Intent.RunID
			}
			r, err := retained.Load(ctx, other, current)
			if err != nil {
				return fmt.Errorf("%s: the record is not durable: %w", a.Kind, err)
			}
			switch {
			case a.Kind == retained.AdmissionEnvironment && r.Environment == nil,
				a.Kind == retained.AdmissionDispatched && (r.Dispatched == nil || r.Dispatched.ControlRef != a.Dispatched.ControlRef):
				return fmt.Errorf("%s: the record %s does not hold it yet", a.Kind, current)
			case r.Intent.NativeContinuation != nil && a.Kind != retained.AdmissionDispatched && p.Counters().NativeContinuations != sent:
				return fmt.Errorf("%s: the continuation was sent before its admission record was durable", a.Kind)
			}
			return nil
		}}
		o := retained.SeatedOptions{Accounts: kernel.AccountManagerFunc(func(context.Context, int, profile.Seat) (contract.Provider, error) { return p, nil }),
			Store: s, Profile: prof, IdempotencyKey: "k-native", TurnID: "turn-1", Task: "write a note", OnAdmission: rec.hook,
			Follow: followToEnd}
		res, err := retained.StartSeated(ctx, o)
		if err != nil {
			t.Fatal(err)
		}
		if d, _ := ctx.Deadline(); !d.Equal(deadline) {
			t.Error("the deadline changed")
		}
		_, first, _ := retained.DeriveIdentity("k-native", "turn-1")
		second, _ := retained.NativeContinuationRecordID("k-native", retained.StageKey("k-native", 0, 1)+"/turn-1")
		node := kernel.SeatedNode(first)
		if len(res.Stages) != 2 || res.Run == nil {
			t.Fatalf("seated run %+v", res)
		}
		s0, s1 := res.Stages[0], res.Stages[1]
		if s0.Outcome != kernel.StageQuotaRefused || s0.Continuity != kernel.ContinuityFresh || s0.NativeSessionID == "" || s0.RunID != first || s0.Node != node {
			t.Errorf("stage 0 %+v; want refused for quota in a fresh session with a native id", s0)
		}
		if s1.Outcome != kernel.StageCompleted || s1.Continuity != kernel.ContinuityNative || s1.ContinuityReason != "" ||
			s1.NativeSessionID != s0.NativeSessionID || s1.RunID != second || s1.Node != node {
			t.Errorf("stage 1 %+v; want completed, native, in native session %q, record %s", s1, s0.NativeSessionID, second)
		}
		r0, err := retained.Load(ctx, other, first)
		if err != nil {
			t.Fatal(err)
		}
		ref := res.Run.ControlRef()
		if ref.Record != second || ref.Run.EnvironmentID != r0.Dispatched.ControlRef.EnvironmentID || ref.Run.SessionID != r0.Dispatched.ControlRef.SessionID {
			t.Errorf("stage 1 ran as %+v; want record %s in stage 0's environment and session %+v", ref, second, r0.Dispatched.ControlRef)
		}
		if p.Creates() != 1 || p.Counters().NativeContinuations != 1 {
			t.Errorf("%d creates, %d native continuations; want 1 and 1", p.Creates(), p.Counters().NativeContinuations)
		}
		if got, want := credentialTrail(p), []string{"0/create", "0/turn", "1/turn"}; !slices.Equal(got, want) {
			t.Errorf("credential requests the account owner received %v; want %v", got, want)
		}
		if sel := p.CredentialRequests()[2].Selector; sel.ID == nil || *sel.ID != "team-b" {
			t.Errorf("stage 1's selector %+v; want seat team-b", sel)
		}
		want := []retained.AdmissionKind{retained.AdmissionIntent, retained.AdmissionEnvironment, retained.AdmissionDispatched,
			retained.AdmissionIntent, retained.AdmissionEnvironment, retained.AdmissionDispatched}
		if diff := cmp.Diff(want, rec.kinds()); diff != "" {
			t.Fatalf("admission records delivered (-want +got):\n%s", diff)
		}
		r1, err := retained.Load(ctx, other, second)
		if err != nil {
			t.Fatal(err)
		}
		if in := r1.Intent; in.NativeContinuation == nil || in.NativeContinuation.Continues != first || in.Stage == nil || *in.Stage != 1 || in.TurnID != "turn-1" ||
			r1.Seat == nil || r1.Seat.Continuation == nil || r1.Seat.Node != node || r1.Seat.Logical != first || r1.Dispatched == nil ||
			r1.Native == nil || r1.Native.NativeSessionID != s0.NativeSessionID {
			t.Errorf("stage 1's record %+v (seat %+v)", r1, r1.Seat)
		}
		if r0.Seat == nil || r0.Seat.Next != second || r0.Seat.MovedOn == nil || r0.Seat.MovedOn.Outcome != kernel.StageQuotaRefused {
			t.Errorf("stage 0's seat link %+v; want it moved on to %s", r0.Seat, second)
		}
		latest, err := retained.Latest(ctx, other, first)
		if err != nil || latest.ID != second {
			t.Errorf("Latest(%s) = %+v (%v); want stage 1's record", first, latest, err)
		}

		sent = p.Counters().NativeContinuations
		again, err := retained.StartSeated(ctx, o)
		if err != nil || again.Run == nil || again.Run.ControlRef() != ref {
			t.Fatalf("started again: %+v (%v); want the same run %+v", again, err, ref)
		}
		if len(again.Stages) != 2 || again.Stages[1].Continuity != kernel.ContinuityNative || again.Stages[1].Outcome != kernel.StageCompleted {
			t.Errorf("started again: stages %+v", again.Stages)
		}
		if p.Creates() != 1 || p.Counters().NativeContinuations != 1 {
			t.Errorf("started again: %d creates, %d native continuations; want still 1 and 1", p.Creates(), p.Counters().NativeContinuations)
		}
		if diff := cmp.Diff(append(want, want...), rec.kinds()); diff != "" {
			t.Errorf("started again: admission records delivered (-want +got):\n%s", diff)
		}
	})
}

// RG-11's other half for retained runs: when the kernel's rule cannot
// prove continuity — here the provider's sessions declare no native
// continuation — the next stage starts a fresh session in an environment
// of its own, recorded ContinuityFresh with the rule's reason; started
// again, the recorded decision is kept and the fresh stage replays. On
// SQLite and PostgreSQL.
func TestStartSeatedStartsFreshWhenContinuityIsUnproven(t *testing.T) {
	forEachStore(t, func(t *testing.T, open func(t *testing.T) store.Store) {
		ctx := testCtx(t)
		s := open(t)
		base := seatedScripted(t, midTurnSeats)
		p := &wrapped{Provider: base}
		prof, err := profile.Parse([]byte(twoSeats))
		if err != nil {
			t.Fatal(err)
		}
		o := retained.SeatedOptions{Accounts: kernel.AccountManagerFunc(func(context.Context, int, profile.Seat) (contract.Provider, error) { return p, nil }),
			Store: s, Profile: prof, IdempotencyKey: "k-fresh", TurnID: "turn-1", Task: "write a note", OnAdmission: (&recorder{}).hook,
			Follow: followToEnd}
		res, err := retained.StartSeated(ctx, o)
		if err != nil {
			t.Fatal(err)
		}
		_, second, _ := retained.DeriveIdentity(retained.StageKey("k-fresh", 0, 1), "turn-1")
		if len(res.Stages) != 2 || res.Run == nil || res.Run.ControlRef().Record != second {
			t.Fatalf("seated run %+v", res)
		}
		s1 := res.Stages[1]
		if s1.Outcome != kernel.StageCompleted || s1.Continuity != kernel.ContinuityFresh || s1.ContinuityReason != "provider scripted declares no native continuation" {
			t.Errorf("stage 1 %+v; want completed, fresh, with the rule's reason", s1)
		}
		if base.Creates() != 2 || base.Counters().NativeContinuations != 0 {
			t.Errorf("%d creates, %d native continuations; want 2 and 0", base.Creates(), base.Counters().NativeContinuations)
		}
		again, err := retained.StartSeated(ctx, o)
		if err != nil || again.Run == nil || again.Run.ControlRef() != res.Run.ControlRef() {
			t.Fatalf("started again: %+v (%v); want the same run", again, err)
		}
		if got := again.Stages[1]; got.Continuity != kernel.ContinuityFresh || got.ContinuityReason != s1.ContinuityReason {
			t.Errorf("started again: stage 1 %+v; want the recorded decision", got)
		}
		if base.Creates() != 2 {
			t.Errorf("started again made %d environments", base.Creates()-2)
		}
	})
}

// RG-10, RG-11: stage 1 on another provider of the same name (another
// sidecar or account's endpoint) does not continue the session stage 0's
// refusal left on the first: it starts fresh on its own provider, and
// the provider that refused admits no continuation. On SQLite and
// PostgreSQL.
func TestStartSeatedStartsFreshOnAnotherProviderOfTheSameName(t *testing.T) {
	forEachStore(t, func(t *testing.T, open func(t *testing.T) store.Store) {
		ctx := testCtx(t)
		first := seatedScripted(t, midTurnSeats)
		second := seatedScripted(t, `{"accounts":{"team-a":{},"team-b":{}},"servedModel":"scripted/second","turns":[{"repeat":true,"steps":[{"text":"a fresh note"}]}]}`)
		prof, err := profile.Parse([]byte(twoSeats))
		if err != nil {
			t.Fatal(err)
		}
		o := retained.SeatedOptions{Accounts: kernel.AccountManagerFunc(func(_ context.Context, k int, _ profile.Seat) (contract.Provider, error) {
			return []contract.Provider{first, second}[k], nil
		}), Store: open(t), Profile: prof, IdempotencyKey: "k-same-name", TurnID: "turn-1", Task: "write a note", OnAdmission: (&recorder{}).hook,
			Follow: followToEnd}
		res, err := retained.StartSeated(ctx, o)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Stages) != 2 {
			t.Fatalf("stages %+v", res.Stages)
		}
		if s1 := res.Stages[1]; s1.Outcome != kernel.StageCompleted || s1.Continuity != kernel.ContinuityFresh || s1.ContinuityReason == "" {
			t.Errorf("stage 1 %+v; want completed, fresh, with a reason", s1)
		}
		if first.Counters().NativeContinuations != 0 || second.Creates() != 1 {
			t.Errorf("the refusing provider admitted %d native continuations, stage 1's made %d environments; want 0 and 1",
				first.Counters().NativeContinuations, second.Creates())
		}
	})
}

// threeSeats: stage 0 on team-a, stage 1 on team-b, stage 2 on team-c,
// all on the same provider.
const threeSeats = `{"name":"writer","harness":"cli-base","model":{"provider":"scripted","default":"scripted/first"},
 "seats":[{"harness":"cli-base","provider":"scripted","model":"scripted/first","selector":{"kind":"seat","id":"team-a"}},
          {"harness":"cli-base","provider":"scripted","model":"scripted/second","selector":{"kind":"seat","id":"team-b"}},
          {"harness":"cli-base","provider":"scripted","model":"scripted/third","selector":{"kind":"seat","id":"team-c"}}]}`

// RG-08, RG-11: when the next stage's own account refuses the native
// continuation for quota before admitting anything, the session is as
// the refused stage left it, and the stage after goes on natively in it:
// stage 1 is recorded quota-refused with native continuity, stage 2
// completes in stage 0's environment and native session, and each
// stage's credential request reached the account owner on its turn.
// Started again, every stage replays — stage 1's recorded end stands
// (its continuation is not sent again into a session that has moved on;
// once it was, the answer was taken for an unknown outcome), stage 2's
// continuation is answered replayed — and nothing more is created or
// continued. On SQLite and PostgreSQL.
func TestStartSeatedPassesTheSessionOnPastARefusedContinuation(t *testing.T) {
	forEachStore(t, func(t *testing.T, open func(t *testing.T) store.Store) {
		ctx := testCtx(t)
		p := seatedScripted(t, strings.Replace(midTurnSeats, `"team-b":{}`, `"team-b":{"exhausted":true},"team-c":{}`, 1))
		prof, err := profile.Parse([]byte(threeSeats))
		if err != nil {
			t.Fatal(err)
		}
		o := retained.SeatedOptions{Accounts: kernel.AccountManagerFunc(func(context.Context, int, profile.Seat) (contract.Provider, error) { return p, nil }),
			Store: open(t), Profile: prof, IdempotencyKey: "k-pass", TurnID: "turn-1", Task: "write a note", OnAdmission: (&recorder{}).hook,
			Follow: followToEnd}
		res, err := retained.StartSeated(ctx, o)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Stages) != 3 || res.Run == nil {
			t.Fatalf("seated run %+v", res)
		}
		s0, s1, s2 := res.Stages[0], res.Stages[1], res.Stages[2]
		if s1.Outcome != kernel.StageQuotaRefused || s1.Continuity != kernel.ContinuityNative {
			t.Errorf("stage 1 %+v; want its continuation refused for quota", s1)
		}
		if s2.Outcome != kernel.StageCompleted || s2.Continuity != kernel.ContinuityNative || s2.NativeSessionID == "" || s2.NativeSessionID != s0.NativeSessionID {
			t.Errorf("stage 2 %+v; want completed natively in stage 0's native session %q", s2, s0.NativeSessionID)
		}
		first, err := retained.Load(ctx, open(t), s0.RunID)
		if err != nil {
			t.Fatal(err)
		}
		if ref := res.Run.ControlRef().Run; ref.EnvironmentID != first.Dispatched.ControlRef.EnvironmentID || ref.SessionID != first.Dispatched.ControlRef.SessionID {
			t.Errorf("stage 2 ran in %+v; want stage 0's environment and session", ref)
		}
		if got, want := credentialTrail(p), []string{"0/create", "0/turn", "1/turn", "2/turn"}; !slices.Equal(got, want) {
			t.Errorf("credential requests the account owner received %v; want %v", got, want)
		}
		if p.Creates() != 1 || p.Counters().NativeContinuations != 1 {
			t.Errorf("%d creates, %d native continuations; want 1 and 1", p.Creates(), p.Counters().NativeContinuations)
		}
		again, err := retained.StartSeated(ctx, o)
		if err != nil || again.Run == nil || again.Run.ControlRef() != res.Run.ControlRef() || len(again.Stages) != 3 {
			t.Fatalf("started again: %+v (%v); want the same run", again, err)
		}
		if p.Creates() != 1 || p.Counters().NativeContinuations != 1 {
			t.Errorf("started again: %d creates, %d native continuations; want still 1 and 1", p.Creates(), p.Counters().NativeContinuations)
		}
	})
}

// RG-11: the kernel's rule proves continuity, but the provider refuses
// the native continuation itself (unverified), admitting nothing: the
// stage starts fresh after all, in an environment of its own, recorded
// ContinuityFresh with the refusal as its reason; the refused
// continuation's record ends failed and the chain leads to the fresh
// stage. Started again, the fresh stage replays. On SQLite and
// PostgreSQL.
func TestStartSeatedStartsFreshWhenTheProviderRefusesTheContinuation(t *testing.T) {
	forEachStore(t, func(t *testing.T, open func(t *testing.T) store.Store) {
		ctx := testCtx(t)
		base := seatedScripted(t, midTurnSeats)
		p := &wrapped{Provider: base, refuseNative: contract.ContinuationStatusUnverified}
		prof, err := profile.Parse([]byte(twoSeats))
		if err != nil {
			t.Fatal(err)
		}
		st := open(t)
		o := retained.SeatedOptions{Accounts: kernel.AccountManagerFunc(func(context.Context, int, profile.Seat) (contract.Provider, error) { return p, nil }),
			Store: st, Profile: prof, IdempotencyKey: "k-refused", TurnID: "turn-1", Task: "write a note", OnAdmission: (&recorder{}).hook,
			Follow: followToEnd}
		res, err := retained.StartSeated(ctx, o)
		if err != nil {
			t.Fatal(err)
		}
		_, first, _ := retained.DeriveIdentity("k-refused", "turn-1")
		_, second, _ := retained.DeriveIdentity(retained.StageKey("k-refused", 0, 1), "turn-1")
		native, _ := retained.NativeContinuationRecordID("k-refused", retained.StageKey("k-refused", 0, 1)+"/turn-1")
		if len(res.Stages) != 2 || res.Run == nil || res.Run.ControlRef().Record != second {
			t.Fatalf("seated run %+v", res)
		}
		if s1 := res.Stages[1]; s1.Outcome != kernel.StageCompleted || s1.Continuity != kernel.ContinuityFresh ||
			s1.ContinuityReason != "the provider refused the native continuation: unverified" || s1.RunID != second {
			t.Errorf("stage 1 %+v; want completed fresh, with the refusal as its reason", s1)
		}
		if base.Creates() != 2 {
			t.Errorf("%d creates; want stage 1's own", base.Creates())
		}
		r0, err := retained.Load(ctx, st, first)
		if err != nil || r0.Seat == nil || r0.Seat.Next != second {
			t.Errorf("stage 0's record %+v (%v); want it to lead to the fresh stage %s", r0, err, second)
		}
		if rn, err := retained.Load(ctx, st, native); err != nil || rn.Status != store.StatusFailed || rn.Dispatched != nil {
			t.Errorf("the refused continuation's record %+v (%v); want it failed, never dispatched", rn, err)
		}
		again, err := retained.StartSeated(ctx, o)
		if err != nil || again.Run == nil || again.Run.ControlRef() != res.Run.ControlRef() {
			t.Fatalf("started again: %+v (%v); want the same run", again, err)
		}
		if got := again.Stages[1]; got.Continuity != kernel.ContinuityFresh || got.ContinuityReason != res.Stages[1].ContinuityReason || base.Creates() != 2 {
			t.Errorf("started again: stage 1 %+v, %d creates; want the recorded decision and no new environment", got, base.Creates())
		}
	})
}
