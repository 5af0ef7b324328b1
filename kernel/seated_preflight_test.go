package kernel_test

import (
	"context"
	"errors"
	"iter"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/memory"
)

// seatTrio is a three-stage seat chain: a resumed run goes on at stage
// 1 with stage 2 still ahead of it.
const seatTrio = `{"name":"writer","harness":"cli-base","model":{"provider":"scripted","default":"scripted/first"},
 "seats":[{"harness":"cli-base","provider":"scripted","model":"scripted/first","selector":{"kind":"seat","id":"team-a"}},
          {"harness":"cli-base","provider":"scripted","model":"scripted/second","selector":{"kind":"seat","id":"team-b"}},
          {"harness":"cli-base","provider":"scripted","model":"scripted/third","selector":{"kind":"seat","id":"team-c"}}]}`

// spyProvider counts every call a run makes of its provider and records
// the deadline each create and turn ran under.
type spyProvider struct {
	contract.Provider

	mu        sync.Mutex
	calls     int
	deadlines []spiedDeadline
}

// spiedDeadline is the deadline one create or turn saw (ok false: none).
type spiedDeadline struct {
	Op       string
	Deadline time.Time
	OK       bool
}

func (p *spyProvider) saw(ctx context.Context, op string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls++
	d, ok := ctx.Deadline()
	p.deadlines = append(p.deadlines, spiedDeadline{Op: op, Deadline: d, OK: ok})
}

func (p *spyProvider) Capabilities(ctx context.Context) (*contract.Capabilities, error) {
	p.mu.Lock()
	p.calls++
	p.mu.Unlock()
	return p.Provider.Capabilities(ctx)
}

func (p *spyProvider) Create(ctx context.Context, in *contract.CreateInput) (contract.Environment, error) {
	p.saw(ctx, "create")
	env, err := p.Provider.Create(ctx, in)
	if err != nil {
		return nil, err
	}
	return &spyEnv{Environment: env, p: p}, nil
}

func (p *spyProvider) seen() (int, []spiedDeadline) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.calls, append([]spiedDeadline(nil), p.deadlines...)
}

type spyEnv struct {
	contract.Environment
	p *spyProvider
}

func (e *spyEnv) Stream(ctx context.Context, in *contract.TurnInput) iter.Seq2[contract.EnvironmentEvent, error] {
	e.p.saw(ctx, "turn")
	return e.Environment.Stream(ctx, in)
}

// spyOn wraps a seat provider that completes its turn (quota false) or
// refuses its create for quota (quota true).
func spyOn(t *testing.T, served string, quota bool) *spyProvider {
	return &spyProvider{Provider: newSeatProvider(t, served, quota)}
}

// chain is an account manager over a fixed list of providers: a nil
// entry is a stage no account can serve. It counts what it was asked.
type chain struct {
	mu        sync.Mutex
	providers []contract.Provider
	asked     []int
}

func (c *chain) ProviderFor(_ context.Context, k int, seat profile.Seat) (contract.Provider, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.asked = append(c.asked, k)
	if k >= len(c.providers) || c.providers[k] == nil {
		return nil, errors.New("no eligible account for " + seat.Model)
	}
	return c.providers[k], nil
}

