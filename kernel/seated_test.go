package kernel_test

import (
	"context"
	"errors"
	"iter"
	"sync"
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

// seatWriter continues one logical writer from a first subscription
// (any eligible account) to a second (the pinned account team-b).
const seatWriter = `{"name":"writer","harness":"cli-base","model":{"provider":"scripted","default":"scripted/first"},
 "seats":[{"harness":"cli-base","provider":"scripted","model":"scripted/first","selector":{"kind":"all-eligible"}},
          {"harness":"cli-base","provider":"scripted","model":"scripted/second","selector":{"kind":"seat","id":"team-b"}}]}`

// seatProvider is a provider whose account owner records every
// credential request it receives, and refuses for quota when its
// account has none left.
type seatProvider struct {
	contract.Provider
	quota      bool
	retryAfter *time.Duration

	mu       sync.Mutex
	requests []contract.CredentialRequest
	creates  int
}

func (p *seatProvider) record(r *contract.CredentialRequest) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if r == nil {
		p.requests = append(p.requests, contract.CredentialRequest{Occasion: "none"})
		return
	}
	p.requests = append(p.requests, *r)
}

func (p *seatProvider) Create(ctx context.Context, in *contract.CreateInput) (contract.Environment, error) {
	p.record(in.Credential)
	p.mu.Lock()
	p.creates++
	p.mu.Unlock()
	if p.quota {
		return nil, &contract.QuotaRefusalError{Provider: p.Name(), Stage: -1, RetryAfter: p.retryAfter, Message: "the subscription's window is used up"}
	}
	env, err := p.Provider.Create(ctx, in)
	if err != nil {
		return nil, err
	}
	return &seatEnv{Environment: env, p: p}, nil
}

type seatEnv struct {
	contract.Environment
	p *seatProvider
}

func (e *seatEnv) Stream(ctx context.Context, in *contract.TurnInput) iter.Seq2[contract.EnvironmentEvent, error] {
	e.p.record(in.Credential)
	return e.Environment.Stream(ctx, in)
}

func newSeatProvider(t *testing.T, served string, quota bool) *seatProvider {
	t.Helper()
	script := `{"servedModel":"` + served + `","turns":[{"steps":[{"text":"a note from ` + served + `"},{"usage":{"inputTokens":5,"outputTokens":3},"mode":"delta"}]}]}`
	return &seatProvider{Provider: scripted.New(mustScript(t, script), scripted.Options{}), quota: quota}
}

// PRF-11, RG-07, RG-08, RG-10, RG-11: a quota refusal on the first
// stage continues on the second, authored stage — under the same
// logical run id and the caller's deadline — and each stage's credential
// request (its selector, never a credential) reaches its provider on
// create and on the turn. The record names both stages and why the run
// moved on.
//
// It runs on the memory store and on the SQL stores (SQLite and
// PostgreSQL), where the seated record is read back through a second
// handle, as another process would.
func TestSeatedQuotaRefusalContinuesOnNextStage(t *testing.T) {
	t.Run("memory", func(t *testing.T) {
		st := memory.New(nil)
		testSeatedQuotaRefusalContinuesOnNextStage(t, st, st)
	})
	storetest.Each(t, func(t *testing.T, open func(t *testing.T) store.Store) {
		testSeatedQuotaRefusalContinuesOnNextStage(t, open(t), open(t))
	})
}

