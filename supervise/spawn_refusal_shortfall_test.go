package supervise_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/supervise"
)

// usdUnbudgetedHint is the hint a usd-unbudgeted spawn_worker refusal
// carries under a root budget without maxUsd.
const usdUnbudgetedHint = "the run's root budget declares no dollars, so no maxUsd, however small, will be admitted; spawn without budget.maxUsd, or ask the caller for a dollar budget"

// A refused spawn says which budget channel fell short and by how much
// (§3.6 rejections, behaviour 38): the refusal carries a Shortfall in
// spawn_worker's units and a reason naming the budget field and the
// largest request that fits, so the driver sizes its next request in one
// step instead of probing with throwaway workers.
func TestBudgetRefusalShortfallBehaviour38(t *testing.T) {
	base := supervise.SpawnRequest{Profile: "coder", Label: "w", Task: "t"}
	with := func(b ledger.Budget) supervise.SpawnRequest {
		r := base
		r.Budget = b
		return r
	}
	cases := []struct {
		name   string
		root   ledger.Budget // rootBudget() when Tokens is nil: 1000 tokens, 10 iterations, $1
		setup  func(t *testing.T, f fixture)
		req    supervise.SpawnRequest
		cause  string
		want   *supervise.Shortfall
		reason string   // exact, when set
		says   []string // substrings of the reason
		never  []string // not in the reason
	}{
		{name: "iterations", req: with(ledger.Budget{Tokens: i64(10), Iterations: i64(100)}), cause: ledger.ChannelIterations,
			want:   &supervise.Shortfall{Channel: "iterations", Requested: 100, Free: 10},
			reason: "the run's pool has 10 iterations free and this spawn asked for budget.maxIterations 100; spawn again with budget.maxIterations at most 10, or ask the caller for a larger root budget"},
		{name: "tokens and iterations both short: tokens, as the reference's reserve checks", req: with(ledger.Budget{Tokens: i64(4000), Iterations: i64(100)}), cause: ledger.ChannelTokens,
			want: &supervise.Shortfall{Channel: "tokens", Requested: 4000, Free: 1000},
			says: []string{"has 1000 tokens free", "budget.maxTokens 4000", "budget.maxTokens at most 1000", "your own turns draw tokens"}},
		{name: "dollars in dollars, as maxUsd is", req: with(ledger.Budget{Tokens: i64(10), Iterations: i64(1), MicroUSD: i64(2_500_000)}), cause: ledger.ChannelUSD,
			want: &supervise.Shortfall{Channel: "usd", Requested: 2.5, Free: 1},
			says: []string{"has $1 free", "budget.maxUsd 2.5", "budget.maxUsd at most 1 "}},
		{name: "nothing free", setup: func(t *testing.T, f fixture) { f.spawn(t, with(ledger.Budget{Tokens: i64(10), Iterations: i64(10)})) },
			req: with(ledger.Budget{Tokens: i64(10), Iterations: i64(1)}), cause: ledger.ChannelIterations,
			want: &supervise.Shortfall{Channel: "iterations", Requested: 1, Free: 0},
			says: []string{"no iterations left to reserve (this spawn asked for budget.maxIterations 1); wait for running workers to settle, or ask the caller"}},
		{name: "the driver's own spend took free below 0: free reads 0, never negative",
			setup: func(t *testing.T, f fixture) {
				f.pool.Observe(ledger.Spend{Tokens: i64(1500), Iterations: i64(0), MicroUSD: i64(0)})
			},
			req: with(ledger.Budget{Tokens: i64(10), Iterations: i64(1)}), cause: ledger.ChannelTokens,
			want: &supervise.Shortfall{Channel: "tokens", Requested: 10, Free: 0},
			says: []string{"no tokens left to reserve (this spawn asked for budget.maxTokens 10); ask the caller for a larger root budget"},
			// No worker holds tokens, so waiting frees nothing.
			never: []string{"wait"}},
		{name: "dollars closed by unknown spend",
			setup: func(t *testing.T, f fixture) {
				r := f.spawn(t, with(ledger.Budget{Tokens: i64(10), Iterations: i64(1), MicroUSD: i64(10_000)}))
				if _, err := f.scope.Settle(r.Node, supervise.Result{State: supervise.StateDone, Spent: ledger.Spend{Tokens: i64(1), Iterations: i64(1)}}); err != nil {
					t.Fatal(err)
				}
			},
			req: with(ledger.Budget{Tokens: i64(10), Iterations: i64(1), MicroUSD: i64(10_000)}), cause: "usd-tainted",
			want: &supervise.Shortfall{Channel: "usd", Requested: 0.01, ClosedByUnknownSpend: true},
			says: []string{"no smaller request fits"}},
		{name: "a named resource", root: ledger.Budget{Tokens: i64(1000), Iterations: i64(10), Resources: map[string]int64{"gpuSeconds": 12}},
			req: with(ledger.Budget{Tokens: i64(10), Iterations: i64(1), Resources: map[string]int64{"gpuSeconds": 30}}), cause: "resource:gpuSeconds",
			want: &supervise.Shortfall{Channel: "resource:gpuSeconds", Requested: 30, Free: 12},
			says: []string{"has 12 gpuSeconds free", "per-worker gpuSeconds budget is 30"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root := tc.root
			if root.Tokens == nil {
				root = rootBudget()
			}
			f := newFixture(t, root, supervise.ScopeOptions{})
			if tc.setup != nil {
				tc.setup(t, f)
			}
			_, err := f.scope.Spawn(tc.req)
			var r *supervise.Refusal
			if !errors.As(err, &r) || r.Code != supervise.CodeBudgetExhausted || r.Cause != tc.cause {
				t.Fatalf("Spawn = %v, want budget-exhausted (%s)", err, tc.cause)
			}
			if diff := cmp.Diff(tc.want, r.Shortfall); diff != "" {
				t.Errorf("shortfall (-want +got):\n%s", diff)
			}
			if tc.reason != "" && r.Detail != tc.reason {
				t.Errorf("reason\n got %q\nwant %q", r.Detail, tc.reason)
			}
			for _, s := range tc.says {
				if !strings.Contains(r.Detail, s) {
					t.Errorf("reason %q does not say %q", r.Detail, s)
				}
			}
			for _, s := range tc.never {
				if strings.Contains(r.Detail, s) {
					t.Errorf("reason %q says %q", r.Detail, s)
				}
			}
		})
	}
}

