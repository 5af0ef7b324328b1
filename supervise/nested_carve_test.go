package supervise_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/supervise"
)

// carveGrant is what the root grants its lead: 2,500 tokens, 2
// iterations and $0.25 (each writer reserves the per-worker 1,000
// tokens, 1 iteration and $0.10).
const carveGrantTokens, carveGrantIterations = 2500, 2

// carveRun runs root → lead → writers on dir: the lead meters a turn of
// its own (100 tokens), then asks for three writers; only two fit its
// grant. It returns the result, the lead's refusals and the run pool's
// readouts the root took.
func carveRun(t *testing.T, dir string, resume bool, where string) (supervise.SupervisedResult, []*supervise.Refusal) {
	t.Helper()
	res, refused, err := carveRunOn(context.Background(), t, dir, resume, where, nil)
	if err != nil {
		t.Fatalf("%s: %v", where, err)
	}
	return res, refused
}

// carveRunOn is carveRun on ctx, with set (when not nil) adjusting the
// options (a store journal), returning Supervise's error.
func carveRunOn(ctx context.Context, t *testing.T, dir string, resume bool, where string, set func(*supervise.Options)) (supervise.SupervisedResult, []*supervise.Refusal, error) {
	t.Helper()
	// The writers start their work only once the lead made all three
	// spawns: a writer that failed first (its dollars unreported, which
	// closes the lead's dollar-capped grant) would otherwise refuse the
	// next spawn on a loaded machine, where the plan is two admitted and
	// the third refused for iterations. Bounded: a writer waits at most
	// 10 s, or until the run cancels it.
	spawned := make(chan struct{})
	var spawnedOnce sync.Once
	inner := newCounting(t, workerProvider(t))
	gated := supervise.ExecutorFunc(func(ctx context.Context, w supervise.Work) (supervise.WorkResult, error) {
		select {
		case <-spawned:
		case <-ctx.Done():
		case <-time.After(10 * time.Second):
		}
		return inner.Execute(ctx, w)
	})
	o := nestedOptions(t, gated, nil, nil)
	o.RunDir, o.Resume = dir, resume
	if set != nil {
		set(&o)
	}
	var refused []*supervise.Refusal
	o.ManagerBrain = func(*profile.Profile) supervise.Brain {
		return goLead(func(ctx context.Context, c *supervise.Coordinator, task string) (supervise.BrainReport, error) {
			if err := c.Meter(ctx, ledger.Usage{InputTokens: ledger.ExactAmount[int64](100), OutputTokens: ledger.ExactAmount[int64](0), CostUSD: ledger.ExactAmount(0.0)}); err != nil {
				return supervise.BrainReport{}, err
			}
			admitted := 0
			for i := range 3 {
				_, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "writer", Task: fmt.Sprintf("write part %d", i), Label: fmt.Sprintf("w%d", i)})
				var r *supervise.Refusal
				switch {
				case errors.As(err, &r):
					refused = append(refused, r)
				case err != nil:
					return supervise.BrainReport{}, err
				default:
					admitted++
				}
				checkPoolConserved(t, c.Readout(), fmt.Sprintf("%s: lead spawn %d", where, i))
				if r, ok := c.CarvedReadout(c.Self()); ok {
					checkPoolConserved(t, r, fmt.Sprintf("%s: the lead's carved pool after spawn %d", where, i))
				}
			}
			spawnedOnce.Do(func() { close(spawned) })
			for range admitted {
				if _, err := c.Await(ctx, supervise.AwaitArgs{TimeoutMS: 60_000, Kinds: []string{supervise.EventSettled}}); err != nil {
					return supervise.BrainReport{}, err
				}
			}
			return supervise.BrainReport{Text: "lead finished, nothing to deliver"}, nil
		})
	}
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		grantT, grantI, grantUSD := int64(carveGrantTokens), int64(carveGrantIterations), 0.25
		if _, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "lead", Task: "lead", Label: "lead",
			Budget: &supervise.SpawnBudget{Tokens: &grantT, Iterations: &grantI, USD: &grantUSD}}); err != nil {
			return supervise.BrainReport{}, err
		}
		checkPoolConserved(t, c.Readout(), where+": root spawned the lead")
		if _, err := c.Await(ctx, supervise.AwaitArgs{TimeoutMS: 60_000, Kinds: []string{supervise.EventSettled}}); err != nil {
			return supervise.BrainReport{}, err
		}
		r := c.Readout()
		checkPoolConserved(t, r, where+": the lead settled")
		if r.OpenTickets != 0 {
			t.Errorf("%s: %d tickets open after the lead settled", where, r.OpenTickets)
		}
		if cr, ok := c.CarvedReadout("run1:s1"); ok {
			checkPoolConserved(t, cr, where+": the lead's carved pool once it settled")
			if cr.OpenTickets != 0 {
				t.Errorf("%s: the lead's carved pool holds %d tickets once it settled", where, cr.OpenTickets)
			}
		}
		return supervise.BrainReport{}, nil
	})
	res, err := supervise.Supervise(ctx, managerProfile(t, supervise.VerbSpawnWorker), "t", o)
	return res, refused, err
}