func testPool(t *testing.T) *ledger.Pool {
	t.Helper()
	pool, err := ledger.NewPool(ledger.Budget{Tokens: ptr(int64(1000)), Iterations: ptr(int64(5))}, ledger.PoolOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return pool
}

// wantSeatRefusal checks err is the seated run's refusal before any
// spend, caused by stage's *kernel.SeatUnresolvedError.
func wantSeatRefusal(t *testing.T, err error, runID string, stage int, pointer string) {
	t.Helper()
	re, ok := errors.AsType[*kernel.RunError](err)
	if !ok || re.RunID != runID || re.Reason != kernel.ReasonRefused || re.Status != store.StatusFailed || !errors.Is(err, kernel.ErrRefused) {
		t.Fatalf("err %T %v; want run %s refused (ErrRefused)", err, err, runID)
	}
	ue, ok := errors.AsType[*kernel.SeatUnresolvedError](err)
	if !ok || ue.Stage != stage || ue.Pointer != pointer || ue.Err == nil {
		t.Fatalf("err %v; want a *kernel.SeatUnresolvedError for stage %d at %s", err, stage, pointer)
	}
}

// PRF-07: every seat stage is resolved before any spend. Stage 0 can be
// served and would run (it would complete and spend); stage 1 cannot be
// served. The run is refused before stage 0 is created or sent anything:
// its provider saw no call, no stage run was recorded, the budget was
// never reserved, and the seated record is a refused one naming the
// unresolvable stage.
func TestSeatedPreflightRefusesUnresolvableLaterStage(t *testing.T) {
	first := spyOn(t, "scripted/first", false)
	accounts := &chain{providers: []contract.Provider{first, nil}}
	pool := testPool(t)
	before := pool.Readout()
	st := memory.New(nil)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := kernel.ExecuteSeated(ctx, kernel.SeatedRequest{Accounts: accounts, Request: kernel.Request{
		Profile: mustProfile(t, seatWriter), Task: "write a note", Store: st, Check: nonEmpty, RunID: "preflight",
		Budget: pool, Reserve: ledger.Budget{Tokens: ptr(int64(100)), Iterations: ptr(int64(1))},
	}})
	wantSeatRefusal(t, err, "preflight", 1, "/seats/1")
	if calls, _ := first.seen(); calls != 0 {
		t.Errorf("stage 0's provider was called %d times; want none before the refusal", calls)
	}
	if diff := cmp.Diff([]int{0, 1}, accounts.asked); diff != "" {
		t.Errorf("stages resolved (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(before, pool.Readout()); diff != "" {
		t.Errorf("the budget moved (-before +after):\n%s", diff)
	}
	if len(pool.OpenTickets()) != 0 {
		t.Errorf("open reservations %v", pool.OpenTickets())
	}
	if res == nil || res.Final != nil || len(res.Stages) != 1 || res.Stages[0].Stage != 1 || res.Stages[0].Outcome != kernel.StageUnresolved || res.Stages[0].RunID != "" {
		t.Fatalf("result %+v; want only stage 1, unresolved, and no stage run", res)
	}
	if _, err := st.GetRun(ctx, "preflight.stage-0"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("stage 0's run: %v; want none recorded", err)
	}
	rec, err := kernel.ReadRun(ctx, st, "preflight")
	if err != nil || rec.Seated == nil || rec.Status != store.StatusFailed || rec.Seated.Terminal == nil || rec.Seated.Terminal.Reason != kernel.ReasonRefused {
		t.Fatalf("record %+v (%v); want a refused seated run", rec, err)
	}
	if entries, err := st.Ledger(ctx, "preflight"); err != nil || len(entries) != 0 {
		t.Errorf("ledger %v (%v); want none", entries, err)
	}
}

// PRF-07: a stage before req.Stage is not the run's: only the stages
// from req.Stage on are resolved, and they run.
func TestSeatedPreflightResolvesFromTheFirstStage(t *testing.T) {
	second := spyOn(t, "scripted/second", false)
	accounts := &chain{providers: []contract.Provider{nil, second}}
	res, err := kernel.ExecuteSeated(context.Background(), kernel.SeatedRequest{Accounts: accounts, Request: kernel.Request{
		Profile: mustProfile(t, seatWriter), Task: "write a note", Store: memory.New(nil), Check: nonEmpty, Stage: 1,
	}})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]int{1}, accounts.asked); diff != "" {
		t.Errorf("stages resolved (-want +got):\n%s", diff)
	}
	if res.Final == nil || res.Final.Text != "a note from scripted/second" {
		t.Errorf("result %+v", res)
	}
}

