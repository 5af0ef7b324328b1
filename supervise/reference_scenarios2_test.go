package supervise_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/internal/journaltest"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/supervise"
)

// §6, behaviour 36: a per-worker ceiling larger than the run's conserved
// pool, or on a channel the pool does not budget, can never be reserved, so Supervise refuses it as a
// misconfiguration (a typed *PerWorkerExceedsBudgetError, matching
// ErrInvalidOptions, naming the option and its JSON pointer) before
// anything is journaled, instead of every spawn later failing with a
// budget-shaped refusal the caller cannot trace to its option. The
// reference's per-worker-pool scenarios.
func TestPerWorkerCeilingMustFitThePoolBehaviour36(t *testing.T) {
	cases := []struct {
		name   string
		budget ledger.Budget
		per    ledger.Budget
		want   *supervise.PerWorkerExceedsBudgetError
	}{
		{"tokens", ledger.Budget{Tokens: i64(200_000_000), Iterations: i64(10)},
			ledger.Budget{Tokens: i64(3_200_000_000), Iterations: i64(4)},
			&supervise.PerWorkerExceedsBudgetError{Field: "PerWorker.Tokens", Pointer: "/perWorker/tokens", PerWorker: 3_200_000_000, Budget: i64(200_000_000)}},
		{"iterations", ledger.Budget{Tokens: i64(1_000_000), Iterations: i64(10)},
			ledger.Budget{Tokens: i64(100_000), Iterations: i64(40)},
			&supervise.PerWorkerExceedsBudgetError{Field: "PerWorker.Iterations", Pointer: "/perWorker/iterations", PerWorker: 40, Budget: i64(10)}},
		{"microUSD", ledger.Budget{Tokens: i64(1_000), Iterations: i64(10), MicroUSD: i64(5)},
			ledger.Budget{MicroUSD: i64(6)},
			&supervise.PerWorkerExceedsBudgetError{Field: "PerWorker.MicroUSD", Pointer: "/perWorker/microUsd", PerWorker: 6, Budget: i64(5)}},
		{"resource", ledger.Budget{Tokens: i64(1_000), Iterations: i64(10), Resources: map[string]int64{"gpu/s": 60}},
			ledger.Budget{Resources: map[string]int64{"gpu/s": 61}},
			&supervise.PerWorkerExceedsBudgetError{Field: "PerWorker.Resources[gpu/s]", Pointer: "/perWorker/resources/gpu~1s", PerWorker: 61, Budget: i64(60)}},
		{"dollars the pool does not budget", ledger.Budget{Tokens: i64(1_000), Iterations: i64(10)},
			ledger.Budget{MicroUSD: i64(1)},
			&supervise.PerWorkerExceedsBudgetError{Field: "PerWorker.MicroUSD", Pointer: "/perWorker/microUsd", PerWorker: 1}},
		{"a resource the pool does not budget", ledger.Budget{Tokens: i64(1_000), Iterations: i64(10)},
			ledger.Budget{Resources: map[string]int64{"box-minutes": 1}},
			&supervise.PerWorkerExceedsBudgetError{Field: "PerWorker.Resources[box-minutes]", Pointer: "/perWorker/resources/box-minutes", PerWorker: 1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var ran atomic.Int64
			exec := supervise.ExecutorFunc(func(context.Context, supervise.Work) (supervise.WorkResult, error) {
				ran.Add(1)
				return supervise.WorkResult{Text: "x"}, nil
			})
			o := baseOptions(t, exec, twoWorkerManager())
			o.RunDir = t.TempDir()
			o.Budget, o.PerWorker = tc.budget, tc.per
			_, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o)
			var got *supervise.PerWorkerExceedsBudgetError
			if !errors.As(err, &got) {
				t.Fatalf("err = %v, want a *PerWorkerExceedsBudgetError", err)
			}
			if !errors.Is(err, supervise.ErrInvalidOptions) {
				t.Errorf("err = %v does not match ErrInvalidOptions", err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
			if n := ran.Load(); n != 0 {
				t.Errorf("%d workers ran for a refused run", n)
			}
			entries, err := os.ReadDir(o.RunDir)
			if err != nil {
				t.Fatal(err)
			}
			if len(entries) != 0 {
				t.Errorf("a refused run wrote %d entries in its run dir, first %s", len(entries), filepath.Join(o.RunDir, entries[0].Name()))
			}
		})
	}
}

// §6: the guard is not a blanket refusal: per-worker ceilings below the
// pool or equal to it (iterations, the gpu resource) run.
func TestPerWorkerCeilingThatFitsRuns(t *testing.T) {
	exec := newCounting(t, workerProvider(t))
	o := baseOptions(t, exec, twoWorkerManager())
	o.RunDir = t.TempDir()
	o.Budget = ledger.Budget{Tokens: i64(10_000), Iterations: i64(10), MicroUSD: i64(1_000_000), Resources: map[string]int64{"gpu": 5}}
	o.PerWorker = ledger.Budget{Tokens: i64(4_000), Iterations: i64(10), MicroUSD: i64(100_000), Resources: map[string]int64{"gpu": 5}}
	res, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker, supervise.VerbAwaitEvent), "t", o)
	if err != nil {
		t.Fatalf("Supervise: %v", err)
	}
	if res.Status != supervise.StatusWinner || res.Winner == nil || res.Winner.Node != "run1:s1" {
		t.Errorf("status %s reason %s winner %+v tree %+v, want run1:s1 the winner", res.Status, res.Reason, res.Winner, res.Tree)
	}
}

