package graph_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/graph"
	"github.com/agentrt/agentrt/internal/journaltest"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/supervise"
)

// criticOutcomeExec runs the coder on inner; the critic fails outright
// (fail) or answers nothing (empty findings). It counts runs.
type criticOutcomeExec struct {
	countingExec
	fail bool
}

func (e *criticOutcomeExec) Execute(ctx context.Context, w supervise.Work) (supervise.WorkResult, error) {
	if *w.Profile.Name != "critic" {
		return e.countingExec.Execute(ctx, w)
	}
	e.mu.Lock()
	e.runs["critic"]++
	e.mu.Unlock()
	one, tokens := int64(1), int64(7)
	spent := ledger.Spend{Tokens: &tokens, Iterations: &one, MicroUSD: i64(0)}
	if e.fail {
		return supervise.WorkResult{Spent: spent}, errors.New("critic crashed")
	}
	return supervise.WorkResult{Text: "", Spent: spent}, nil
}

// criticOutcomeRun runs withCritic(driver) in dir, resuming what it
// holds: the brain spawns the coder and awaits until idle.
func criticOutcomeRun(t *testing.T, dir string, fail bool) (graph.GraphResult, *criticOutcomeExec, ledger.Readout, int, error) {
	g := withCritic(t, "driver")
	g.Budget.MicroUSD = nil
	g.Budget.Tokens, g.Budget.Iterations = i64(100_000), i64(40)
	exec := &criticOutcomeExec{countingExec: countingExec{inner: kernelWorkers(t, killMatrixScript), runs: map[string]int{}}, fail: fail}
	o := options(t, exec, nil)
	o.Supervise.Router, o.Supervise.RunDir, o.Supervise.Resume = nil, dir, true
	o.Supervise.PerWorker.MicroUSD = nil
	var readout ledger.Readout
	findings := 0
	o.Brain = graph.BrainFunc(func(ctx context.Context, d *graph.Driver, _ string) (supervise.BrainReport, error) {
		if _, err := d.Spawn(ctx, supervise.SpawnArgs{Profile: "coder", Task: "Fix test_login."}); err != nil {
			return supervise.BrainReport{}, err
		}
		for range 8 {
			ev, err := d.Await(ctx, supervise.AwaitArgs{TimeoutMS: 30000})
			if err != nil {
				return supervise.BrainReport{}, err
			}
			if ev.Event != nil && ev.Event.Kind == graph.EventFinding && ev.Event.Output != "" {
				findings++
			}
			if ev.Idle {
				readout = d.Readout()
				return supervise.BrainReport{}, nil
			}
		}
		return supervise.BrainReport{}, errors.New("never idle")
	})
	res, err := graph.RunGraph(context.Background(), g, o)
	return res, exec, readout, findings, err
}

// GA18 §3.7 an analyst NODE whose run fails outright, or that returns no
// findings (its output fails the graph's check by design: findings are
// never a deliverable), live and resumed from every journal cut
// (checklist FD-07, behaviours 41, 46, 36): its settle output is what
// the ledger reports — a failed analyst routes nothing and its charged
// traversal is one unpropagated row naming it; an empty one is one
// empty row — never delivered, never twice, never missing; the critic
// runs at most once over the settle; no finding with text reaches the
// root; the ledger is the journal's; the pool conserves.
func TestGA18FailedOrEmptyAnalystNodeAtEveryCut(t *testing.T) {
	for _, fail := range []bool{true, false} {
		t.Run(fmt.Sprint("fail=", fail), func(t *testing.T) {
			check := func(where, dir string, res graph.GraphResult, exec *criticOutcomeExec, readout ledger.Readout, findings int, err error, criticBefore int) {
				t.Helper()
				if err != nil {
					t.Errorf("%s: %v", where, err)
					return
				}
				rows := rowsOfKind(res.Ledger, graph.Analyzes)
				var coderDone bool
				for _, n := range res.Result.Tree {
					coderDone = coderDone || (n.Profile == "coder" && n.State == supervise.StateDone)
				}
				if coderDone && len(rows) != 1 {
					t.Errorf("%s: analyzes rows %+v, want one", where, rows)
				}
				for _, r := range rows {
					switch {
					case r.Outcome == graph.OutcomeDelivered:
						t.Errorf("%s: a %s analyst's row is delivered: %+v", where, map[bool]string{true: "failed", false: "empty"}[fail], r)
					case strings.Contains(r.Reason, "in doubt"):
					case fail && (r.Outcome != graph.OutcomeUnpropagated || !strings.Contains(r.Reason, "failed")):
						t.Errorf("%s: the failed analyst's row %+v, want unpropagated naming it failed", where, r)
					case !fail && r.Outcome != graph.OutcomeEmpty:
						t.Errorf("%s: the empty analyst's row %+v, want empty", where, r)
					}
				}
				if diff := cmp.Diff(journaledEdgeRows(t, dir), res.Ledger); diff != "" {
					t.Errorf("%s: ledger vs journal (-journal +ledger):\n%s", where, diff)
				}
				if n := exec.count("critic"); n+criticBefore > 1 || (coderDone && criticBefore == 0 && n != 1) {
					t.Errorf("%s: critic ran %d times with %d spawns before the cut", where, n, criticBefore)
				}
				if findings != 0 {
					t.Errorf("%s: %d findings with text reached the root", where, findings)
				}
				if err := readout.Conserved(); err != nil || len(readout.Channels) == 0 {
					t.Errorf("%s: the pool: %v %+v", where, err, readout)
				}
			}
			refDir := t.TempDir()
			res, exec, readout, findings, err := criticOutcomeRun(t, refDir, fail)
			check("live", refDir, res, exec, readout, findings, err, 0)
			total := journaltest.KeepRecords(t, refDir, 1<<30)
			for k := range total + 1 {
				dir := filepath.Join(t.TempDir(), fmt.Sprint(k))
				journaltest.CopyRunDir(t, refDir, dir)
				journaltest.KeepRecords(t, dir, k)
				before := analystWorkers(t, dir, "critic")
				res, exec, readout, findings, err := criticOutcomeRun(t, dir, fail)
				check(fmt.Sprintf("cut after %d records", k), dir, res, exec, readout, findings, err, before)
			}
		})
	}
}
