package kernel_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/internal/storetest"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/memory"
)

// midTurnQuota is a subscription provider's script: the first turn's
// account runs out part way (after a draft), the next turn of the same
// task finishes the note on the second model.
const midTurnQuota = `{"accounts":{"team-a":{},"team-b":{}},"turns":[
 {"match":"write a note","servedModel":"scripted/first","steps":[{"text":"a draft"},{"usage":{"inputTokens":4,"outputTokens":2},"mode":"delta"}],"end":"quota","error":"the five-hour window is used up"},
 {"match":"write a note","servedModel":"scripted/second","steps":[{"text":"the note, finished"},{"usage":{"inputTokens":6,"outputTokens":3},"mode":"delta"}]}]}`

// RG-08, RG-10, RG-11 (PRF-11): a quota refusal that breaks stage 0's
// turn off part way leaves a native session holding the draft; stage 1,
// served by the same provider under its own account (seat team-b),
// continues that session natively — the same environment and native
// session id, no second create, the original deadline and logical run
// id — and its credential request reaches the provider's account owner
// on the continued turn. The record names both stages, the refusal and
// the continuity of each.
//
// It runs on the memory store and on SQLite and PostgreSQL, where the
// records are read back through a second handle.
func TestSeatedQuotaMidTurnContinuesNativeSession(t *testing.T) {
	t.Run("memory", func(t *testing.T) {
		st := memory.New(nil)
		testSeatedQuotaMidTurnContinuesNativeSession(t, st, st)
	})
	storetest.Each(t, func(t *testing.T, open func(t *testing.T) store.Store) {
		testSeatedQuotaMidTurnContinuesNativeSession(t, open(t), open(t))
	})
}

func testSeatedQuotaMidTurnContinuesNativeSession(t *testing.T, st, reader store.Store) {
	// The scripted provider is the one that records what it received:
	// its account owner keeps every credential request.
	p := scripted.New(mustScript(t, midTurnQuota), scripted.Options{})
	accounts := kernel.AccountManagerFunc(func(context.Context, int, profile.Seat) (contract.Provider, error) { return p, nil })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	deadline, _ := ctx.Deadline()
	res, err := kernel.ExecuteSeated(ctx, kernel.SeatedRequest{Accounts: accounts, Request: kernel.Request{
		Profile: mustProfile(t, seatWriter), Task: "write a note", Store: st, Check: nonEmpty, RunID: "writer-n",
	}})
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := ctx.Deadline(); !d.Equal(deadline) {
		t.Error("the deadline changed")
	}
	if res.RunID != "writer-n" || res.Final == nil || res.Final.Text != "the note, finished" || !res.Final.Delivered {
		t.Fatalf("result %+v", res.Final)
	}
	stages := res.Stages
	if len(stages) != 2 {
		t.Fatalf("stages %+v", stages)
	}
	if stages[0].Outcome != kernel.StageQuotaRefused || stages[0].Continuity != kernel.ContinuityFresh || stages[0].NativeSessionID == "" {
		t.Errorf("stage 0 %+v; want a quota refusal in a fresh session with a native id", stages[0])
	}
	if stages[1].Outcome != kernel.StageCompleted || stages[1].Continuity != kernel.ContinuityNative ||
		stages[1].NativeSessionID != stages[0].NativeSessionID || stages[1].ContinuityReason != "" {
		t.Errorf("stage 1 %+v; want completed, native, in native session %q", stages[1], stages[0].NativeSessionID)
	}
	if got := p.Counters().NativeContinuations; got != 1 {
		t.Errorf("%d native continuations; want 1", got)
	}
	// RG-10: the runtime sent each stage's request; the account owner
	// bound the account. Stage 1's request reached it on the continued
	// turn (RG-08); there was one create, stage 0's (stage 1 continued
	// its environment).
	team := "team-b"
	req := func(k int, occasion string) contract.CredentialRequest {
		seat := mustProfile(t, seatWriter).Seats[k]
		return contract.CredentialRequest{Stage: k, Harness: seat.Harness, Provider: seat.Provider, Model: seat.Model, Selector: seat.Selector, Occasion: occasion}
	}
	want := []contract.CredentialRequest{req(0, contract.CredentialOnCreate), req(0, contract.CredentialOnTurn), req(1, contract.CredentialOnTurn)}
	if diff := cmp.Diff(want, p.CredentialRequests()); diff != "" {
		t.Errorf("credential requests the account owner received (-want +got):\n%s", diff)
	}
	if got := p.CredentialRequests()[2].Selector; got.ID == nil || *got.ID != team {
		t.Errorf("stage 1's selector %+v; want seat %s", got, team)
	}
	s0, err0 := kernel.ReadRun(context.Background(), reader, "writer-n.stage-0")
	s1, err1 := kernel.ReadRun(context.Background(), reader, "writer-n.stage-1")
	if err0 != nil || err1 != nil || s0.Exact == nil || s1.Exact == nil {
		t.Fatalf("stage runs %+v %+v (%v, %v)", s0, s1, err0, err1)
	}
	if s1.Exact.EnvironmentID != s0.Exact.EnvironmentID || s1.Exact.NativeSessionID != s0.Exact.NativeSessionID || s1.Status != store.StatusCompleted {
		t.Errorf("stage 1 ran in env %q session %q; stage 0 in env %q session %q", s1.Exact.EnvironmentID, s1.Exact.NativeSessionID, s0.Exact.EnvironmentID, s0.Exact.NativeSessionID)
	}
	logical, err := kernel.ReadRun(context.Background(), reader, "writer-n")
	if err != nil || logical.Seated == nil || logical.Seated.Stages[1].Continuity != kernel.ContinuityNative {
		t.Fatalf("logical record %+v (%v)", logical, err)
	}
	// The seated run created the environment: it is destroyed at the end.
	if env, err := p.Get(context.Background(), string(s0.Exact.EnvironmentID)); err != nil || env != nil {
		t.Errorf("environment %s is still live after the run (%v)", s0.Exact.EnvironmentID, err)
	}
}