// Behaviour 44's unkeyed counterpart (§3.6 "Keyed spawns across
// restarts"): only a key links a spawn to an earlier attempt. The
// reference's prior-attempt lookup (completed / retried / lost) is by
// key; an unkeyed spawn carries no key and is always a fresh assignment.
// So an unkeyed spawn_worker call made again by a resumed manager, whose
// journaled child went down in the earlier process, spawns a new worker
// under a new ordinal, and its reply claims no history: no resumed, no
// priorWorkerId, no priorReason. The journaled child stays down in the
// tree, and the new worker is the one that wins.
func TestUnkeyedSpawnOfFailedChildSpawnsFreshAcrossRestartBehaviour44(t *testing.T) {
	dir := t.TempDir()
	unkeyed := map[string]any{"profile": "writer", "task": "write alpha"}

	o := baseOptions(t, failingExecutor{}, nil)
	o.RunDir = dir
	var first map[string]any
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		first = tool(t, ctx, c, supervise.VerbSpawnWorker, unkeyed)
		tool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{"kinds": []string{"settled"}, "timeoutMs": 60000})
		return supervise.BrainReport{}, nil
	})
	var dead atomic.Bool
	crashing := supervise.WithSpawnLogWrapper(context.Background(), func(sl supervise.SpawnLog) supervise.SpawnLog {
		return crashAfterSettle{SpawnLog: sl, dead: &dead}
	})
	_, _ = supervise.Supervise(crashing, managerProfile(t, supervise.VerbSpawnWorker, supervise.VerbAwaitEvent), "t", o)
	if !dead.Load() {
		t.Fatal("the first process never journaled its settlement")
	}
	if first["workerId"] != "run1:s1" || first["assignment"] != "ordinal:0" {
		t.Fatalf("first spawn: %v, want run1:s1 under ordinal:0", first)
	}

	gate := &gateExecutor{release: make(chan struct{})}
	var again map[string]any
	o = baseOptions(t, gate, nil)
	o.RunDir, o.Resume = dir, true
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		again = tool(t, ctx, c, supervise.VerbSpawnWorker, unkeyed)
		close(gate.release)
		for {
			ev := tool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{"kinds": []string{"settled"}, "timeoutMs": 60000})
			if e, _ := ev["event"].(map[string]any); e == nil || e["workerId"] == again["workerId"] {
				break
			}
		}
		return supervise.BrainReport{}, nil
	})
	res, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker, supervise.VerbAwaitEvent), "t", o)
	if err != nil {
		t.Fatal(err)
	}
	if again["workerId"] == nil || again["workerId"] == "run1:s1" || again["assignment"] == "ordinal:0" {
		t.Errorf("unkeyed spawn again: %v, want a new worker under a new ordinal", again)
	}
	for _, field := range []string{"resumed", "priorWorkerId", "priorReason", "error"} {
		if v, ok := again[field]; ok {
			t.Errorf("unkeyed spawn again carries %s = %v; only a keyed spawn has a prior attempt", field, v)
		}
	}
	if res.Status != supervise.StatusWinner || res.Winner == nil || string(res.Winner.Node) != again["workerId"] {
		t.Errorf("result %s winner %+v, want the new worker %v to win", res.Status, res.Winner, again["workerId"])
	}
	states := map[supervise.NodeID]supervise.State{}
	for _, n := range res.Tree {
		states[n.ID] = n.State
	}
	if states["run1:s1"] != supervise.StateFailed {
		t.Errorf("journaled child run1:s1 is %q in the tree %v, want it still failed", states["run1:s1"], states)
	}
}