// checkSubtreeWithinGrant: the lead and its writers together spent no
// more than the lead's grant, on tokens and on iterations.
func checkSubtreeWithinGrant(t *testing.T, res supervise.SupervisedResult, where string) {
	t.Helper()
	var tokens, iterations int64
	n := 0
	for _, node := range res.Tree {
		if node.ID != "run1:s1" && !strings.HasPrefix(string(node.ID), "run1:s1:") {
			continue
		}
		n++
		spent, _ := supervise.NodeSpent(node.NodeInfo)
		tokens += spent.Tokens
		iterations += spent.Iterations
	}
	if n == 0 {
		t.Fatalf("%s: no lead in the tree", where)
	}
	if tokens > carveGrantTokens || iterations > carveGrantIterations {
		for _, node := range res.Tree {
			sp, gaps := supervise.NodeSpent(node.NodeInfo)
			t.Logf("%s %s indoubt=%v never=%v spent=%+v gaps=%v", node.ID, node.State, node.InDoubt, node.NeverSettled, sp, gaps)
		}
		t.Errorf("%s: the lead's subtree spent %d tokens and %d iterations, past its grant of %d and %d",
			where, tokens, iterations, carveGrantTokens, carveGrantIterations)
	}
}

// §3.6 nested scope (the reference's makeNestedScopeSeam: a nested
// manager's scope draws on a pool carved from its own reservation): a
// lead granted 2,500 tokens and 2 iterations, having spent 100 tokens
// itself, gets two writers of 1,000 tokens and 1 iteration and its third
// spawn is refused budget-exhausted — the run's pool, with room to
// spare, does not stand in for it. The subtree never spends past the
// grant, the run's pool is conserved at every step, and every cut of
// the journal resumes to the same bounds.
func TestNestedManagerChildrenDrawOnItsReservation(t *testing.T) {
	dir := t.TempDir()
	res, refused := carveRun(t, dir, false, "first run")
	if len(refused) != 1 || refused[0].Code != supervise.CodeBudgetExhausted {
		t.Fatalf("the lead's refusals %+v, want its third spawn refused budget-exhausted", refused)
	}
	checkSubtreeWithinGrant(t, res, "first run")
	if res.Status == "" || res.Reason == supervise.ReasonBudgetExhausted {
		t.Fatalf("the run ended %s %s; the lead's grant running out is not the run's", res.Status, res.Reason)
	}
	eachSpawnJournalCut(t, dir, func(cut, where string) {
		res, refused := carveRun(t, cut, true, where)
		for _, r := range refused {
			if r.Code != supervise.CodeBudgetExhausted {
				t.Errorf("%s: the lead's spawn refused %s, want budget-exhausted", where, r.Code)
			}
		}
		checkSubtreeWithinGrant(t, res, where)
	})
}

// eachSpawnJournalCut calls resume, for every cut of the run dir dir's
// spawn journal after its first keep records (1 ≤ keep < all), with a
// copy of dir whose journal holds only those — as a process killed there
// left it — and where, naming the cut for failures.
func eachSpawnJournalCut(t *testing.T, dir string, resume func(cut, where string)) {
	t.Helper()
	full, err := os.ReadFile(filepath.Join(dir, supervise.SpawnJournalFile))
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(bytes.TrimSuffix(full, []byte("\n")), []byte("\n"))
	for keep := 1; keep < len(lines); keep++ {
		where := fmt.Sprintf("resumed from %d of %d records", keep, len(lines))
		cut := filepath.Join(t.TempDir(), "run")
		if err := os.CopyFS(cut, os.DirFS(dir)); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(cut, supervise.SpawnJournalFile), bytes.Join(lines[:keep], nil), 0o600); err != nil {
			t.Fatal(err)
		}
		resume(cut, where)
	}
}

