package supervise_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/supervise"
)

// An independent check of nested budgets (carve.go) at the Scope level:
// a nested manager's children reserve from a pool carved from its
// reservation (the reference's makeNestedScopeSeam mounts the nested
// scope on createBudgetPool(childBudget)), every pool conserves at every
// step, and the run's totals equal what the run's pool charged.

// carveCheckScope is a scope on a run pool of 100,000 tokens, 100
// iterations and $10.
func carveCheckScope(t *testing.T, opts supervise.ScopeOptions) (*supervise.Scope, *ledger.Pool) {
	t.Helper()
	pool, err := ledger.NewPool(ledger.Budget{Tokens: i64(100_000), Iterations: i64(100), MicroUSD: i64(10_000_000)}, ledger.PoolOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := supervise.New(pool, opts)
	if err != nil {
		t.Fatal(err)
	}
	return s, pool
}

func mustSpawn(t *testing.T, s *supervise.Scope, req supervise.SpawnRequest) supervise.NodeID {
	t.Helper()
	r, err := s.Spawn(req)
	if err != nil {
		t.Fatalf("spawn %+v: %v", req, err)
	}
	return r.Node
}

// checkLeadGrant is 2,500 tokens, 2 iterations and $0.25; usd false leaves
// the dollars out.
func checkLeadGrant(usd bool) ledger.Budget {
	b := ledger.Budget{Tokens: i64(2500), Iterations: i64(2)}
	if usd {
		b.MicroUSD = i64(250_000)
	}
	return b
}

// §3.6 nested scope, behaviours 38 and 43–45 under a lead: each refusal
// inside a carved pool carries the reference's code (scope.ts spawn:
// depth-exceeded, max-live-workers from the one admission counter
// shared by every nested scope, then the nested pool's reserve:
// budget-exhausted, or usd-unbudgeted when the lead's budget names no
// maxUsd), and a refusal changes neither the carved pool nor the run's.
func TestCarveCheckRefusalsUnderALeadBehaviour38(t *testing.T) {
	writer := ledger.Budget{Tokens: i64(1000), Iterations: i64(1)}
	tests := []struct {
		name  string
		opts  supervise.ScopeOptions
		usd   bool // the lead's grant names dollars
		setup func(t *testing.T, s *supervise.Scope, lead supervise.NodeID)
		req   supervise.SpawnRequest // Parent is set to the lead
		code  supervise.Code
		cause string
	}{
		// Tokens (500 free of 1000 asked) and iterations (0 of 1) both
		// fall short; tokens are named, as spec §6 and the reference's
		// reserve check them first.
		{name: "a third writer does not fit the lead's tokens or iterations", usd: true,
			setup: func(t *testing.T, s *supervise.Scope, lead supervise.NodeID) {
				mustSpawn(t, s, supervise.SpawnRequest{Parent: lead, Profile: "writer", Label: "w0", Budget: writer})
				mustSpawn(t, s, supervise.SpawnRequest{Parent: lead, Profile: "writer", Label: "w1", Budget: writer})
			},
			req:  supervise.SpawnRequest{Profile: "writer", Label: "w2", Budget: writer},
			code: supervise.CodeBudgetExhausted, cause: ledger.ChannelTokens},
		{name: "dollars past the lead's", usd: true,
			req:  supervise.SpawnRequest{Profile: "writer", Budget: ledger.Budget{Tokens: i64(10), Iterations: i64(1), MicroUSD: i64(250_001)}},
			code: supervise.CodeBudgetExhausted, cause: ledger.ChannelUSD},
		{name: "tokens past the lead's though the run has room", usd: true,
			req:  supervise.SpawnRequest{Profile: "writer", Budget: ledger.Budget{Tokens: i64(2501), Iterations: i64(1)}},
			code: supervise.CodeBudgetExhausted, cause: ledger.ChannelTokens},
		{name: "dollars from a lead that reserved none", usd: false,
			req:  supervise.SpawnRequest{Profile: "writer", Budget: ledger.Budget{Tokens: i64(10), Iterations: i64(1), MicroUSD: i64(1)}},
			code: supervise.CodeUSDUnbudgeted},
		{name: "max-live-workers counts the lead", usd: true, opts: supervise.ScopeOptions{MaxLiveWorkers: 2},
			setup: func(t *testing.T, s *supervise.Scope, lead supervise.NodeID) {
				mustSpawn(t, s, supervise.SpawnRequest{Parent: lead, Profile: "writer", Label: "w0", Budget: writer})
			},
			req:  supervise.SpawnRequest{Profile: "writer", Label: "w1", Budget: writer},
			code: supervise.CodeMaxLiveWorkers},
		{name: "max-live-workers before the lead's empty pool", usd: true, opts: supervise.ScopeOptions{MaxLiveWorkers: 3},
			setup: func(t *testing.T, s *supervise.Scope, lead supervise.NodeID) {
				mustSpawn(t, s, supervise.SpawnRequest{Parent: lead, Profile: "writer", Label: "w0", Budget: writer})
				mustSpawn(t, s, supervise.SpawnRequest{Parent: lead, Profile: "writer", Label: "w1", Budget: writer})
			},
			req:  supervise.SpawnRequest{Profile: "writer", Label: "w2", Budget: writer},
			code: supervise.CodeMaxLiveWorkers},
		{name: "depth under the lead", usd: true, opts: supervise.ScopeOptions{MaxDepth: 1},
			req:  supervise.SpawnRequest{Profile: "writer", Budget: writer},
			code: supervise.CodeDepthExceeded},
		{name: "a model outside allowedModels", usd: true, opts: supervise.ScopeOptions{AllowedModels: []string{"m1"}},
			req:  supervise.SpawnRequest{Profile: "writer", Model: "m2", Budget: writer},
			code: supervise.CodeInvalidIdentity, cause: "model-not-allowed"},
		{name: "authorizeSpawn sees the lead as parent", usd: true, opts: supervise.ScopeOptions{AuthorizeSpawn: func(r supervise.SpawnRequest) error {
			if r.Parent != "root" && r.Profile == "forbidden" {
				return errors.New("leads may not spawn forbidden")
			}
			return nil
		}},
			req:  supervise.SpawnRequest{Profile: "forbidden", Budget: writer},
			code: supervise.CodePreflightRefused, cause: "not-authorized"},
		{name: "a duplicate key under the lead", usd: true,
			setup: func(t *testing.T, s *supervise.Scope, lead supervise.NodeID) {
				mustSpawn(t, s, supervise.SpawnRequest{Parent: lead, Profile: "writer", Key: "k", Budget: writer})
			},
			req:  supervise.SpawnRequest{Profile: "writer", Key: "k", Budget: writer},
			code: supervise.CodeDuplicateKey},
		{name: "an in-doubt key under the lead", usd: true,
			setup: func(t *testing.T, s *supervise.Scope, lead supervise.NodeID) {
				id := mustSpawn(t, s, supervise.SpawnRequest{Parent: lead, Profile: "writer", Key: "k", Budget: writer})
				if err := s.MarkInDoubt(id); err != nil {
					t.Fatal(err)
				}
			},
			req:  supervise.SpawnRequest{Profile: "writer", Key: "k", Budget: writer},
			code: supervise.CodeInDoubt},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, pool := carveCheckScope(t, tc.opts)
			lead := mustSpawn(t, s, supervise.SpawnRequest{Profile: "lead", Label: "lead", Budget: checkLeadGrant(tc.usd)})
			if tc.setup != nil {
				tc.setup(t, s, lead)
			}
			carvedBefore, made := s.Carved(lead)
			runBefore := pool.Readout()
			req := tc.req
			req.Parent = lead
			_, err := s.Spawn(req)
			var r *supervise.Refusal
			if !errors.As(err, &r) {
				t.Fatalf("spawn: %v, want a refusal %s", err, tc.code)
			}
			if r.Code != tc.code || r.Cause != tc.cause {
				t.Errorf("refused %s (%s): %s, want %s (%s)", r.Code, r.Cause, r.Detail, tc.code, tc.cause)
			}
			carvedAfter, madeAfter := s.Carved(lead)
			if !made && madeAfter {
				// The pool is made at the lead's first child: the
				// refused one leaves it whole.
				carvedBefore.Channels = map[string]ledger.Balance{}
				for ch, b := range carvedAfter.Channels {
					carvedBefore.Channels[ch] = ledger.Balance{Total: b.Total, Free: b.Total, Capped: b.Capped, Known: true}
				}
			}
			if d := cmp.Diff(carvedBefore, carvedAfter); d != "" {
				t.Errorf("the refusal changed the lead's carved pool (-before +after):\n%s", d)
			}
			if d := cmp.Diff(runBefore, pool.Readout()); d != "" {
				t.Errorf("the refusal changed the run's pool (-before +after):\n%s", d)
			}
		})
	}
}