// journalRow is what these tests read of one spawn-journal record.
type journalRow struct {
	Kind   string `json:"kind"`
	Node   string `json:"node"`
	Reason string `json:"reason"`
}

// journalRows returns the records of dir's spawn journal, in order.
func journalRows(t *testing.T, dir string) []journalRow {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, supervise.SpawnJournalFile))
	if err != nil {
		t.Fatal(err)
	}
	var rows []journalRow
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var r journalRow
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("journal line %q: %v", line, err)
		}
		rows = append(rows, r)
	}
	return rows
}

// kindsIn returns the kinds of the records in dir's spawn journal, in
// order.
func kindsIn(t *testing.T, dir string) []string {
	t.Helper()
	var kinds []string
	for _, r := range journalRows(t, dir) {
		kinds = append(kinds, r.Kind)
	}
	return kinds
}

// §3.6 / behaviour 42 and 50, the first end decides: a run whose
// deadline ended its manager and that an operator then cancelled with
// CancelRun (the request applied while the run was still ending) ends
// no-winner budget-exhausted, not cancelled — the deadline is part of
// the budget and it came first. The journal holds the deadline before
// the run cancellation, so a process killed before its finished record
// resumes to the same end, without driving its manager again.
func TestDeadlineThenCancelRunEndsBudgetExhaustedAlsoOnResume(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	o := baseOptions(t, &gateExecutor{release: make(chan struct{})}, nil)
	o.RunDir = dir
	start := time.Now().Truncate(time.Millisecond)
	var clock atomic.Int64
	clock.Store(start.UnixMilli())
	o.Now = func() time.Time { return time.UnixMilli(clock.Load()) }
	o.Deadline = start.Add(50 * time.Millisecond)
	var ack *supervise.RunCancellation
	o.Brain = supervise.BrainFunc(func(bctx context.Context, _ *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		<-bctx.Done() // the deadline ends the manager's context
		clock.Store(o.Deadline.UnixMilli())
		if _, err := supervise.CancelRun(ctx, dir, "op-late", supervise.RunCancelOptions{Source: "operator", Reason: "too late"}); err != nil {
			t.Errorf("CancelRun: %v", err)
		}
		// Wait (bounded) for the run to take the request, so that both
		// ends are the run's before it decides.
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			a, err := supervise.ReadRunCancellation(ctx, dir)
			if err != nil {
				t.Errorf("ReadRunCancellation: %v", err)
				break
			}
			if a != nil {
				ack = a
				break
			}
		}
		return supervise.BrainReport{}, bctx.Err()
	})
	res, err := supervise.Supervise(ctx, managerProfile(t, supervise.VerbSpawnWorker), "t", o)
	if err != nil {
		t.Fatal(err)
	}
	if ack == nil {
		t.Fatal("the run never acknowledged the cancellation within 10s")
	}
	if res.Status != supervise.StatusNoWinner || res.Reason != supervise.ReasonBudgetExhausted || res.Cancellation != nil {
		t.Errorf("status %s reason %s cancellation %+v, want no-winner budget-exhausted with no cancellation (the deadline came first); ack %+v",
			res.Status, res.Reason, res.Cancellation, ack)
	}
	kinds := kindsIn(t, dir)
	t.Logf("ack effect %s; journal %v", ack.Effect, kinds)
	deadlineAt, cancelAt := slices.Index(kinds, supervise.KindDeadlinePassed), slices.Index(kinds, supervise.KindRunCancelRequested)
	if deadlineAt < 0 || cancelAt < 0 || deadlineAt > cancelAt {
		t.Fatalf("journal kinds %v: want deadline-passed before run-cancel-requested", kinds)
	}

	// The process dies right after it journaled the cancellation: its
	// finished record and everything after are lost.
	journaltest.KeepThrough(t, dir, supervise.KindRunCancelRequested, 1)
	o = baseOptions(t, &gateExecutor{release: make(chan struct{})}, nil)
	o.RunDir, o.Resume = dir, true
	o.Now = func() time.Time { return time.Now().Add(time.Hour) }
	o.Brain = supervise.BrainFunc(func(context.Context, *supervise.Coordinator, string) (supervise.BrainReport, error) {
		t.Error("the brain of a run past its deadline was driven")
		return supervise.BrainReport{}, nil
	})
	res, err = supervise.Supervise(ctx, managerProfile(t, supervise.VerbSpawnWorker), "t", o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != supervise.StatusNoWinner || res.Reason != supervise.ReasonBudgetExhausted || res.Cancellation != nil {
		t.Errorf("resumed: status %s reason %s cancellation %+v, want no-winner budget-exhausted", res.Status, res.Reason, res.Cancellation)
	}
}