// §3.6 nested scope, the nested manager's own turns: what its live
// children hold of its grant is not free for its next model turn. A
// router lead granted 2,500 tokens, each of its turns using 100, spawns
// two writers that hold their 1,000-token reservations until cancelled
// and then keeps awaiting: after its second turn 300 tokens are left
// for its turns, so its sixth turn is refused before the model is
// called (5 model calls, not the 12 its script holds), its subtree
// stays within its grant, and its carved pool is conserved with no
// ticket open once it settled.
func TestNestedManagerTurnGateCountsLiveChildren(t *testing.T) {
	turns := []scripted.ChatTurn{
		turn(call("l1", supervise.VerbSpawnWorker, map[string]any{"profile": "writer", "task": "hang a"}), managerUsage(100, 0, 0.0001)),
		turn(call("l2", supervise.VerbSpawnWorker, map[string]any{"profile": "writer", "task": "hang b"}), managerUsage(100, 0, 0.0001)),
	}
	for i := range 9 {
		turns = append(turns, turn(call(fmt.Sprintf("l%d", i+3), supervise.VerbAwaitEvent, map[string]any{"timeoutMs": i + 1}), managerUsage(100, 0, 0.0001)))
	}
	turns = append(turns, turn(scripted.Text("lead: done waiting"), managerUsage(100, 0, 0.0001)))
	leadModel := scripted.NewChatModel(scripted.ChatScript{Turns: turns})
	exec := supervise.ExecutorFunc(func(ctx context.Context, w supervise.Work) (supervise.WorkResult, error) {
		<-ctx.Done() // a writer holds its reservation until it is cancelled
		return supervise.WorkResult{Spent: zeroSpent()}, context.Cause(ctx)
	})
	o := nestedOptions(t, exec, nil, func() contract.ChatModel { return leadModel })
	var carved ledger.Readout
	var carvedOK bool
	o.Brain = rootBrainLeadGranted(t, leadGrant(carveGrantTokens, carveGrantIterations, 1), func(ctx context.Context, c *supervise.Coordinator, lead supervise.NodeID) {
		if _, err := c.Await(ctx, supervise.AwaitArgs{TimeoutMS: 60_000, Kinds: []string{supervise.EventSettled}}); err != nil {
			t.Errorf("awaiting the lead: %v", err)
		}
		carved, carvedOK = c.CarvedReadout(lead)
	})
	res, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker, supervise.VerbAwaitEvent), "t", o)
	if err != nil {
		t.Fatal(err)
	}
	if got := leadModel.Calls(); got != 5 {
		t.Errorf("the lead's model was called %d times, want 5: its live writers' 2,000 tokens leave 300 for its turns after the second", got)
	}
	checkSubtreeWithinGrant(t, res, "gate")
	if !carvedOK {
		t.Fatal("the lead carved no pool")
	}
	checkPoolConserved(t, carved, "the lead's carved pool after it settled")
	if carved.OpenTickets != 0 {
		t.Errorf("the lead's carved pool holds %d open tickets after it settled", carved.OpenTickets)
	}
}

// countAppends is a spawn journal that counts its appends and, once
// dead is set by the countdown, "dies": nothing lands after the keep-th
// append, as a process killed there leaves a store journal.
type countAppends struct {
	supervise.SpawnLog
	n    *atomic.Int64
	keep int64 // 0: never dies
}

func (c countAppends) Append(ctx context.Context, recs ...supervise.Record) error {
	if c.keep > 0 && c.n.Load() >= c.keep {
		return errCrashed
	}
	if err := c.SpawnLog.Append(ctx, recs...); err != nil {
		return err
	}
	c.n.Add(1)
	return nil
}

// TestNestedManagerChildrenDrawOnItsReservation on a SQLite journal:
// the same run is cut after each of its appends, as a process killed
// there leaves the store, and resumed by a new Supervise on the store;
// every resumed run rebuilds the lead's carved pool from the journal
// (conserved, no ticket left open once the lead settled), refuses only
// budget-exhausted and keeps the lead's subtree within its grant.
func TestNestedCarvedPoolResumesFromEverySQLiteCut(t *testing.T) {
	checkCarveResumesFromEveryCut(t, "sqlite", sqliteJournal)
}

// checkCarveResumesFromEveryCut runs the carve tree once uncut on the
// journal journal makes (name, for failures), counting its appends; then,
// for every cut after keep of them, a run cut there on a fresh journal
// and its resume: each resumed run refuses only budget-exhausted, keeps
// the lead's subtree within its grant and does not end budget-exhausted.
func checkCarveResumesFromEveryCut(t *testing.T, name string, journal func(*testing.T) func(*supervise.Options)) {
	t.Helper()
	var total atomic.Int64
	count := func(ctx context.Context, n *atomic.Int64, keep int64) context.Context {
		return supervise.WithSpawnLogWrapper(ctx, func(sl supervise.SpawnLog) supervise.SpawnLog {
			return countAppends{SpawnLog: sl, n: n, keep: keep}
		})
	}
	_, _, err := carveRunOn(count(context.Background(), &total, 0), t, t.TempDir(), false, "uncut", journal(t))
	if err != nil {
		t.Fatal(err)
	}
	if total.Load() < 4 {
		t.Fatalf("the run made %d appends, want a spawn and settlement each at least", total.Load())
	}
	t.Logf("the uncut run made %d appends", total.Load())
	for keep := int64(1); keep < total.Load(); keep++ {
		where := fmt.Sprintf("%s, resumed after %d of %d appends", name, keep, total.Load())
		dir, set := t.TempDir(), journal(t)
		var n atomic.Int64
		_, _, _ = carveRunOn(count(context.Background(), &n, keep), t, dir, false, where+" (cut run)", set)
		res, refused, err := carveRunOn(context.Background(), t, dir, true, where, set)
		if err != nil {
			t.Fatalf("%s: %v", where, err)
		}
		if !res.Resumed {
			t.Fatalf("%s: the run was not resumed", where)
		}
		for _, r := range refused {
			if r.Code != supervise.CodeBudgetExhausted {
				t.Errorf("%s: the lead's spawn refused %s, want budget-exhausted", where, r.Code)
			}
		}
		checkSubtreeWithinGrant(t, res, where)
		if res.Reason == supervise.ReasonBudgetExhausted {
			t.Errorf("%s: the run ended budget-exhausted; the lead's grant running out is not the run's", where)
		}
	}
}
