package graph_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agentrt/agentrt/graph"
	"github.com/agentrt/agentrt/internal/journaltest"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/supervise"
)

// gatedExec runs every worker on inner, counting executions by
// profile; a coder waits for gate first (its run is live until the
// brain opens it).
type gatedExec struct {
	countingExec
	gate chan struct{}
	once sync.Once
}

func (e *gatedExec) open() { e.once.Do(func() { close(e.gate) }) }

func (e *gatedExec) Execute(ctx context.Context, w supervise.Work) (supervise.WorkResult, error) {
	if *w.Profile.Name == "coder" {
		select {
		case <-e.gate:
		case <-ctx.Done():
			return supervise.WorkResult{}, context.Cause(ctx)
		}
	}
	return e.countingExec.Execute(ctx, w)
}

// auditLens is the lens the root defines at run time.
func auditLens() supervise.Lens {
	return supervise.Lens{ID: "patch-audit", Description: "Whether a patch is minimal.", Area: "review",
		Question: "Does the patch change more than the failing test needs?", Instructions: "Read the output; list every unrelated change.",
		ToolGroup: supervise.ToolGroupSingleTrace, Limits: &supervise.LensLimits{Iterations: new(2)}}
}

// defineSeen is what the brain of one defineRun saw.
type defineSeen struct {
	defined    supervise.DefineAnalystResult
	early      error // run_analyst while the coder may still be live
	earlyLive  bool  // the coder was live when early was asked
	late       supervise.RunAnalystResult
	lateErr    error
	findings   int
	readout    ledger.Readout
	unfinished error
}

// defineRun runs starGraph (root declaring define_analyst and
// run_analyst) in dir, resuming what it holds: the brain defines
// patch-audit, spawns the coder, asks run_analyst over it while it may
// be live, lets it finish, asks again once it settled, and awaits until
// idle.
func defineRun(t *testing.T, dir string) (graph.GraphResult, *gatedExec, *defineSeen, error) {
	g := starGraph(t)
	g.Budget.MicroUSD = nil
	g.Budget.Tokens, g.Budget.Iterations = i64(100_000), i64(40)
	g.Nodes[0].Profile = driverProfile(t, "driver", supervise.VerbSpawnWorker, supervise.VerbAwaitEvent, supervise.VerbRunAnalyst,
		supervise.VerbDefineAnalyst, supervise.VerbListAnalysts)
	exec := &gatedExec{countingExec: countingExec{inner: kernelWorkers(t, killMatrixScript), runs: map[string]int{}}, gate: make(chan struct{})}
	o := options(t, exec, nil)
	o.Supervise.Router, o.Supervise.RunDir, o.Supervise.Resume = nil, dir, true
	o.Supervise.PerWorker.MicroUSD = nil
	seen := &defineSeen{}
	o.Brain = graph.BrainFunc(func(ctx context.Context, d *graph.Driver, _ string) (supervise.BrainReport, error) {
		defer exec.open()
		var err error
		if seen.defined, err = d.DefineAnalyst(ctx, auditLens()); err != nil {
			return supervise.BrainReport{}, fmt.Errorf("define_analyst: %w", err)
		}
		coder, err := d.Spawn(ctx, supervise.SpawnArgs{Profile: "coder", Task: "Fix test_login."})
		if err != nil {
			return supervise.BrainReport{}, err
		}
		if o, err := d.Observe(coder.WorkerID); err == nil {
			seen.earlyLive = o.Status.Live()
		}
		_, seen.early = d.RunAnalyst(ctx, supervise.RunAnalystArgs{Kind: "patch-audit", WorkerID: coder.WorkerID})
		exec.open()
		asked := seen.early == nil
		for range 12 {
			ev, err := d.Await(ctx, supervise.AwaitArgs{TimeoutMS: 30000})
			if err != nil {
				return supervise.BrainReport{}, err
			}
			if ev.Event != nil && ev.Event.Kind == graph.EventFinding {
				seen.findings++
			}
			if !asked && (ev.Idle || (ev.Event != nil && ev.Event.WorkerID == coder.WorkerID)) {
				asked = true
				seen.late, seen.lateErr = d.RunAnalyst(ctx, supervise.RunAnalystArgs{Kind: "patch-audit", WorkerID: coder.WorkerID})
				continue
			}
			if ev.Idle {
				seen.readout = d.Readout()
				return supervise.BrainReport{}, nil
			}
		}
		seen.unfinished = errors.New("the run never went idle")
		return supervise.BrainReport{}, seen.unfinished
	})
	res, err := graph.RunGraph(context.Background(), g, o)
	return res, exec, seen, err
}