// interruptedSeated records a seated run whose process died after stage
// 0's quota refusal was recorded: its lease lapsed, so it reads
// interrupted. deadline is the run's original deadline.
func interruptedSeated(t *testing.T, st store.Store, runID string, prof *profile.Profile, deadline time.Time) {
	t.Helper()
	digest, err := profile.Digest(prof)
	if err != nil {
		t.Fatal(err)
	}
	ms := deadline.UnixMilli()
	seat := prof.Seats[0]
	doc, err := canonjson.ToValue(kernel.SeatedRecord{Task: "write a note", DeadlineUnixMs: &ms, ProfileDigest: digest,
		Stages: []kernel.StageAttempt{{Stage: 0, Harness: string(seat.Harness), Provider: seat.Provider, Model: seat.Model,
			Outcome: kernel.StageQuotaRefused, Reason: "the subscription's window is used up"}}})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if _, err := st.CreateRun(context.Background(), store.Run{ID: runID, Kind: kernel.KindSeated, Status: store.StatusRunning,
		CreatedAt: now.Add(-time.Minute), UpdatedAt: now.Add(-time.Minute), Owner: "a process that died", LeaseUntil: now.Add(-30 * time.Second), Doc: doc}); err != nil {
		t.Fatal(err)
	}
	if r, err := st.GetRun(context.Background(), runID); err != nil || r.Status != store.StatusInterrupted {
		t.Fatalf("the dead run reads %+v (%v); want interrupted", r, err)
	}
}