// RG-11's other half: when the next stage's provider is not the one
// holding the session, continuity cannot be proven — the stage starts
// fresh in a new environment, the record says why, and the refused
// stage's environment is destroyed rather than leaked.
func TestSeatedQuotaMidTurnFreshWhenContinuityUnproven(t *testing.T) {
	first := scripted.New(mustScript(t, midTurnQuota), scripted.Options{})
	second := newSeatProvider(t, "scripted/second", false)
	second.Provider = scripted.New(mustScript(t, `{"servedModel":"scripted/second","turns":[{"steps":[{"text":"a fresh note"}]}]}`), scripted.Options{Name: "elsewhere"})
	accounts := kernel.AccountManagerFunc(func(_ context.Context, k int, _ profile.Seat) (contract.Provider, error) {
		return []contract.Provider{first, second}[k], nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	st := memory.New(nil)
	res, err := kernel.ExecuteSeated(ctx, kernel.SeatedRequest{Accounts: accounts, Request: kernel.Request{
		Profile: mustProfile(t, seatWriter), Task: "write a note", Store: st, Check: nonEmpty, RunID: "writer-f",
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Stages) != 2 || res.Final.Text != "a fresh note" {
		t.Fatalf("stages %+v, final %+v", res.Stages, res.Final)
	}
	s1 := res.Stages[1]
	if s1.Continuity != kernel.ContinuityFresh || s1.ContinuityReason == "" || s1.NativeSessionID == res.Stages[0].NativeSessionID {
		t.Errorf("stage 1 %+v; want fresh with a reason and its own native session", s1)
	}
	if first.Counters().NativeContinuations != 0 || second.creates != 1 {
		t.Errorf("native continuations %d, second creates %d", first.Counters().NativeContinuations, second.creates)
	}
	s0, err := kernel.ReadRun(context.Background(), st, "writer-f.stage-0")
	if err != nil || s0.Exact == nil {
		t.Fatalf("stage 0 %+v (%v)", s0, err)
	}
	if env, err := first.Get(context.Background(), string(s0.Exact.EnvironmentID)); err != nil || env != nil {
		t.Errorf("stage 0's environment %s is still live (%v); want destroyed", s0.Exact.EnvironmentID, err)
	}
}

// RG-10, RG-11: two stages on two providers of the same name (two
// sidecars, or two accounts of one vendor, as an accounts file names them)
// are two providers: the session stage 0's refusal left is held by the
// first, so stage 1 starts fresh on its own provider — its turn never goes
// to the provider (and account) that just refused.
func TestSeatedQuotaMidTurnFreshOnAnotherProviderOfTheSameName(t *testing.T) {
	first := scripted.New(mustScript(t, midTurnQuota), scripted.Options{})
	second := scripted.New(mustScript(t, `{"accounts":{"team-a":{},"team-b":{}},"servedModel":"scripted/second","turns":[{"repeat":true,"steps":[{"text":"a fresh note"}]}]}`), scripted.Options{})
	if first.Name() != second.Name() {
		t.Fatalf("providers named %q and %q; want the same name", first.Name(), second.Name())
	}
	accounts := kernel.AccountManagerFunc(func(_ context.Context, k int, _ profile.Seat) (contract.Provider, error) {
		return []contract.Provider{first, second}[k], nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := kernel.ExecuteSeated(ctx, kernel.SeatedRequest{Accounts: accounts, Request: kernel.Request{
		Profile: mustProfile(t, seatWriter), Task: "write a note", Store: memory.New(nil), Check: nonEmpty, RunID: "writer-same-name",
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Stages) != 2 || res.Final == nil || res.Final.Text != "a fresh note" {
		t.Fatalf("stages %+v, final %+v", res.Stages, res.Final)
	}
	if s1 := res.Stages[1]; s1.Continuity != kernel.ContinuityFresh || s1.ContinuityReason == "" {
		t.Errorf("stage 1 continuity %q (%q); want fresh with a reason", s1.Continuity, s1.ContinuityReason)
	}
	if got := first.Counters().NativeContinuations; got != 0 {
		t.Errorf("the refusing provider admitted %d native continuations; want 0", got)
	}
	if got := len(second.CredentialRequests()); got == 0 {
		t.Error("stage 1's provider received no credential request: the stage never ran on it")
	}
}

// ResumeSeated refuses a run that is not interrupted: one that ended is
// the truth of what happened, never run again.
func TestResumeSeatedRefusesAnEndedRun(t *testing.T) {
	p := scripted.New(mustScript(t, midTurnQuota), scripted.Options{})
	st := memory.New(nil)
	accounts := kernel.AccountManagerFunc(func(context.Context, int, profile.Seat) (contract.Provider, error) { return p, nil })
	req := kernel.SeatedRequest{Accounts: accounts, Request: kernel.Request{
		Profile: mustProfile(t, seatWriter), Task: "write a note", Store: st, Check: nonEmpty, RunID: "writer-done"}}
	if _, err := kernel.ExecuteSeated(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	_, err := kernel.ResumeSeated(context.Background(), req)
	if !errors.Is(err, kernel.ErrNotResumable) {
		t.Fatalf("resuming a completed run: %v; want ErrNotResumable", err)
	}
	if runs, _ := st.ListRuns(context.Background(), store.ListOptions{Kind: kernel.KindSeated}); len(runs) != 1 {
		t.Errorf("%d seated records; the refused resume must record none", len(runs))
	}
	req.RunID = ""
	if _, err := kernel.ResumeSeated(context.Background(), req); !errors.Is(err, kernel.ErrInvalidOptions) {
		t.Errorf("resuming without a run id: %v; want ErrInvalidOptions", err)
	}
}

// BenchmarkExecuteSeatedNativeContinuation measures a two-stage seated
// run whose first stage runs out of quota mid-turn and whose second
// continues the session natively: the cost the runtime adds to the
// provider's (scripted, in memory) for the refusal, the kept
// environment, the boundary proof and the continuation.
func BenchmarkExecuteSeatedNativeContinuation(b *testing.B) {
	script, err := scripted.ParseScript([]byte(midTurnQuota))
	if err != nil {
		b.Fatal(err)
	}
	prof, err := profile.Parse([]byte(seatWriter))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		p := scripted.New(script, scripted.Options{})
		accounts := kernel.AccountManagerFunc(func(context.Context, int, profile.Seat) (contract.Provider, error) { return p, nil })
		res, err := kernel.ExecuteSeated(ctx, kernel.SeatedRequest{Accounts: accounts, Request: kernel.Request{
			Profile: prof, Task: "write a note", Store: memory.New(nil), Check: nonEmpty}})
		if err != nil || res.Stages[1].Continuity != kernel.ContinuityNative {
			b.Fatalf("%+v, %v", res, err)
		}
	}
}

// RG-08, RG-11 through a chain of three: stage 1's account is out too,
// and its provider refuses the native continuation before admitting it,
// so the session is left as stage 0 left it; stage 2 continues that same
// session. Each stage's credential request reached the account owner on
// its own turn, and only one continuation was ever admitted.
func TestSeatedQuotaBeforeContinuationKeepsTheSession(t *testing.T) {
	const script = `{"accounts":{"team-a":{},"team-b":{"exhausted":true},"team-c":{}},"turns":[
 {"match":"write a note","servedModel":"scripted/first","steps":[{"text":"a draft"}],"end":"quota"},
 {"match":"write a note","servedModel":"scripted/third","steps":[{"text":"the note, finished"}]}]}`
	const three = `{"name":"writer","harness":"cli-base","model":{"provider":"scripted","default":"scripted/first"},
 "seats":[{"harness":"cli-base","provider":"scripted","model":"scripted/first","selector":{"kind":"seat","id":"team-a"}},
          {"harness":"cli-base","provider":"scripted","model":"scripted/second","selector":{"kind":"seat","id":"team-b"}},
          {"harness":"cli-base","provider":"scripted","model":"scripted/third","selector":{"kind":"seat","id":"team-c"}}]}`
	p := scripted.New(mustScript(t, script), scripted.Options{})
	accounts := kernel.AccountManagerFunc(func(context.Context, int, profile.Seat) (contract.Provider, error) { return p, nil })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := kernel.ExecuteSeated(ctx, kernel.SeatedRequest{Accounts: accounts, Request: kernel.Request{
		Profile: mustProfile(t, three), Task: "write a note", Store: memory.New(nil), Check: nonEmpty}})
	if err != nil {
		t.Fatal(err)
	}
	type stage struct{ Outcome, Continuity string }
	var got []stage
	for _, s := range res.Stages {
		got = append(got, stage{s.Outcome, s.Continuity})
	}
	want := []stage{{kernel.StageQuotaRefused, kernel.ContinuityFresh}, {kernel.StageQuotaRefused, kernel.ContinuityNative}, {kernel.StageCompleted, kernel.ContinuityNative}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("stages (-want +got):\n%s", diff)
	}
	if res.Stages[2].NativeSessionID == "" || res.Stages[2].NativeSessionID != res.Stages[0].NativeSessionID || res.Final.Text != "the note, finished" {
		t.Errorf("final stage %+v, text %q; want stage 0's native session", res.Stages[2], res.Final.Text)
	}
	var trail []string
	for _, c := range p.CredentialRequests() {
		trail = append(trail, fmt.Sprintf("%d/%s", c.Stage, c.Occasion))
	}
	if diff := cmp.Diff([]string{"0/create", "0/turn", "1/turn", "2/turn"}, trail); diff != "" {
		t.Errorf("credential requests (-want +got):\n%s", diff)
	}
	if n := p.Counters().NativeContinuations; n != 1 {
		t.Errorf("%d native continuations admitted; want 1", n)
	}
}

// refusingProvider is a scripted provider whose sessions prove their
// real boundary and refuse every native continuation as unverified,
// admitting nothing.
type refusingProvider struct{ *scripted.Provider }

func (p refusingProvider) wrap(env contract.Environment, err error) (contract.Environment, error) {
	if env == nil || err != nil {
		return env, err
	}
	return refusingEnv{env}, nil
}

func (p refusingProvider) Create(ctx context.Context, in *contract.CreateInput) (contract.Environment, error) {
	return p.wrap(p.Provider.Create(ctx, in))
}

func (p refusingProvider) Get(ctx context.Context, id string) (contract.Environment, error) {
	return p.wrap(p.Provider.Get(ctx, id))
}

type refusingEnv struct{ contract.Environment }

func (e refusingEnv) Session(ctx context.Context, id string, ref *contract.RunControlRef) (contract.Session, error) {
	s, err := e.Environment.(contract.SessionOpener).Session(ctx, id, ref)
	if err != nil {
		return nil, err
	}
	return refusingSession{s}, nil
}

type refusingSession struct{ contract.Session }

func (s refusingSession) ContextBoundary(ctx context.Context) (*contract.NativeContextBoundaryProof, error) {
	return s.Session.(contract.NativeContinuer).ContextBoundary(ctx)
}

func (s refusingSession) ContinueNative(_ context.Context, req *contract.NativeContextContinuationRequest, _ contract.NativeContinuationOptions) (*contract.NativeContinuationResult, error) {
	return &contract.NativeContinuationResult{Acknowledgement: contract.NativeContextContinuationAcknowledgement{
		OperationID: req.OperationID, RequestDigest: req.RequestDigest, Status: contract.ContinuationStatusUnverified}}, nil
}

// RG-11: when the provider refuses the native continuation itself (a
// definite refusal that admitted nothing), the stage starts fresh with
// the refusal as its reason instead of failing as an unknown outcome.
// The refusal was once taken for an answer that does not answer the
// request, and the run failed.
func TestSeatedStartsFreshWhenTheProviderRefusesTheContinuation(t *testing.T) {
	p := refusingProvider{scripted.New(mustScript(t, midTurnQuota), scripted.Options{})}
	accounts := kernel.AccountManagerFunc(func(context.Context, int, profile.Seat) (contract.Provider, error) { return p, nil })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := kernel.ExecuteSeated(ctx, kernel.SeatedRequest{Accounts: accounts, Request: kernel.Request{
		Profile: mustProfile(t, seatWriter), Task: "write a note", Store: memory.New(nil), Check: nonEmpty, RunID: "writer-r",
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Stages) != 2 || res.Final == nil || !res.Final.Delivered {
		t.Fatalf("stages %+v, final %+v", res.Stages, res.Final)
	}
	if s1 := res.Stages[1]; s1.Outcome != kernel.StageCompleted || s1.Continuity != kernel.ContinuityFresh ||
		s1.ContinuityReason != "the provider refused the native continuation: unverified" {
		t.Errorf("stage 1 %+v; want completed fresh, with the refusal as its reason", s1)
	}
	if p.Creates() != 2 {
		t.Errorf("%d creates; want stage 1's own", p.Creates())
	}
}