// GA18 §9 define_analyst / run_analyst through a graph root, live and
// resumed from every journal cut (checklist FD-07, behaviours 36, 44,
// 46): a lens the root defined at run time is journaled, so a resumed
// root defining it again is answered Replayed and the lens is still on
// the menu (run_analyst accepts it); run_analyst over a live worker is
// refused worker-not-settled, over a worker settled before the kill it
// is accepted after the resume; the lens runs at most once over the
// coder across the cut and the resume (a completed analysis is answered
// from the journal, an in-doubt one is refused, never re-run); at most
// one finding reaches the root; the pool conserves.
func TestGA18DefinedLensAcrossEveryCut(t *testing.T) {
	refDir := t.TempDir()
	ref, refExec, refSeen, err := defineRun(t, refDir)
	if err != nil || ref.Result.Winner == nil {
		t.Fatalf("reference run: %v, %+v", err, ref.Result)
	}
	var refusal *supervise.VerbRefusal
	if !refSeen.earlyLive || !errors.As(refSeen.early, &refusal) || refusal.Code != "worker-not-settled" {
		t.Errorf("live: run_analyst over the live coder (live %v): %v, want refused worker-not-settled", refSeen.earlyLive, refSeen.early)
	}
	if refSeen.lateErr != nil || refSeen.findings != 1 || refExec.count("analyst-patch-audit") != 1 {
		t.Errorf("live: run_analyst over the settled coder: %v; %d findings, %d lens runs, want 1 each", refSeen.lateErr, refSeen.findings, refExec.count("analyst-patch-audit"))
	}
	if err := refSeen.readout.Conserved(); err != nil {
		t.Errorf("live: %v", err)
	}
	total := journaltest.KeepRecords(t, refDir, 1<<30)
	for k := range total + 1 {
		dir := filepath.Join(t.TempDir(), fmt.Sprint(k))
		journaltest.CopyRunDir(t, refDir, dir)
		journaltest.KeepRecords(t, dir, k)
		recs := journalRecords(t, dir)
		definedBefore, lensBefore, spawnedBefore, coderSettled := false, false, false, false
		coderID := ""
		for _, r := range recs {
			switch {
			case r.Kind == supervise.KindAnalystDefined:
				definedBefore = true
			case r.Kind == supervise.KindSpawned && r.Profile == "analyst-patch-audit":
				lensBefore, spawnedBefore = true, true
			case r.Kind == supervise.KindAnalysisRequested:
				// The resumed run starts a requested analysis itself.
				lensBefore = true
			case r.Kind == supervise.KindSpawned && r.Profile == "coder":
				coderID = r.Node
			case r.Kind == supervise.KindSettled && r.Node == coderID && coderID != "":
				coderSettled = true
			}
		}
		where := fmt.Sprintf("cut after %d records", k)
		res, exec, seen, err := defineRun(t, dir)
		if err != nil || seen.unfinished != nil {
			t.Errorf("%s: %v %v", where, err, seen.unfinished)
			continue
		}
		if !seen.defined.Defined || seen.defined.Replayed != definedBefore {
			t.Errorf("%s: define_analyst again: %+v, want defined, replayed %v", where, seen.defined, definedBefore)
		}
		// A lens run the journal holds answers by behaviour 44: completed
		// (accepted, its findings replayed), live again (duplicate-key)
		// or in doubt; any other settled coder is analysed now.
		keyed := func(err error) bool {
			return errors.As(err, &refusal) && (refusal.Code == "duplicate-key" || refusal.Code == "in-doubt") ||
				strings.Contains(fmt.Sprint(err), "duplicate-key") || strings.Contains(fmt.Sprint(err), "in-doubt")
		}
		if coderSettled && seen.early != nil && !(lensBefore && keyed(seen.early)) {
			t.Errorf("%s: run_analyst over the coder settled before the kill: %v, want accepted", where, seen.early)
		}
		analysed := seen.early == nil || seen.lateErr == nil || lensBefore
		lensRuns := exec.count("analyst-patch-audit")
		switch {
		case spawnedBefore && lensRuns > 1, !spawnedBefore && lensBefore && lensRuns != 1:
			// A spawn journaled without its execution bound never
			// started: the resume runs it, once.
			t.Errorf("%s: the lens run journaled before the kill ran %d more times", where, lensRuns)
		case !lensBefore && analysed && lensRuns != 1:
			t.Errorf("%s: the lens ran %d times, want 1", where, lensRuns)
		}
		if !analysed && !keyed(seen.lateErr) {
			t.Errorf("%s: run_analyst refused: %v", where, seen.lateErr)
		}
		if seen.findings > 1 {
			t.Errorf("%s: %d findings reached the root", where, seen.findings)
		}
		if err := seen.readout.Conserved(); err != nil || len(seen.readout.Channels) == 0 {
			t.Errorf("%s: the pool: %v %+v", where, err, seen.readout)
		}
		if b := seen.readout.Channels[ledger.ChannelIterations]; b.Total != 40 {
			t.Errorf("%s: iterations total %d, want the graph budget's 40", where, b.Total)
		}
		_ = res
	}
}