// The reference's abort-reason rule: a cascaded abort carries the
// upstream reason, so a live worker cut by the run's end reads, in its
// result and its journaled settlement, why — never only the generic
// "context canceled" / "context deadline exceeded", which make a whole
// class of child deaths undiagnosable from the journal alone. Each way
// a run can end while its one worker is live: the caller's context
// cancelled with a cause (the cause), without one (the caller named),
// the run's deadline (the deadline named), CancelRun (its operation),
// and the manager returning.
func TestCascadedCancelCarriesTheUpstreamReason(t *testing.T) {
	cases := []struct {
		how       string
		want      string // the reason contains it
		notExact  string // the reason is not exactly it
		deadline  bool
		cancelRun bool
	}{
		{how: "caller cancels with a cause", want: "operator pulled the plug"},
		{how: "caller cancels without a cause", want: "caller", notExact: context.Canceled.Error()},
		{how: "deadline", want: "deadline", notExact: context.DeadlineExceeded.Error(), deadline: true},
		{how: "CancelRun", want: "op-x", cancelRun: true},
		{how: "manager returns", want: "the manager returned"},
	}
	for _, tc := range cases {
		t.Run(tc.how, func(t *testing.T) {
			dir := t.TempDir()
			o := baseOptions(t, &gateExecutor{release: make(chan struct{})}, nil)
			o.RunDir = dir
			if tc.deadline {
				// Long enough for the spawn to land first on a slow machine.
				o.Deadline = time.Now().Add(time.Second)
			}
			ctx, cancel := context.WithCancelCause(context.Background())
			defer cancel(nil)
			o.Brain = supervise.BrainFunc(func(bctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
				if _, err := c.Spawn(bctx, supervise.SpawnArgs{Profile: "writer", Task: "long", Label: "long"}); err != nil {
					return supervise.BrainReport{}, err
				}
				switch {
				case strings.HasPrefix(tc.how, "caller cancels with"):
					cancel(errors.New("operator pulled the plug"))
				case strings.HasPrefix(tc.how, "caller cancels without"):
					cancel(nil)
				case tc.cancelRun:
					if _, err := supervise.CancelRun(context.Background(), dir, "op-x", supervise.RunCancelOptions{Source: "operator"}); err != nil {
						return supervise.BrainReport{}, err
					}
				case tc.how == "manager returns":
					return supervise.BrainReport{}, nil
				}
				<-bctx.Done()
				return supervise.BrainReport{}, context.Cause(bctx)
			})
			res, err := supervise.Supervise(ctx, managerProfile(t, supervise.VerbSpawnWorker), "t", o)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Tree) != 1 || res.Tree[0].State != supervise.StateCancelled {
				t.Fatalf("tree %+v, want the one worker cancelled", res.Tree)
			}
			reason := res.Tree[0].Reason
			if !strings.Contains(reason, tc.want) || (tc.notExact != "" && reason == tc.notExact) {
				t.Errorf("the worker's reason is %q, want it to say %q", reason, tc.want)
			}
			var journaled string
			for _, r := range journalRows(t, dir) {
				if r.Kind == supervise.KindSettled && r.Node == string(res.Tree[0].ID) {
					journaled = r.Reason
				}
			}
			if !strings.Contains(journaled, tc.want) || (tc.notExact != "" && journaled == tc.notExact) {
				t.Errorf("the worker's journaled settlement reason is %q, want it to say %q", journaled, tc.want)
			}
		})
	}
}