// PRF-07 on a resumed run: the stages from the resumed stage on are
// resolved before any of them runs. Stage 1 would run and spend; stage
// 2 cannot be served: the resumption is refused before stage 1's
// provider is called or the budget reserved.
func TestResumeSeatedPreflightRefusesUnresolvableLaterStage(t *testing.T) {
	st := memory.New(nil)
	prof := mustProfile(t, seatTrio)
	interruptedSeated(t, st, "died", prof, time.Now().Add(time.Hour))
	second := spyOn(t, "scripted/second", false)
	accounts := &chain{providers: []contract.Provider{nil, second, nil}}
	pool := testPool(t)
	before := pool.Readout()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := kernel.ResumeSeated(ctx, kernel.SeatedRequest{Accounts: accounts, Request: kernel.Request{
		Profile: prof, Task: "write a note", Store: st, Check: nonEmpty, RunID: "died",
		Budget: pool, Reserve: ledger.Budget{Tokens: ptr(int64(100)), Iterations: ptr(int64(1))},
	}})
	wantSeatRefusal(t, err, "died.resume-1", 2, "/seats/2")
	if calls, _ := second.seen(); calls != 0 {
		t.Errorf("stage 1's provider was called %d times; want none before the refusal", calls)
	}
	if diff := cmp.Diff([]int{1, 2}, accounts.asked); diff != "" {
		t.Errorf("stages resolved (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(before, pool.Readout()); diff != "" {
		t.Errorf("the budget moved (-before +after):\n%s", diff)
	}
	var outcomes []string
	for _, s := range res.Stages {
		outcomes = append(outcomes, s.Outcome)
	}
	if diff := cmp.Diff([]string{kernel.StageQuotaRefused, kernel.StageUnresolved}, outcomes); diff != "" {
		t.Errorf("stages (-want +got):\n%s", diff)
	}
	if _, err := st.GetRun(ctx, "died.resume-1.stage-1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("stage 1's run: %v; want none recorded", err)
	}
	rec, err := kernel.ReadRun(ctx, st, "died.resume-1")
	if err != nil || rec.Seated == nil || rec.Status != store.StatusFailed || rec.Seated.Terminal.Reason != kernel.ReasonRefused || rec.Seated.ResumeOf != "died" {
		t.Fatalf("resumed record %+v (%v); want a refused resumption of died", rec, err)
	}
}

// wantDeadlines checks every create and turn a provider saw ran under
// exactly deadline.
func wantDeadlines(t *testing.T, name string, p *spyProvider, ops []string, deadline time.Time) {
	t.Helper()
	_, seen := p.seen()
	want := make([]spiedDeadline, len(ops))
	for i, op := range ops {
		want[i] = spiedDeadline{Op: op, Deadline: deadline, OK: true}
	}
	if diff := cmp.Diff(want, seen); diff != "" {
		t.Errorf("%s's deadlines (-want +got):\n%s", name, diff)
	}
}

// RG-11: a quota refusal moves the run to the next stage under the
// original deadline. Each stage's create and turn see the very deadline
// the caller gave the run (read from the provider's own context, not
// the test's).
func TestSeatedStagesKeepTheRunsDeadline(t *testing.T) {
	first, second, third := spyOn(t, "scripted/first", true), spyOn(t, "scripted/second", true), spyOn(t, "scripted/third", false)
	accounts := &chain{providers: []contract.Provider{first, second, third}}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	deadline, _ := ctx.Deadline()
	res, err := kernel.ExecuteSeated(ctx, kernel.SeatedRequest{Accounts: accounts, Request: kernel.Request{
		Profile: mustProfile(t, seatTrio), Task: "write a note", Store: memory.New(nil), Check: nonEmpty, RunID: "deadline",
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Stages) != 3 || res.Final == nil || res.Final.Text != "a note from scripted/third" {
		t.Fatalf("result %+v", res)
	}
	wantDeadlines(t, "stage 0", first, []string{"create"}, deadline)
	wantDeadlines(t, "stage 1", second, []string{"create"}, deadline)
	wantDeadlines(t, "stage 2", third, []string{"create", "turn"}, deadline)
}

// RG-11 on a resumed run: the stages a resumption runs keep the original
// run's deadline — not the resuming caller's later one, nor none. The
// record keeps it in Unix milliseconds, so the resumed deadline is the
// original truncated to the millisecond (never later than it).
func TestResumeSeatedKeepsTheOriginalDeadline(t *testing.T) {
	original := time.Now().Add(time.Hour).Add(123456 * time.Nanosecond)
	for _, tc := range []struct {
		name   string
		caller func() (context.Context, context.CancelFunc)
	}{
		{"no caller deadline", func() (context.Context, context.CancelFunc) { return context.WithCancel(context.Background()) }},
		{"a later caller deadline", func() (context.Context, context.CancelFunc) {
			return context.WithDeadline(context.Background(), original.Add(time.Hour))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := memory.New(nil)
			prof := mustProfile(t, seatWriter)
			interruptedSeated(t, st, "died", prof, original)
			second := spyOn(t, "scripted/second", false)
			accounts := &chain{providers: []contract.Provider{nil, second}}
			ctx, cancel := tc.caller()
			defer cancel()
			res, err := kernel.ResumeSeated(ctx, kernel.SeatedRequest{Accounts: accounts, Request: kernel.Request{
				Profile: prof, Task: "write a note", Store: st, Check: nonEmpty, RunID: "died",
			}})
			if err != nil {
				t.Fatal(err)
			}
			if res.Final == nil || res.Final.Text != "a note from scripted/second" {
				t.Fatalf("result %+v", res)
			}
			wantDeadlines(t, "stage 1", second, []string{"create", "turn"}, time.UnixMilli(original.UnixMilli()))
			rec, err := kernel.ReadRun(context.Background(), st, res.RunID)
			if err != nil || rec.Seated == nil || rec.Seated.DeadlineUnixMs == nil || *rec.Seated.DeadlineUnixMs != original.UnixMilli() {
				t.Errorf("resumed record %+v (%v); want the original deadline", rec.Seated, err)
			}
		})
	}
}

// PRF-07 and truthful ends: a caller that cancels while the account
// manager is resolving the stages gets a cancelled run — not a refusal
// blamed on the seat — and no stage ran.
func TestSeatedPreflightCancelledWhileResolving(t *testing.T) {
	first := spyOn(t, "scripted/first", false)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	accounts := kernel.AccountManagerFunc(func(ctx context.Context, k int, _ profile.Seat) (contract.Provider, error) {
		if k == 0 {
			return first, nil
		}
		cancel()
		<-ctx.Done()
		return nil, ctx.Err()
	})
	st := memory.New(nil)
	_, err := kernel.ExecuteSeated(ctx, kernel.SeatedRequest{Accounts: accounts, Request: kernel.Request{
		Profile: mustProfile(t, seatWriter), Task: "write a note", Store: st, Check: nonEmpty, RunID: "cancelled",
	}})
	re, ok := errors.AsType[*kernel.RunError](err)
	if !ok || re.Status != store.StatusCancelled || re.Reason != kernel.ReasonCancelled || errors.Is(err, kernel.ErrRefused) {
		t.Fatalf("err %T %v; want the run cancelled, not refused", err, err)
	}
	if calls, _ := first.seen(); calls != 0 {
		t.Errorf("stage 0's provider was called %d times", calls)
	}
	if rec, err := kernel.ReadRun(context.Background(), st, "cancelled"); err != nil || rec.Status != store.StatusCancelled {
		t.Errorf("record %+v (%v); want cancelled", rec, err)
	}
}
