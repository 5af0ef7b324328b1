package graph_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/graph"
	"github.com/agentrt/agentrt/internal/journaltest"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/supervise"
)

// capErrorRun runs driver → coder (cap 1) with the analyst node critic
// over the coder (cap 1, findings to the driver) under a deliverable
// nothing passes, in dir, resuming what it holds: the brain spawns the
// coder twice (the second is past the cap), awaits until idle and
// reads the pool. No winner and a spent delegates cap: a
// *GraphEdgeCapError.
func capErrorRun(t *testing.T, dir string) (graph.GraphResult, *countingExec, ledger.Readout, error) {
	g := withCritic(t, "driver")
	g.Budget.MicroUSD = nil
	g.Budget.Tokens, g.Budget.Iterations = i64(100_000), i64(40)
	g.Edges[0].MaxTraversals = new(1)
	g.Edges[len(g.Edges)-1].MaxTraversals = new(1)
	g.Deliverable = supervise.Deliverable{Describe: "never", Check: func(context.Context, supervise.Output) (kernel.Verdict, error) {
		return kernel.Verdict{Passed: false, Reason: "never"}, nil
	}}
	exec := &countingExec{inner: kernelWorkers(t, killMatrixScript), runs: map[string]int{}}
	o := options(t, exec, nil)
	o.Supervise.Router, o.Supervise.RunDir, o.Supervise.Resume = nil, dir, true
	o.Supervise.PerWorker.MicroUSD = nil
	var readout ledger.Readout
	o.Brain = graph.BrainFunc(func(ctx context.Context, d *graph.Driver, _ string) (supervise.BrainReport, error) {
		for range 2 {
			_, err := d.Spawn(ctx, supervise.SpawnArgs{Profile: "coder", Task: "Fix test_login."})
			var vr *supervise.VerbRefusal
			if err != nil && (!errors.As(err, &vr) || vr.Code != "edge-cap-exhausted") {
				return supervise.BrainReport{}, err
			}
			for range 6 {
				ev, err := d.Await(ctx, supervise.AwaitArgs{TimeoutMS: 30000})
				if err != nil {
					return supervise.BrainReport{}, err
				}
				if ev.Idle {
					break
				}
			}
		}
		readout = d.Readout()
		return supervise.BrainReport{Text: "gave up"}, nil
	})
	res, err := graph.RunGraph(context.Background(), g, o)
	return res, exec, readout, err
}

// GA18 §3.7 GraphEdgeCapError, behaviour 53 third clause (checklist
// FD-07, behaviours 36, 46): live and resumed from every journal cut,
// the error carries the ledger the result returns, which is the
// journal's edge records in order; no (edge, traversal) twice; one
// delivered delegates row per coder worker and one analyzes row per
// coder settle; the critic runs at most once over a settle; the pool
// conserves.
func TestGA18CapErrorLedgerIsTheJournalAtEveryCut(t *testing.T) {
	refDir := t.TempDir()
	check := func(where, dir string, res graph.GraphResult, exec *countingExec, readout ledger.Readout, err error, criticBefore int) {
		t.Helper()
		var capErr *graph.GraphEdgeCapError
		if !errors.As(err, &capErr) {
			t.Errorf("%s: err %v, want a GraphEdgeCapError (%s %s)", where, err, res.Result.Status, res.Result.Reason)
			return
		}
		if diff := cmp.Diff(res.Ledger, capErr.Ledger); diff != "" {
			t.Errorf("%s: the cap error's ledger is not the result's (-result +error):\n%s", where, diff)
		}
		if diff := cmp.Diff(journaledEdgeRows(t, dir), res.Ledger); diff != "" {
			t.Errorf("%s: the ledger is not the journal's edge records (-journal +ledger):\n%s", where, diff)
		}
		if !contains(capErr.ExhaustedEdges, "delegates:driver->coder") {
			t.Errorf("%s: exhausted %v", where, capErr.ExhaustedEdges)
		}
		seen := map[string]bool{}
		delivered := map[supervise.NodeID]int{}
		analyzed := map[supervise.NodeID]int{}
		for _, r := range res.Ledger {
			k := fmt.Sprint(r.Edge, "#", r.Traversal)
			if seen[k] {
				t.Errorf("%s: %s twice: %+v", where, k, res.Ledger)
			}
			seen[k] = true
			switch {
			case r.Kind == graph.Delegates && r.Outcome == graph.OutcomeDelivered:
				delivered[r.WorkerID]++
			case r.Kind == graph.Analyzes:
				analyzed[r.WorkerID]++
			}
		}
		for _, n := range res.Result.Tree {
			if n.Profile != "coder" {
				continue
			}
			if delivered[n.ID] != 1 {
				t.Errorf("%s: coder %s has %d delivered rows: %+v", where, n.ID, delivered[n.ID], res.Ledger)
			}
			if n.State == supervise.StateDone && analyzed[n.ID] != 1 {
				t.Errorf("%s: coder %s settled with %d analyzes rows: %+v", where, n.ID, analyzed[n.ID], res.Ledger)
			}
		}
		if n := exec.count("critic"); n+criticBefore > 1 {
			t.Errorf("%s: critic ran %d times with %d spawns before the cut", where, n, criticBefore)
		}
		if err := readout.Conserved(); err != nil || len(readout.Channels) == 0 {
			t.Errorf("%s: the pool: %v %+v", where, err, readout)
		}
	}
	res, exec, readout, err := capErrorRun(t, refDir)
	check("live", refDir, res, exec, readout, err, 0)
	total := journaltest.KeepRecords(t, refDir, 1<<30)
	for k := range total + 1 {
		dir := filepath.Join(t.TempDir(), fmt.Sprint(k))
		journaltest.CopyRunDir(t, refDir, dir)
		journaltest.KeepRecords(t, dir, k)
		before := analystWorkers(t, dir, "critic")
		res, exec, readout, err := capErrorRun(t, dir)
		check(fmt.Sprintf("cut after %d records", k), dir, res, exec, readout, err, before)
	}
}
