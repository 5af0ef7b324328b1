package supervise_test

import (
	"errors"
	"reflect"
	"testing"

	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/supervise"
)

func i64(v int64) *int64 { return &v }

type fixture struct {
	pool  *ledger.Pool
	scope *supervise.Scope
}

func newFixture(t testing.TB, root ledger.Budget, opts supervise.ScopeOptions) fixture {
	t.Helper()
	pool, err := ledger.NewPool(root, ledger.PoolOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := supervise.New(pool, opts)
	if err != nil {
		t.Fatal(err)
	}
	return fixture{pool, s}
}

func (f fixture) spawn(t testing.TB, req supervise.SpawnRequest) supervise.SpawnReply {
	t.Helper()
	r, err := f.scope.Spawn(req)
	if err != nil {
		t.Fatalf("Spawn(%+v): %v", req, err)
	}
	return r
}

// counters is everything a refusal must leave untouched.
type counters struct {
	pool  ledger.Readout
	live  int
	nodes []supervise.NodeInfo
	total supervise.Totals
}

func snapshot(f fixture) counters {
	live, _ := f.scope.Live()
	return counters{f.pool.Readout(), live, f.scope.Nodes(), f.scope.Totals()}
}

func rootBudget() ledger.Budget {
	return ledger.Budget{Tokens: i64(1000), Iterations: i64(10), MicroUSD: i64(1_000_000)}
}

var worker = ledger.Budget{Tokens: i64(100), Iterations: i64(1), MicroUSD: i64(10_000)}

// TestSpawnRefusals covers every refusal code of spec §3.6 (behaviours
// 38, 44, 45; checklist RTP-02, FD-06): each is refused with its code,
// carries Live and FreeSlots, and changes no counter of the scope or its
// pool.
func TestSpawnRefusals(t *testing.T) {
	base := supervise.SpawnRequest{Profile: "coder", Label: "w", Task: "t"}
	with := func(mut func(*supervise.SpawnRequest)) supervise.SpawnRequest {
		r := base
		mut(&r)
		return r
	}
	cases := []struct {
		name  string
		root  ledger.Budget
		opts  supervise.ScopeOptions
		setup func(t *testing.T, f fixture)
		req   supervise.SpawnRequest
		code  supervise.Code
		cause string
	}{
		{name: "38 usd-unbudgeted: dollars from a root without maxUsd",
			root: ledger.Budget{Tokens: i64(1000), Iterations: i64(10)},
			req:  with(func(r *supervise.SpawnRequest) { r.Budget = worker }), code: supervise.CodeUSDUnbudgeted},
		{name: "38 budget-exhausted: a channel does not fit", opts: supervise.ScopeOptions{PerWorker: worker},
			req: with(func(r *supervise.SpawnRequest) { r.Budget.Tokens = i64(1001) }), code: supervise.CodeBudgetExhausted, cause: ledger.ChannelTokens},
		{name: "38 budget-exhausted: the per-worker default does not fit twice",
			opts:  supervise.ScopeOptions{PerWorker: ledger.Budget{Tokens: i64(600), Iterations: i64(1)}},
			setup: func(t *testing.T, f fixture) { f.spawn(t, base) },
			req:   base, code: supervise.CodeBudgetExhausted, cause: ledger.ChannelTokens},
		{name: "39 budget-exhausted: unknown dollars taint the usd channel", opts: supervise.ScopeOptions{PerWorker: worker},
			setup: func(t *testing.T, f fixture) {
				r := f.spawn(t, base)
				if _, err := f.scope.Settle(r.Node, supervise.Result{State: supervise.StateDone, Spent: ledger.Spend{Tokens: i64(1), Iterations: i64(1)}}); err != nil {
					t.Fatal(err)
				}
			},
			req: base, code: supervise.CodeBudgetExhausted, cause: "usd-tainted"},
		{name: "depth-exceeded", opts: supervise.ScopeOptions{PerWorker: worker, MaxDepth: 1},
			setup: func(t *testing.T, f fixture) { f.spawn(t, base) },
			req:   with(func(r *supervise.SpawnRequest) { r.Parent = "root:s1" }), code: supervise.CodeDepthExceeded},
		{name: "44 duplicate-key: the key is live", opts: supervise.ScopeOptions{PerWorker: worker},
			setup: func(t *testing.T, f fixture) { f.spawn(t, with(func(r *supervise.SpawnRequest) { r.Key = "k" })) },
			req:   with(func(r *supervise.SpawnRequest) { r.Key = "k" }), code: supervise.CodeDuplicateKey},
		{name: "44 in-doubt: the key started without a terminal receipt", opts: supervise.ScopeOptions{PerWorker: worker},
			setup: func(t *testing.T, f fixture) {
				r := f.spawn(t, with(func(r *supervise.SpawnRequest) { r.Key = "k" }))
				if err := f.scope.MarkInDoubt(r.Node); err != nil {
					t.Fatal(err)
				}
			},
			req: with(func(r *supervise.SpawnRequest) { r.Key = "k" }), code: supervise.CodeInDoubt},
		{name: "key-conflict: same key, different request", opts: supervise.ScopeOptions{PerWorker: worker},
			setup: func(t *testing.T, f fixture) { f.spawn(t, with(func(r *supervise.SpawnRequest) { r.Key = "k" })) },
			req:   with(func(r *supervise.SpawnRequest) { r.Key, r.Task = "k", "another task" }), code: supervise.CodeKeyConflict},
		{name: "invalid-identity: no profile", opts: supervise.ScopeOptions{PerWorker: worker},
			req: with(func(r *supervise.SpawnRequest) { r.Profile = "" }), code: supervise.CodeInvalidIdentity, cause: "no-profile"},
		{name: "invalid-identity: unknown parent", opts: supervise.ScopeOptions{PerWorker: worker},
			req: with(func(r *supervise.SpawnRequest) { r.Parent = "root:s9" }), code: supervise.CodeInvalidIdentity, cause: "unknown-parent"},
		{name: "invalid-identity: settled parent", opts: supervise.ScopeOptions{PerWorker: worker},
			setup: func(t *testing.T, f fixture) {
				r := f.spawn(t, base)
				if _, err := f.scope.Cancel(r.Node, ledger.Spend{Tokens: i64(0), Iterations: i64(0), MicroUSD: i64(0)}); err != nil {
					t.Fatal(err)
				}
			},
			req: with(func(r *supervise.SpawnRequest) { r.Parent = "root:s1" }), code: supervise.CodeInvalidIdentity, cause: "parent-not-live"},
		{name: "invalid-identity: model outside allowedModels", opts: supervise.ScopeOptions{PerWorker: worker, AllowedModels: []string{"small"}},
			req: with(func(r *supervise.SpawnRequest) { r.Model = "large" }), code: supervise.CodeInvalidIdentity, cause: "model-not-allowed"},
		{name: "45 max-live-workers", opts: supervise.ScopeOptions{PerWorker: worker, MaxLiveWorkers: 1},
			setup: func(t *testing.T, f fixture) { f.spawn(t, base) },
			req:   base, code: supervise.CodeMaxLiveWorkers},
		{name: "scope-aborted", opts: supervise.ScopeOptions{PerWorker: worker},
			setup: func(t *testing.T, f fixture) { f.scope.Abort() },
			req:   base, code: supervise.CodeScopeAborted},
		{name: "scope-settled", opts: supervise.ScopeOptions{PerWorker: worker},
			setup: func(t *testing.T, f fixture) { f.scope.Close() },
			req:   base, code: supervise.CodeScopeSettled},
		{name: "preflight-refused: authorizeSpawn", opts: supervise.ScopeOptions{PerWorker: worker,
			AuthorizeSpawn: func(r supervise.SpawnRequest) error { return errors.New("coder may not spawn") }},
			req: base, code: supervise.CodePreflightRefused, cause: "not-authorized"},
		{name: "preflight-refused: preflight hook", opts: supervise.ScopeOptions{PerWorker: worker,
			Preflight: func(r supervise.SpawnRequest) error { return errors.New("backend down") }},
			req: base, code: supervise.CodePreflightRefused, cause: "preflight"},
		{name: "preflight-refused: negative budget", opts: supervise.ScopeOptions{PerWorker: worker},
			req: with(func(r *supervise.SpawnRequest) { r.Budget.Tokens = i64(-1) }), code: supervise.CodePreflightRefused, cause: "invalid-budget"},
		{name: "resume-no-prior", opts: supervise.ScopeOptions{PerWorker: worker},
			req: with(func(r *supervise.SpawnRequest) { r.Continuity = supervise.ContinuityResume }), code: supervise.CodeResumeNoPrior},
		{name: "resume-while-live", opts: supervise.ScopeOptions{PerWorker: worker},
			setup: func(t *testing.T, f fixture) { f.spawn(t, base) },
			req:   with(func(r *supervise.SpawnRequest) { r.Continuity = supervise.ContinuityResume }), code: supervise.CodeResumeWhileLive},
		{name: "resume-with-key", opts: supervise.ScopeOptions{PerWorker: worker},
			req: with(func(r *supervise.SpawnRequest) { r.Continuity, r.Key = supervise.ContinuityResume, "k" }), code: supervise.CodeResumeWithKey},
		// §3.6 fence order: continuity is resolved before the key, so a
		// resume under a key already used is resume-with-key (the
		// reference's "resume cannot ride a semantic key"), never the
		// key-conflict its differing continuity would otherwise be.
		{name: "resume-with-key: the key settled before", opts: supervise.ScopeOptions{PerWorker: worker},
			setup: func(t *testing.T, f fixture) {
				r := f.spawn(t, with(func(r *supervise.SpawnRequest) { r.Key = "k" }))
				if _, err := f.scope.Settle(r.Node, supervise.Result{State: supervise.StateDone, Spent: ledger.Spend{Tokens: i64(1), Iterations: i64(1)}}); err != nil {
					t.Fatal(err)
				}
			},
			req: with(func(r *supervise.SpawnRequest) { r.Continuity, r.Key = supervise.ContinuityResume, "k" }), code: supervise.CodeResumeWithKey},
	}
	seen := map[supervise.Code]bool{}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root := tc.root
			if root.Tokens == nil {
				root = rootBudget()
			}
			f := newFixture(t, root, tc.opts)
			if tc.setup != nil {
				tc.setup(t, f)
			}
			before := snapshot(f)
			reply, err := f.scope.Spawn(tc.req)
			var ref *supervise.Refusal
			if !errors.As(err, &ref) {
				t.Fatalf("Spawn = %+v, %v; want refusal %s", reply, err, tc.code)
			}
			if ref.Code != tc.code || (tc.cause != "" && ref.Cause != tc.cause) {
				t.Fatalf("refusal %s (%s), want %s (%s): %v", ref.Code, ref.Cause, tc.code, tc.cause, err)
			}
			if code, ok := supervise.CodeOf(err); !ok || code != tc.code {
				t.Errorf("CodeOf = %s, %v", code, ok)
			}
			if ref.Live != before.live || (tc.opts.MaxLiveWorkers > 0) != (ref.FreeSlots != nil) {
				t.Errorf("refusal live %d free %v; live was %d", ref.Live, ref.FreeSlots, before.live)
			}
			if after := snapshot(f); !reflect.DeepEqual(before, after) {
				t.Errorf("a refusal changed the scope:\nbefore %+v\nafter  %+v", before, after)
			}
			seen[tc.code] = true
		})
	}
	for _, c := range []supervise.Code{supervise.CodeUSDUnbudgeted, supervise.CodeBudgetExhausted, supervise.CodeDepthExceeded,
		supervise.CodeDuplicateKey, supervise.CodeInDoubt, supervise.CodeInvalidIdentity, supervise.CodeKeyConflict,
		supervise.CodeMaxLiveWorkers, supervise.CodeScopeAborted, supervise.CodeScopeSettled, supervise.CodePreflightRefused,
		supervise.CodeResumeNoPrior, supervise.CodeResumeWhileLive, supervise.CodeResumeWithKey} {
		if !seen[c] {
			t.Errorf("no case refuses %s", c)
		}
	}
}