// GA18 §9 define_analyst bounds exactly at, across a kill and resume
// (checklist FD-07, behaviour 46): a lens whose every text member and
// limit is exactly at its bound is accepted as given (nothing clamped),
// eight definitions fill the manager's quota, and after the run is
// killed and resumed the eight are still on the menu (defining one
// again is Replayed), the quota is still spent (a ninth is refused
// max-defined-analysts, not accepted as the first of a fresh eight),
// and run_analyst runs the 64-character lens over a worker settled
// before the kill.
func TestGA18DefinitionsAtTheirBoundsSurviveResume(t *testing.T) {
	long := func(n int) string { return strings.Repeat("x", n) }
	atBounds := supervise.Lens{ID: "a" + long(63), Description: long(supervise.MaxLensDescription), Area: long(supervise.MaxLensArea),
		Question: long(supervise.MaxLensQuestion), Instructions: long(supervise.MaxLensInstructions), ToolGroup: supervise.ToolGroupSingleTrace,
		Limits: &supervise.LensLimits{Iterations: new(2), LLMCalls: new(supervise.MaxLensLLMCalls), ToolCalls: new(supervise.MaxLensToolCalls),
			OutputChars: new(supervise.MaxLensOutput)}, MinimumEvidenceCitations: new(supervise.MaxLensCitations)}
	lens := func(i int) supervise.Lens {
		if i == 0 {
			return atBounds
		}
		l := auditLens()
		l.ID = fmt.Sprintf("lens-%d", i)
		return l
	}
	g := starGraph(t)
	g.Budget.MicroUSD = nil
	g.Budget.Tokens, g.Budget.Iterations = i64(100_000), i64(40)
	g.Nodes[0].Profile = driverProfile(t, "driver", supervise.VerbSpawnWorker, supervise.VerbAwaitEvent, supervise.VerbRunAnalyst,
		supervise.VerbDefineAnalyst, supervise.VerbListAnalysts)
	dir := t.TempDir()
	// resumedRun is what one run of the brain saw.
	type resumedRun struct {
		defs   []supervise.DefineAnalystResult
		ninth  error
		ran    supervise.RunAnalystResult
		ranErr error
		exec   *countingExec
	}
	run := func(resumed bool) resumedRun {
		var defs []supervise.DefineAnalystResult
		var ninth, ranErr error
		var ran supervise.RunAnalystResult
		exec := &countingExec{inner: kernelWorkers(t, killMatrixScript), runs: map[string]int{}}
		o := options(t, exec, nil)
		o.Supervise.Router, o.Supervise.RunDir, o.Supervise.Resume = nil, dir, true
		o.Supervise.PerWorker.MicroUSD = nil
		o.Brain = graph.BrainFunc(func(ctx context.Context, d *graph.Driver, _ string) (supervise.BrainReport, error) {
			for i := range supervise.MaxDefinedLenses {
				r, err := d.DefineAnalyst(ctx, lens(i))
				if err != nil {
					return supervise.BrainReport{}, fmt.Errorf("definition %d: %w", i, err)
				}
				defs = append(defs, r)
			}
			coder, err := d.Spawn(ctx, supervise.SpawnArgs{Profile: "coder", Task: "Fix test_login."})
			if err != nil {
				return supervise.BrainReport{}, err
			}
			if !resumed {
				// Killed once the coder settled: nothing after it is
				// journaled (the cut below).
				for range 4 {
					if ev, err := d.Await(ctx, supervise.AwaitArgs{TimeoutMS: 30000}); err != nil || ev.Idle {
						return supervise.BrainReport{}, err
					}
				}
				return supervise.BrainReport{}, nil
			}
			_, ninth = d.DefineAnalyst(ctx, lens(supervise.MaxDefinedLenses))
			ran, ranErr = d.RunAnalyst(ctx, supervise.RunAnalystArgs{Kind: atBounds.ID, WorkerID: coder.WorkerID})
			for range 4 {
				if ev, err := d.Await(ctx, supervise.AwaitArgs{TimeoutMS: 30000}); err != nil || ev.Idle {
					return supervise.BrainReport{}, err
				}
			}
			return supervise.BrainReport{}, nil
		})
		if _, err := graph.RunGraph(context.Background(), g, o); err != nil {
			t.Fatalf("run (resumed %v): %v", resumed, err)
		}
		return resumedRun{defs, ninth, ran, ranErr, exec}
	}
	defs := run(false).defs
	if l := defs[0].Limits; *l.LLMCalls != supervise.MaxLensLLMCalls || *l.ToolCalls != supervise.MaxLensToolCalls || *l.OutputChars != supervise.MaxLensOutput ||
		*defs[0].MinimumEvidenceCitations != supervise.MaxLensCitations || defs[len(defs)-1].DefinitionsLeft != 0 {
		t.Errorf("the definitions at their bounds: %+v (last %+v)", defs[0], defs[len(defs)-1])
	}
	// The kill: through the coder's settlement.
	recs := journalRecords(t, dir)
	coder, cut := "", 0
	for i, r := range recs {
		if r.Kind == supervise.KindSpawned && r.Profile == "coder" {
			coder = r.Node
		}
		if r.Kind == supervise.KindSettled && r.Node == coder {
			cut = i + 1
		}
	}
	if cut == 0 {
		t.Fatal("the coder never settled")
	}
	journaltest.KeepRecords(t, dir, cut)
	again := run(true)
	defs, ninth, ran, ranErr, exec := again.defs, again.ninth, again.ran, again.ranErr, again.exec
	for i, d := range defs {
		if !d.Defined || !d.Replayed {
			t.Errorf("resumed definition %d: %+v, want the journaled one replayed", i, d)
		}
	}
	var refusal *supervise.VerbRefusal
	if !errors.As(ninth, &refusal) || refusal.Code != "max-defined-analysts" {
		t.Errorf("a ninth definition after the resume: %v, want refused max-defined-analysts", ninth)
	}
	if ranErr != nil || ran.AnalystID == "" || exec.count("analyst-"+atBounds.ID) != 1 || exec.count("coder") != 0 {
		t.Errorf("run_analyst over the coder settled before the kill: %+v %v (lens runs %d, coder runs %d)", ran, ranErr,
			exec.count("analyst-"+atBounds.ID), exec.count("coder"))
	}
}