// A deadline refusal is budget-exhausted with no shortfall to size: no
// smaller request is admitted either.
func TestDeadlineRefusalHasNoShortfallBehaviour38(t *testing.T) {
	pool, err := ledger.NewPool(rootBudget(), ledger.PoolOptions{Deadline: time.Unix(1, 0)})
	if err != nil {
		t.Fatal(err)
	}
	s, err := supervise.New(pool, supervise.ScopeOptions{PerWorker: worker})
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Spawn(supervise.SpawnRequest{Profile: "coder", Task: "t"})
	var r *supervise.Refusal
	if !errors.As(err, &r) || r.Code != supervise.CodeBudgetExhausted || r.Cause != "deadline" || r.Shortfall != nil {
		t.Fatalf("Spawn = %v (%+v), want budget-exhausted (deadline) without a shortfall", err, r)
	}
}

// Under a nested manager the refusal names the pool carved for it, not
// the run's, and the remedy is a larger grant for that manager.
func TestNestedBudgetRefusalNamesTheCarvedPoolBehaviour38(t *testing.T) {
	s, _ := carveCheckScope(t, supervise.ScopeOptions{})
	lead := mustSpawn(t, s, supervise.SpawnRequest{Profile: "lead", Label: "lead", Budget: checkLeadGrant(false)})
	_, err := s.Spawn(supervise.SpawnRequest{Parent: lead, Profile: "writer", Budget: ledger.Budget{Tokens: i64(10), Iterations: i64(3)}})
	var r *supervise.Refusal
	if !errors.As(err, &r) || r.Code != supervise.CodeBudgetExhausted {
		t.Fatalf("Spawn = %v, want budget-exhausted", err)
	}
	want := "the pool granted to manager " + string(lead) + " has 2 iterations free and this spawn asked for budget.maxIterations 3; " +
		"spawn again with budget.maxIterations at most 2, or ask for a larger budget for manager " + string(lead)
	if r.Detail != want {
		t.Errorf("reason\n got %q\nwant %q", r.Detail, want)
	}
	_, err = s.Spawn(supervise.SpawnRequest{Parent: lead, Profile: "writer", Budget: ledger.Budget{Tokens: i64(10), Iterations: i64(1), MicroUSD: i64(1)}})
	if !errors.As(err, &r) || r.Code != supervise.CodeUSDUnbudgeted || !strings.Contains(r.Hint, "granted to manager "+string(lead)+" declares no dollars") {
		t.Fatalf("Spawn = %v (hint %q), want usd-unbudgeted with a hint naming the manager's grant", err, r.Hint)
	}
}