func testSeatedQuotaRefusalContinuesOnNextStage(t *testing.T, st, reader store.Store) {
	first, second := newSeatProvider(t, "scripted/first", true), newSeatProvider(t, "scripted/second", false)
	hour := time.Hour
	first.retryAfter = &hour
	var asked []int
	accounts := kernel.AccountManagerFunc(func(_ context.Context, k int, seat profile.Seat) (contract.Provider, error) {
		asked = append(asked, k)
		return []contract.Provider{first, second}[k], nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	deadline, _ := ctx.Deadline()
	res, err := kernel.ExecuteSeated(ctx, kernel.SeatedRequest{Accounts: accounts, Request: kernel.Request{
		Profile: mustProfile(t, seatWriter), Task: "write a note", Store: st, Check: nonEmpty, RunID: "writer-1",
	}})
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := ctx.Deadline(); !d.Equal(deadline) {
		t.Error("the deadline changed")
	}
	if res.RunID != "writer-1" || res.Final == nil || res.Final.Text != "a note from scripted/second" {
		t.Fatalf("result %+v", res)
	}
	if diff := cmp.Diff([]int{0, 1}, asked); diff != "" {
		t.Errorf("stages resolved (-want +got):\n%s", diff)
	}
	team := "team-b"
	wantFirst := []contract.CredentialRequest{{Stage: 0, Harness: "cli-base", Provider: "scripted", Model: "scripted/first",
		Selector: profile.SeatSelector{Kind: profile.SelectorAllEligible}, Occasion: contract.CredentialOnCreate}}
	wantSecond := []contract.CredentialRequest{
		{Stage: 1, Harness: "cli-base", Provider: "scripted", Model: "scripted/second", Selector: profile.SeatSelector{Kind: profile.SelectorSeat, ID: &team}, Occasion: contract.CredentialOnCreate},
		{Stage: 1, Harness: "cli-base", Provider: "scripted", Model: "scripted/second", Selector: profile.SeatSelector{Kind: profile.SelectorSeat, ID: &team}, Occasion: contract.CredentialOnTurn},
	}
	if diff := cmp.Diff(wantFirst, first.requests); diff != "" {
		t.Errorf("first provider's requests (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantSecond, second.requests); diff != "" {
		t.Errorf("second provider's requests (-want +got):\n%s", diff)
	}
	rec, err := kernel.ReadRun(context.Background(), reader, "writer-1")
	if err != nil || rec.Kind != kernel.KindSeated || rec.Seated == nil || rec.Status != store.StatusCompleted {
		t.Fatalf("record %+v (%v)", rec, err)
	}
	stages := rec.Seated.Stages
	if len(stages) != 2 || stages[0].Outcome != kernel.StageQuotaRefused || stages[0].RetryAfterMs == nil || *stages[0].RetryAfterMs != 3_600_000 ||
		stages[1].Outcome != kernel.StageCompleted || stages[1].RunID != "writer-1.stage-1" {
		t.Errorf("recorded stages %+v", stages)
	}
	// The refused stage reached no environment; the next one started a
	// fresh session, and the record says so rather than claim continuity.
	if stages[0].Continuity != "" || stages[1].Continuity != kernel.ContinuityFresh {
		t.Errorf("recorded continuity %q, %q; want none, then fresh", stages[0].Continuity, stages[1].Continuity)
	}
	if stage1, err := kernel.ReadRun(context.Background(), reader, "writer-1.stage-1"); err != nil || stage1.Exact == nil || stage1.Exact.Stage != 1 {
		t.Errorf("stage 1's run %+v (%v)", stage1, err)
	}
}

// PRF-11: a quota refusal on the last stage ends the run with the typed
// refusal; no provider outside the chain is asked.
func TestSeatedQuotaOnLastStage(t *testing.T) {
	first, second := newSeatProvider(t, "scripted/first", true), newSeatProvider(t, "scripted/second", true)
	accounts := kernel.AccountManagerFunc(func(_ context.Context, k int, _ profile.Seat) (contract.Provider, error) {
		return []contract.Provider{first, second}[k], nil
	})
	res, err := kernel.ExecuteSeated(context.Background(), kernel.SeatedRequest{Accounts: accounts, Request: kernel.Request{
		Profile: mustProfile(t, seatWriter), Task: "t", Store: memory.New(nil), Check: nonEmpty,
	}})
	re, ok := errors.AsType[*kernel.RunError](err)
	if !ok || re.Reason != kernel.ReasonQuota || !errors.Is(err, contract.ErrQuotaRefused) {
		t.Fatalf("err %v; want a quota refusal", err)
	}
	if len(res.Stages) != 2 || first.creates != 1 || second.creates != 1 {
		t.Errorf("stages %+v, creates %d and %d", res.Stages, first.creates, second.creates)
	}
}

// PRF-03, PRF-07: a stage the account manager cannot resolve is refused
// before any spend: nothing is dispatched and no later stage is tried
// (only a quota refusal continues the chain).
func TestSeatedUnresolvableSeat(t *testing.T) {
	p := newSeatProvider(t, "scripted/first", false)
	accounts := kernel.AccountManagerFunc(func(_ context.Context, k int, seat profile.Seat) (contract.Provider, error) {
		return nil, errors.New("no eligible account for " + seat.Provider)
	})
	res, err := kernel.ExecuteSeated(context.Background(), kernel.SeatedRequest{Accounts: accounts, Request: kernel.Request{
		Profile: mustProfile(t, seatWriter), Task: "t", Store: memory.New(nil),
	}})
	if !errors.Is(err, kernel.ErrRefused) {
		t.Fatalf("err %v; want ErrRefused", err)
	}
	if len(res.Stages) != 1 || res.Stages[0].Outcome != kernel.StageUnresolved || res.Final != nil || p.creates != 0 {
		t.Errorf("stages %+v, final %v, creates %d", res.Stages, res.Final, p.creates)
	}
}

// A failure other than quota ends the run at that stage: no failover.
func TestSeatedNoImplicitFailover(t *testing.T) {
	failing := &seatProvider{Provider: scripted.New(mustScript(t, `{"servedModel":"scripted/first","turns":[{"steps":[{"text":"x"}],"end":"failed","error":"boom"}]}`), scripted.Options{})}
	second := newSeatProvider(t, "scripted/second", false)
	accounts := kernel.AccountManagerFunc(func(_ context.Context, k int, _ profile.Seat) (contract.Provider, error) {
		return []contract.Provider{failing, second}[k], nil
	})
	res, err := kernel.ExecuteSeated(context.Background(), kernel.SeatedRequest{Accounts: accounts, Request: kernel.Request{
		Profile: mustProfile(t, seatWriter), Task: "t", Store: memory.New(nil), Check: nonEmpty,
	}})
	if re, ok := errors.AsType[*kernel.RunError](err); !ok || re.Reason != kernel.ReasonInBandError {
		t.Fatalf("err %v; want the first stage's in-band failure", err)
	}
	if len(res.Stages) != 1 || second.creates != 0 {
		t.Errorf("stages %+v; the second stage was tried (%d creates)", res.Stages, second.creates)
	}
}

func TestExecuteSeatedRefusesBadOptions(t *testing.T) {
	_, err := kernel.ExecuteSeated(context.Background(), kernel.SeatedRequest{Request: kernel.Request{Profile: mustProfile(t, noteWriter), Store: memory.New(nil)}})
	var fields []string
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		if oe, ok := errors.AsType[*kernel.OptionsError](e); ok {
			fields = append(fields, oe.Field)
		}
	}
	if diff := cmp.Diff([]string{"Accounts", "Profile"}, fields); diff != "" {
		t.Errorf("refused (-want +got):\n%s", diff)
	}
}
