package graph_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/graph"
	"github.com/agentrt/agentrt/internal/journaltest"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/supervise"
)

// destExec runs the reviewer as an inbox worker (live until a steer
// arrives, then done with it), everything else on inner; it counts
// executions and the findings delivered into reviewers.
type destExec struct {
	countingExec
	inbox     inboxWorkers
	delivered atomic.Int64
}

func (e *destExec) Execute(ctx context.Context, w supervise.Work) (supervise.WorkResult, error) {
	if *w.Profile.Name == "reviewer" {
		e.mu.Lock()
		e.runs["reviewer"]++
		e.mu.Unlock()
		return e.inbox.Execute(ctx, w)
	}
	return e.countingExec.Execute(ctx, w)
}

func (e *destExec) Deliver(ctx context.Context, node supervise.NodeID, msg string) bool {
	ok := e.inbox.Deliver(ctx, node, msg)
	if ok && strings.Contains(msg, "nil check") {
		e.delivered.Add(1)
	}
	return ok
}

// destRun runs starGraph with the analyst node critic over the coder,
// its findings steered into the reviewer, in dir (resuming what it
// holds): the brain spawns the reviewer, then the coder, and awaits
// until idle, or stops when nothing happens for a while (a reviewer the
// restart left waiting for findings already routed).
func destRun(t *testing.T, dir string) (graph.GraphResult, *destExec, ledger.Readout, error) {
	g := withCritic(t, "reviewer")
	g.Budget.MicroUSD = nil
	g.Budget.Tokens, g.Budget.Iterations = i64(100_000), i64(40)
	g.Nodes[0].Profile = driverProfile(t, "driver", supervise.VerbSpawnWorker, supervise.VerbAwaitEvent, supervise.VerbSteerAgent)
	exec := &destExec{countingExec: countingExec{inner: kernelWorkers(t, killMatrixScript), runs: map[string]int{}}}
	o := options(t, exec, nil)
	o.Supervise.Router, o.Supervise.RunDir, o.Supervise.Resume = nil, dir, true
	o.Supervise.PerWorker.MicroUSD = nil
	var readout ledger.Readout
	o.Brain = graph.BrainFunc(func(ctx context.Context, d *graph.Driver, _ string) (supervise.BrainReport, error) {
		for _, s := range []struct{ node, task string }{{"reviewer", "Review the login patch."}, {"coder", "Fix test_login."}} {
			if _, err := d.Spawn(ctx, supervise.SpawnArgs{Profile: s.node, Task: s.task}); err != nil {
				return supervise.BrainReport{}, err
			}
		}
		for range 10 {
			ev, err := d.Await(ctx, supervise.AwaitArgs{TimeoutMS: 3000})
			if err != nil {
				return supervise.BrainReport{}, err
			}
			if ev.Idle || ev.Pending {
				break
			}
		}
		readout = d.Readout()
		return supervise.BrainReport{}, nil
	})
	res, err := graph.RunGraph(context.Background(), g, o)
	return res, exec, readout, err
}

// GA18 §3.7 analyzes{to: a worker node}, live and resumed from every
// journal cut (checklist FD-07, behaviours 46, 36): the analyst node's
// findings are steered into the reviewer's live worker at most once
// across the kill (none again when the journal holds the routed row,
// and never twice into one process); one analyzes row per coder
// settle, the ledger the journal's, the critic run at most once, the
// pool conserved.
func TestGA18FindingsIntoAWorkerAtEveryCut(t *testing.T) {
	check := func(where, dir string, res graph.GraphResult, exec *destExec, readout ledger.Readout, err error, criticBefore int, routedBefore bool) {
		t.Helper()
		if err != nil {
			t.Errorf("%s: %v", where, err)
			return
		}
		rows := rowsOfKind(res.Ledger, graph.Analyzes)
		coderDone := false
		for _, n := range res.Result.Tree {
			coderDone = coderDone || (n.Profile == "coder" && n.State == supervise.StateDone)
		}
		if coderDone && len(rows) != 1 {
			t.Errorf("%s: analyzes rows %+v, want one", where, rows)
		}
		if diff := cmp.Diff(journaledEdgeRows(t, dir), res.Ledger); diff != "" {
			t.Errorf("%s: ledger vs journal (-journal +ledger):\n%s", where, diff)
		}
		if n := exec.count("critic"); n+criticBefore > 1 {
			t.Errorf("%s: critic ran %d times with %d spawns before the cut", where, n, criticBefore)
		}
		if n := exec.delivered.Load(); n > 1 || (routedBefore && n != 0) {
			t.Errorf("%s: findings delivered %d times in this process (routed before the cut: %v)", where, n, routedBefore)
		}
		delivered := 0
		for _, r := range rows {
			if r.Outcome == graph.OutcomeDelivered {
				delivered++
			}
		}
		if int64(delivered) < exec.delivered.Load() {
			t.Errorf("%s: %d deliveries in this process, %d delivered rows: %+v", where, exec.delivered.Load(), delivered, rows)
		}
		if err := readout.Conserved(); err != nil || len(readout.Channels) == 0 {
			t.Errorf("%s: the pool: %v %+v", where, err, readout)
		}
	}
	refDir := t.TempDir()
	res, exec, readout, err := destRun(t, refDir)
	check("live", refDir, res, exec, readout, err, 0, false)
	if exec.delivered.Load() != 1 {
		t.Fatalf("live: findings delivered %d times, want 1: %+v", exec.delivered.Load(), res.Ledger)
	}
	total := journaltest.KeepRecords(t, refDir, 1<<30)
	for k := range total + 1 {
		dir := filepath.Join(t.TempDir(), fmt.Sprint(k))
		journaltest.CopyRunDir(t, refDir, dir)
		journaltest.KeepRecords(t, dir, k)
		before := analystWorkers(t, dir, "critic")
		routed := false
		for _, r := range journaledEdgeRows(t, dir) {
			routed = routed || (r.Kind == graph.Analyzes && r.Outcome == graph.OutcomeDelivered)
		}
		res, exec, readout, err := destRun(t, dir)
		check(fmt.Sprintf("cut after %d records", k), dir, res, exec, readout, err, before, routed)
	}
}