// The refusal reaches the driver as spawn_worker's tool result: a
// shortfall member in wire units, and for usd-unbudgeted a hint that no
// smaller maxUsd is admitted (§3.6: "retrying smaller never helps").
func TestSpawnWorkerRefusalWireShortfallAndHintBehaviour38(t *testing.T) {
	cases := []struct {
		name    string
		usdless bool
		budget  map[string]any
		want    map[string]any // members compared exactly
	}{
		{name: "iterations", budget: map[string]any{"maxIterations": 100},
			want: map[string]any{"error": "budget-exhausted", "cause": "iterations",
				"shortfall": map[string]any{"channel": "iterations", "requested": 100.0, "free": 10.0},
				"reason":    "the run's pool has 10 iterations free and this spawn asked for budget.maxIterations 100; spawn again with budget.maxIterations at most 10, or ask the caller for a larger root budget"}},
		{name: "dollars", budget: map[string]any{"maxUsd": 2.5},
			want: map[string]any{"error": "budget-exhausted", "cause": "usd",
				"shortfall": map[string]any{"channel": "usd", "requested": 2.5, "free": 1.0}}},
		{name: "usd-unbudgeted", usdless: true, budget: map[string]any{"maxUsd": 0.01},
			want: map[string]any{"error": "usd-unbudgeted",
				"hint": usdUnbudgetedHint}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			gate := &gateExecutor{release: make(chan struct{})}
			o := baseOptions(t, gate, nil)
			if tc.usdless {
				o.Budget.MicroUSD, o.PerWorker.MicroUSD = nil, nil
			}
			var got map[string]any
			o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
				defer close(gate.release)
				got = tool(t, ctx, c, supervise.VerbSpawnWorker, map[string]any{"profile": "writer", "task": "x", "budget": tc.budget})
				return supervise.BrainReport{}, nil
			})
			if _, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o); err != nil {
				t.Fatal(err)
			}
			for k, want := range tc.want {
				if diff := cmp.Diff(want, got[k]); diff != "" {
					t.Errorf("%s (-want +got):\n%s\nwhole result %v", k, diff, got)
				}
			}
			if _, ok := got["shortfall"]; tc.usdless && ok {
				t.Errorf("usd-unbudgeted carries a shortfall %v: no smaller request fits", got["shortfall"])
			}
		})
	}
}