// §3.6: a lead whose reservation has no token ceiling cannot be carved;
// its children reserve from the run's pool, so a child larger than
// anything the lead could have is admitted there (and charged there).
func TestCarveCheckUncarvableLeadDrawsOnRunPool(t *testing.T) {
	s, pool := carveCheckScope(t, supervise.ScopeOptions{})
	lead := mustSpawn(t, s, supervise.SpawnRequest{Profile: "lead", Budget: ledger.Budget{Iterations: i64(2)}})
	kid := mustSpawn(t, s, supervise.SpawnRequest{Parent: lead, Profile: "writer", Budget: ledger.Budget{Tokens: i64(50_000), Iterations: i64(1)}})
	if _, ok := s.Carved(lead); ok {
		t.Errorf("a lead without a token ceiling got a carved pool")
	}
	if got := pool.Readout().Channels[ledger.ChannelTokens].Reserved; got != 50_000 {
		t.Errorf("the run's pool holds %d tokens reserved, want the child's 50000", got)
	}
	if _, err := s.Settle(kid, supervise.Result{State: supervise.StateDone, Spent: ledger.Spend{Tokens: i64(700), Iterations: i64(1), MicroUSD: i64(0)}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Settle(lead, supervise.Result{State: supervise.StateDone, Spent: ledger.Spend{Tokens: i64(300), Iterations: i64(1), MicroUSD: i64(0)}}); err != nil {
		t.Fatal(err)
	}
	checkRunMatchesTotals(t, s, pool, "uncarvable lead")
}

// checkAllConserved: the run's pool and every carved pool conserve.
func checkAllConserved(t *testing.T, s *supervise.Scope, pool *ledger.Pool, where string) {
	t.Helper()
	if err := pool.Readout().Conserved(); err != nil {
		t.Fatalf("%s: the run's pool: %v", where, err)
	}
	for _, n := range s.Nodes() {
		if r, ok := s.Carved(n.ID); ok {
			if err := r.Conserved(); err != nil {
				t.Fatalf("%s: %s's carved pool: %v", where, n.ID, err)
			}
		}
	}
}

// checkRunMatchesTotals: with every ticket closed, the run's pool
// charged exactly what the scope's totals count, channel by channel,
// and a channel is known in the totals exactly when no gap names it.
func checkRunMatchesTotals(t *testing.T, s *supervise.Scope, pool *ledger.Pool, where string) {
	t.Helper()
	r := pool.Readout()
	if r.OpenTickets != 0 {
		t.Fatalf("%s: the run's pool holds %d open tickets", where, r.OpenTickets)
	}
	tot := s.Totals()
	got := map[string]int64{ledger.ChannelTokens: tot.Spent.Tokens, ledger.ChannelIterations: tot.Spent.Iterations, ledger.ChannelUSD: tot.Spent.MicroUSD}
	want := map[string]int64{}
	for ch := range got {
		want[ch] = r.Channels[ch].Committed
	}
	if d := cmp.Diff(want, got); d != "" {
		for _, n := range s.Nodes() {
			sp, gaps := supervise.NodeSpent(n)
			t.Logf("%s parent=%s state=%s reserved=%s spent=%+v gaps=%v", n.ID, n.Parent, n.State, fmtBudget(n.Reserved), sp, gaps)
		}
		t.Errorf("%s: the totals differ from what the run's pool charged (-pool +totals):\n%s", where, d)
	}
	named := map[string]bool{}
	for _, g := range tot.Gaps {
		for _, ch := range g.Channels {
			named[ch] = true
		}
	}
	if tot.Spent.TokensKnown == named[ledger.ChannelTokens] || tot.Spent.USDKnown == named[ledger.ChannelUSD] || tot.Spent.IterationsKnown == named[ledger.ChannelIterations] {
		t.Errorf("%s: known flags %+v disagree with the gaps %+v", where, tot.Spent, tot.Gaps)
	}
}

func fmtBudget(b ledger.Budget) string {
	f := func(v *int64) string {
		if v == nil {
			return "-"
		}
		return fmt.Sprint(*v)
	}
	return "t=" + f(b.Tokens) + " i=" + f(b.Iterations) + " usd=" + f(b.MicroUSD)
}

// §3.6 conservation: a child that reserved no iterations in its lead's
// carved pool spends 5 there after its lead went in doubt (charged its
// ceiling of 2 in the run's pool). The 3 past the lead's ceiling spill
// into the run's pool, as a child's overspend past its own reservation
// does, so the run's pool charges what the totals count (the lead's
// ceiling is covered by its child; the child's 5).
func TestCarveCheckUnreservedChannelSpillsPastAnInDoubtLead(t *testing.T) {
	s, pool := carveCheckScope(t, supervise.ScopeOptions{})
	lead := mustSpawn(t, s, supervise.SpawnRequest{Profile: "lead", Budget: checkLeadGrant(true)})
	kid := mustSpawn(t, s, supervise.SpawnRequest{Parent: lead, Profile: "writer", Budget: ledger.Budget{Tokens: i64(1000)}})
	if err := s.MarkInDoubt(lead); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Settle(kid, supervise.Result{State: supervise.StateDone, Spent: ledger.Spend{Tokens: i64(400), Iterations: i64(5), MicroUSD: i64(10)}}); err != nil {
		t.Fatal(err)
	}
	checkAllConserved(t, s, pool, "kid settled")
	checkRunMatchesTotals(t, s, pool, "kid settled")
	if got := pool.Readout().Channels[ledger.ChannelIterations].Committed; got != 5 {
		t.Errorf("the run's pool charged %d iterations, want the child's 5", got)
	}
}

// §3.6 nested scope: a lead's grant bounds its whole subtree, however
// deep. A manager under the lead whose reservation has no token ceiling
// cannot be carved; its children reserve where it did, in the lead's
// carved pool, so a grandchild asking for more tokens than the lead was
// granted is refused budget-exhausted though the run's pool has room,
// and one that fits is held by the lead's pool, not the run's.
func TestCarveCheckUncarvableMidManagerStaysInItsLeadsGrant(t *testing.T) {
	s, pool := carveCheckScope(t, supervise.ScopeOptions{})
	lead := mustSpawn(t, s, supervise.SpawnRequest{Profile: "lead", Budget: checkLeadGrant(true)})
	mid := mustSpawn(t, s, supervise.SpawnRequest{Parent: lead, Profile: "mid", Budget: ledger.Budget{Iterations: i64(1)}})
	_, err := s.Spawn(supervise.SpawnRequest{Parent: mid, Profile: "writer", Budget: ledger.Budget{Tokens: i64(3000), Iterations: i64(1)}})
	var r *supervise.Refusal
	if !errors.As(err, &r) || r.Code != supervise.CodeBudgetExhausted || r.Cause != ledger.ChannelTokens {
		t.Fatalf("a grandchild past the lead's 2500 tokens: %v, want budget-exhausted (tokens)", err)
	}
	kid := mustSpawn(t, s, supervise.SpawnRequest{Parent: mid, Profile: "writer", Budget: ledger.Budget{Tokens: i64(2000), Iterations: i64(1)}})
	if got := pool.Readout().Channels[ledger.ChannelTokens].Reserved; got != 2500 {
		t.Errorf("the run's pool holds %d tokens, want the lead's 2500 alone", got)
	}
	if c, _ := s.Carved(lead); c.Channels[ledger.ChannelTokens].Reserved != 2000 {
		t.Errorf("the lead's carved pool holds %d tokens, want the grandchild's 2000", c.Channels[ledger.ChannelTokens].Reserved)
	}
	for _, id := range []supervise.NodeID{kid, mid, lead} {
		if _, err := s.Settle(id, supervise.Result{State: supervise.StateDone, Spent: ledger.Spend{Tokens: i64(100), Iterations: i64(1), MicroUSD: i64(5)}}); err != nil {
			t.Fatal(err)
		}
		checkAllConserved(t, s, pool, "settled "+string(id))
	}
	checkRunMatchesTotals(t, s, pool, "all settled")
}

// §3.6 conservation, a charge arriving after its lead settled: lead A
// settles while its manager B still runs (A's ticket waits for B); B goes
// in doubt (charged its ceiling of 3 iterations in A's pool), which lets
// A's ticket settle at 3. B's worker C then overspends its 2 iterations
// by 2, 1 past B's ceiling: that 1 spills through A's pool, whose
// ticket no longer holds its ceiling of 4, into the run's pool.
func TestCarveCheckLateSpillPastASettledLead(t *testing.T) {
	s, pool := carveCheckScope(t, supervise.ScopeOptions{})
	a := mustSpawn(t, s, supervise.SpawnRequest{Profile: "a", Budget: ledger.Budget{Tokens: i64(3000), Iterations: i64(4)}})
	b := mustSpawn(t, s, supervise.SpawnRequest{Parent: a, Profile: "b", Budget: ledger.Budget{Tokens: i64(2000), Iterations: i64(3)}})
	c := mustSpawn(t, s, supervise.SpawnRequest{Parent: b, Profile: "c", Budget: ledger.Budget{Tokens: i64(200), Iterations: i64(2)}})
	if _, err := s.Settle(a, supervise.Result{State: supervise.StateDone, Spent: ledger.Spend{Tokens: i64(10), Iterations: i64(0), MicroUSD: i64(0)}}); err != nil {
		t.Fatal(err)
	}
	if err := s.MarkInDoubt(b); err != nil {
		t.Fatal(err)
	}
	checkAllConserved(t, s, pool, "b in doubt")
	if _, err := s.Settle(c, supervise.Result{State: supervise.StateDone, Spent: ledger.Spend{Tokens: i64(50), Iterations: i64(4), MicroUSD: i64(0)}}); err != nil {
		t.Fatal(err)
	}
	checkAllConserved(t, s, pool, "c settled")
	checkRunMatchesTotals(t, s, pool, "c settled")
}

// §3.6 conservation, §6 reconcile: a lead's child X overspends (11
// iterations on no iteration ceiling) while its sibling Y still holds a
// reservation of 2; Y then settles for 1, and the lead settles leaving
// its own iterations unreported (charged its ceiling). The run's pool
// charges the subtree's 12 iterations, as the totals count them: what
// spills past the lead's ceiling is what its children spent, never a
// live reservation that later settled for less.
func TestCarveCheckSpillCountsChargesNotReservations(t *testing.T) {
	s, pool := carveCheckScope(t, supervise.ScopeOptions{})
	lead := mustSpawn(t, s, supervise.SpawnRequest{Profile: "lead", Budget: ledger.Budget{Tokens: i64(3000), Iterations: i64(2)}})
	x := mustSpawn(t, s, supervise.SpawnRequest{Parent: lead, Profile: "x", Budget: ledger.Budget{Tokens: i64(100)}})
	y := mustSpawn(t, s, supervise.SpawnRequest{Parent: lead, Profile: "y", Budget: ledger.Budget{Tokens: i64(100), Iterations: i64(2)}})
	for _, st := range []struct {
		id supervise.NodeID
		sp ledger.Spend
	}{
		{x, ledger.Spend{Tokens: i64(50), Iterations: i64(11), MicroUSD: i64(0)}},
		{y, ledger.Spend{Tokens: i64(50), Iterations: i64(1), MicroUSD: i64(0)}},
		{lead, ledger.Spend{Tokens: i64(10), MicroUSD: i64(0)}},
	} {
		if _, err := s.Settle(st.id, supervise.Result{State: supervise.StateDone, Spent: st.sp}); err != nil {
			t.Fatal(err)
		}
		checkAllConserved(t, s, pool, "settled "+string(st.id))
	}
	checkRunMatchesTotals(t, s, pool, "all settled")
}

// §3.6 conservation, dollars a carved pool does not cap: a lead with a
// dollar ceiling settles (its ticket waits for its manager M, whose
// grant names no dollars); M goes in doubt, which settles the lead's
// ticket; M's worker then reports $0.000002. Those dollars go up to the
// lead's pool, the nearest that caps them, and on into the run's pool,
// the lead's ticket being closed already.
func TestCarveCheckUncappedDollarsPastASettledLead(t *testing.T) {
	s, pool := carveCheckScope(t, supervise.ScopeOptions{})
	lead := mustSpawn(t, s, supervise.SpawnRequest{Profile: "lead", Budget: ledger.Budget{Tokens: i64(3000), Iterations: i64(4), MicroUSD: i64(100_000)}})
	m := mustSpawn(t, s, supervise.SpawnRequest{Parent: lead, Profile: "m", Budget: ledger.Budget{Tokens: i64(1000), Iterations: i64(2)}})
	w := mustSpawn(t, s, supervise.SpawnRequest{Parent: m, Profile: "w", Budget: ledger.Budget{Tokens: i64(100), Iterations: i64(1)}})
	if _, err := s.Settle(lead, supervise.Result{State: supervise.StateDone, Spent: ledger.Spend{Tokens: i64(10), Iterations: i64(1), MicroUSD: i64(10)}}); err != nil {
		t.Fatal(err)
	}
	if err := s.MarkInDoubt(m); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Settle(w, supervise.Result{State: supervise.StateDone, Spent: ledger.Spend{Tokens: i64(50), Iterations: i64(1), MicroUSD: i64(2)}}); err != nil {
		t.Fatal(err)
	}
	checkAllConserved(t, s, pool, "w settled")
	checkRunMatchesTotals(t, s, pool, "w settled")
	if got := pool.Readout().Channels[ledger.ChannelUSD].Committed; got != 12 {
		t.Errorf("the run's pool charged %d micro-dollars, want the lead's 10 and its worker's 2", got)
	}
}

// §3.6, §13 resume: TestNestedCarvedPoolResumesFromEverySQLiteCut on a
// PostgreSQL store journal. Every cut of the journal resumes to a run
// whose lead's subtree stays within its grant, whose lead's refusals are
// budget-exhausted only, and which does not end budget-exhausted.
func TestCarveCheckResumesFromEveryPostgresCut(t *testing.T) {
	checkCarveResumesFromEveryCut(t, "postgres", postgresJournal)
}

// §3.6 spentTotal and spendGaps with a nested lead, behaviour 41: the
// run's result counts the lead and its writers once (TreeCharged), its
// spentTotal is driverInference plus childWork, its Known flags are
// false exactly on the channels a gap names, and the store ledger's
// charged members (LedgerEntries, what runs show prints) sum to
// spentTotal; writers that report nothing are charged their ceilings
// and named in the gaps — on the uncut run and on every cut of its file journal
// resumed (a crash at any record).
func TestCarveCheckResultAndLedgerSumWithANestedLead(t *testing.T) {
	check := func(res supervise.SupervisedResult, where string) {
		t.Helper()
		sum := map[string]int64{}
		for _, e := range supervise.LedgerEntries(res) {
			charged, ok := e.Get("charged")
			if !ok {
				t.Fatalf("%s: a ledger entry without charged: %s", where, canonjson.Marshal(e))
			}
			for _, m := range charged.Members() {
				sum[m.Name] += int64(m.Value.Float())
			}
		}
		want := map[string]int64{"tokens": res.Spent.Tokens, "iterations": res.Spent.Iterations, "microUsd": res.Spent.MicroUSD}
		if d := cmp.Diff(want, sum); d != "" {
			t.Errorf("%s: the ledger's charged members differ from spentTotal (-spent +ledger):\n%s", where, d)
		}
		b := res.Breakdown
		parts := map[string]int64{"tokens": b.DriverInference.Tokens + b.ChildWork.Tokens, "iterations": b.DriverInference.Iterations + b.ChildWork.Iterations,
			"microUsd": b.DriverInference.MicroUSD + b.ChildWork.MicroUSD}
		if d := cmp.Diff(want, parts); d != "" {
			t.Errorf("%s: driverInference + childWork differ from spentTotal (-spent +parts):\n%s", where, d)
		}
		named := map[string]bool{}
		for _, g := range res.SpendGaps {
			for _, ch := range g.Channels {
				named[ch] = true
			}
		}
		if res.Spent.TokensKnown == named[ledger.ChannelTokens] || res.Spent.USDKnown == named[ledger.ChannelUSD] {
			t.Errorf("%s: spentTotal %+v, gaps %+v: a channel is known exactly when no gap names it", where, res.Spent, res.SpendGaps)
		}
		var lead, writers int64
		for _, n := range res.Tree {
			if n.Settlement == nil || n.Settlement.Spent.Tokens == nil {
				continue
			}
			if n.ID == "run1:s1" {
				lead = *n.Settlement.Spent.Tokens
			} else {
				writers += *n.Settlement.Spent.Tokens
			}
		}
		if res.Spent.TokensKnown && b.ChildWork.Tokens != lead+writers {
			t.Errorf("%s: childWork %d tokens, want the lead's own %d and its writers' %d, counted once", where, b.ChildWork.Tokens, lead, writers)
		}
	}
	dir := t.TempDir()
	res, _ := carveRun(t, dir, false, "uncut")
	// The writers' scripted provider has no turn for their tasks: they
	// fail unreported, charged at their 1,000-token ceilings and named
	// in the gaps, never counted 0; the lead's own 100 is measured.
	gapped := map[supervise.NodeID]bool{}
	for _, g := range res.SpendGaps {
		gapped[g.ID] = slices.Contains(g.Channels, ledger.ChannelTokens)
	}
	if res.Spent.Tokens != 2100 || res.Spent.TokensKnown || !gapped["run1:s1:s2"] || !gapped["run1:s1:s3"] || gapped["run1:s1"] {
		t.Fatalf("uncut: spent %+v, gaps %+v: want 2,100 tokens unknown, the two writers named", res.Spent, res.SpendGaps)
	}
	check(res, "uncut")
	eachSpawnJournalCut(t, dir, func(cut, where string) {
		res, _ := carveRun(t, cut, true, where)
		check(res, where)
	})
}

// Behaviour 44, refusal order under a lead: a key whose earlier spawn
// is in doubt refuses in-doubt even when the new request differs (the
// reference's scope.ts spawn refuses an in-doubt key before it compares
// identities; key-conflict would send the driver after the wrong fix,
// when no request can run beside the unrecovered start).
func TestCarveCheckInDoubtKeyBeforeKeyConflictBehaviour44(t *testing.T) {
	s, _ := carveCheckScope(t, supervise.ScopeOptions{})
	lead := mustSpawn(t, s, supervise.SpawnRequest{Profile: "lead", Budget: checkLeadGrant(true)})
	writer := ledger.Budget{Tokens: i64(1000), Iterations: i64(1)}
	id := mustSpawn(t, s, supervise.SpawnRequest{Parent: lead, Profile: "writer", Task: "a", Key: "k", Budget: writer})
	if err := s.MarkInDoubt(id); err != nil {
		t.Fatal(err)
	}
	_, err := s.Spawn(supervise.SpawnRequest{Parent: lead, Profile: "writer", Task: "b", Key: "k", Budget: writer})
	var r *supervise.Refusal
	if !errors.As(err, &r) || r.Code != supervise.CodeInDoubt {
		t.Fatalf("a different request under an in-doubt key: %v, want in-doubt", err)
	}
}