// §3.6 "Supervisor run layout", the reference's root-stream rule: a
// process that died mid-line leaves a torn tail in root-stream.jsonl;
// the next process of the run (a resume) drops it once and appends
// whole lines after the committed ones, so none of its own lines is
// glued onto the torn bytes and lost, and the file is again exactly
// its committed lines.
func TestResumedRootStreamDropsATornTailOnce(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	calls := func(n int) supervise.Brain {
		return supervise.BrainFunc(func(bctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
			for range n {
				tool(t, bctx, c, supervise.VerbAwaitEvent, map[string]any{"timeoutMs": 1})
			}
			return supervise.BrainReport{}, nil
		})
	}
	o := baseOptions(t, &gateExecutor{release: make(chan struct{})}, nil)
	o.RunDir, o.Brain = dir, calls(2)
	if _, err := supervise.Supervise(ctx, managerProfile(t, supervise.VerbSpawnWorker, supervise.VerbAwaitEvent), "t", o); err != nil {
		t.Fatal(err)
	}
	first, bad, err := supervise.ReadRootStream(ctx, dir)
	if err != nil || bad != 0 {
		t.Fatalf("first process's root stream: %d bad lines, %v", bad, err)
	}
	countCalls := func(recs []supervise.StreamRecord) int {
		n := 0
		for _, r := range recs {
			if r.Kind == supervise.StreamToolStarted {
				n++
			}
		}
		return n
	}
	if n := countCalls(first); n != 2 {
		t.Fatalf("first process streamed %d verb calls, want 2", n)
	}
	// The process died mid-write: half a line, no newline.
	path := filepath.Join(dir, supervise.RootStreamFile)
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(`{"kind":"tool-started","atMs":99,"tool":"torn`); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}

	o = baseOptions(t, &gateExecutor{release: make(chan struct{})}, nil)
	o.RunDir, o.Resume, o.Brain = dir, true, calls(3)
	if _, err := supervise.Supervise(ctx, managerProfile(t, supervise.VerbSpawnWorker, supervise.VerbAwaitEvent), "t", o); err != nil {
		t.Fatal(err)
	}
	all, bad, err := supervise.ReadRootStream(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if n := countCalls(all); bad != 0 || n != 5 {
		t.Errorf("after the resume: %d verb calls and %d bad lines, want 5 (2 + 3) and none", n, bad)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), `"torn`) || !strings.HasSuffix(string(data), "\n") {
		t.Errorf("the root stream still holds the torn bytes or ends mid-line:\n%s", data)
	}
}

// The per-worker ceiling is checked on a new run however it is started:
// with Resume set and no journal to resume (as a delegation queue starts
// every run), too.
func TestPerWorkerCeilingCheckedOnAResumeThatFindsNoJournal(t *testing.T) {
	o := baseOptions(t, &gateExecutor{release: make(chan struct{})}, nil)
	o.RunDir, o.Resume = t.TempDir(), true
	o.Brain = supervise.BrainFunc(func(context.Context, *supervise.Coordinator, string) (supervise.BrainReport, error) {
		t.Error("the brain of a refused run was driven")
		return supervise.BrainReport{}, nil
	})
	o.Budget = ledger.Budget{Tokens: i64(1_000), Iterations: i64(10)}
	o.PerWorker = ledger.Budget{Tokens: i64(2_000), Iterations: i64(1)}
	_, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o)
	var got *supervise.PerWorkerExceedsBudgetError
	if !errors.As(err, &got) || got.Field != "PerWorker.Tokens" {
		t.Fatalf("err = %v, want a *PerWorkerExceedsBudgetError on PerWorker.Tokens", err)
	}
}