// Non-budget refusals name their own cause: never the pool or an
// allocation (that sends the driver after the wrong fix), and each
// reason is a real sentence.
func TestNonBudgetRefusalReasonsAreSentences(t *testing.T) {
	base := supervise.SpawnRequest{Profile: "coder", Label: "w", Task: "t"}
	with := func(mut func(*supervise.SpawnRequest)) supervise.SpawnRequest {
		r := base
		mut(&r)
		return r
	}
	cases := []struct {
		name  string
		opts  supervise.ScopeOptions
		setup func(t *testing.T, f fixture)
		req   supervise.SpawnRequest
		code  supervise.Code
	}{
		{name: "depth-exceeded", opts: supervise.ScopeOptions{PerWorker: worker, MaxDepth: 1},
			setup: func(t *testing.T, f fixture) { f.spawn(t, base) },
			req:   with(func(r *supervise.SpawnRequest) { r.Parent = "root:s1" }), code: supervise.CodeDepthExceeded},
		{name: "duplicate-key", opts: supervise.ScopeOptions{PerWorker: worker},
			setup: func(t *testing.T, f fixture) { f.spawn(t, with(func(r *supervise.SpawnRequest) { r.Key = "k" })) },
			req:   with(func(r *supervise.SpawnRequest) { r.Key = "k" }), code: supervise.CodeDuplicateKey},
		{name: "key-conflict", opts: supervise.ScopeOptions{PerWorker: worker},
			setup: func(t *testing.T, f fixture) { f.spawn(t, with(func(r *supervise.SpawnRequest) { r.Key = "k" })) },
			req:   with(func(r *supervise.SpawnRequest) { r.Key, r.Task = "k", "other" }), code: supervise.CodeKeyConflict},
		{name: "max-live-workers", opts: supervise.ScopeOptions{PerWorker: worker, MaxLiveWorkers: 1},
			setup: func(t *testing.T, f fixture) { f.spawn(t, base) },
			req:   base, code: supervise.CodeMaxLiveWorkers},
		{name: "scope-aborted", opts: supervise.ScopeOptions{PerWorker: worker},
			setup: func(t *testing.T, f fixture) { f.scope.Abort() },
			req:   base, code: supervise.CodeScopeAborted},
		{name: "invalid-identity: unknown parent", opts: supervise.ScopeOptions{PerWorker: worker},
			req: with(func(r *supervise.SpawnRequest) { r.Parent = "root:s9" }), code: supervise.CodeInvalidIdentity},
		{name: "invalid-identity: no profile", opts: supervise.ScopeOptions{PerWorker: worker},
			req: with(func(r *supervise.SpawnRequest) { r.Profile = "" }), code: supervise.CodeInvalidIdentity},
		{name: "invalid-identity: model", opts: supervise.ScopeOptions{PerWorker: worker, AllowedModels: []string{"small"}},
			req: with(func(r *supervise.SpawnRequest) { r.Model = "m" }), code: supervise.CodeInvalidIdentity},
		{name: "invalid-identity: continuity", opts: supervise.ScopeOptions{PerWorker: worker},
			req: with(func(r *supervise.SpawnRequest) { r.Continuity = "x" }), code: supervise.CodeInvalidIdentity},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, rootBudget(), tc.opts)
			if tc.setup != nil {
				tc.setup(t, f)
			}
			_, err := f.scope.Spawn(tc.req)
			var r *supervise.Refusal
			if !errors.As(err, &r) || r.Code != tc.code {
				t.Fatalf("Spawn = %v, want %s", err, tc.code)
			}
			if low := strings.ToLower(r.Detail); strings.Contains(low, "pool") || strings.Contains(low, "allocation") {
				t.Errorf("%s reason %q speaks of the budget pool", tc.code, r.Detail)
			}
			if len(r.Detail) <= 20 {
				t.Errorf("%s reason %q is not a sentence", tc.code, r.Detail)
			}
			if tc.code == supervise.CodeMaxLiveWorkers && strings.Contains(r.Detail, "cancel") {
				t.Errorf("max-live-workers reason %q tells the driver to cancel", r.Detail)
			}
			if r.Shortfall != nil || r.Hint != "" {
				t.Errorf("%s carries shortfall %+v hint %q", tc.code, r.Shortfall, r.Hint)
			}
		})
	}
}

// §6: a reservation of $0 asks nothing of the dollar channel, so a pool
// without a dollar ceiling admits it (the reference's reserve refuses
// only wantUsd > 0). A per-worker maxUsd of 0 under such a root is then
// no misconfiguration: the run starts and its workers are admitted.
func TestPerWorkerZeroDollarsUnderAnUncappedRootBehaviour36(t *testing.T) {
	var ran atomic.Int64
	exec := supervise.ExecutorFunc(func(context.Context, supervise.Work) (supervise.WorkResult, error) {
		ran.Add(1)
		return supervise.WorkResult{Text: "x"}, nil
	})
	o := baseOptions(t, exec, twoWorkerManager())
	o.RunDir = t.TempDir()
	o.Budget.MicroUSD, o.PerWorker.MicroUSD = nil, i64(0)
	if _, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker, supervise.VerbAwaitEvent), "t", o); err != nil {
		t.Fatalf("Supervise: %v, want the run to start", err)
	}
	if got := ran.Load(); got != 2 {
		t.Errorf("%d workers ran, want the manager's 2 admitted", got)
	}
}
