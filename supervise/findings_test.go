package supervise_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/journal"
	"github.com/agentrt/agentrt/supervise"
)

// findings returns the finding records of dir's coordination log.
func findings(t *testing.T, dir string) []supervise.FindingRecord {
	t.Helper()
	recs, skipped, err := supervise.ReadCoordinationLog(context.Background(), dir)
	if err != nil || skipped != 0 {
		t.Fatalf("ReadCoordinationLog: %d skipped, %v", skipped, err)
	}
	var out []supervise.FindingRecord
	for _, r := range recs {
		if r.Kind == supervise.CoordFinding && r.Finding != nil {
			out = append(out, *r.Finding)
		}
	}
	return out
}

// rewriteJournal rewrites dir's spawn journal as a process that died at
// some point would have left it: the records keep accepts, then extra.
func rewriteJournal(t *testing.T, dir string, keep func(supervise.Record) bool, extra ...supervise.Record) {
	t.Helper()
	recs, _, err := supervise.ReadRunDir(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	recs = append(slices.DeleteFunc(recs, func(r supervise.Record) bool { return !keep(r) }), extra...)
	path := filepath.Join(dir, supervise.SpawnJournalFile)
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	j, err := journal.Open(path, journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	for _, r := range recs {
		v, err := canonjson.ToValue(r)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := j.Append(context.Background(), v); err != nil {
			t.Fatal(err)
		}
	}
}

// analyseAlpha is a brain that spawns the alpha writer, awaits it, runs
// lens over it and awaits the finding.
func analyseAlpha(t *testing.T, lens string) supervise.Brain {
	return supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		tool(t, ctx, c, supervise.VerbSpawnWorker, spawnArgs("alpha"))
		tool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{"timeoutMs": 60000, "kinds": []string{"settled"}})
		tool(t, ctx, c, supervise.VerbRunAnalyst, map[string]any{"kind": lens, "workerId": "run1:s1"})
		tool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{"timeoutMs": 60000, "kinds": []string{"finding"}})
		return supervise.BrainReport{}, nil
	})
}

// §3.6 "coordination-log.jsonl (questions, findings, …)": an analyst's
// settlement is appended to the coordination log as a finding — the
// lens, the analysed worker, the analyst, its output and blob — as
// evidence, never a deliverable.
func TestFindingsAppendedToCoordinationLog(t *testing.T) {
	dir := t.TempDir()
	o := baseOptions(t, analystExecutor(t), nil)
	o.RunDir, o.Brain = dir, analyseAlpha(t, "failure-triage")
	res, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o)
	if err != nil {
		t.Fatal(err)
	}
	got := findings(t, dir)
	want := []supervise.FindingRecord{{Outcome: supervise.FindingSettled, Lens: "failure-triage", Source: "run1:s1", Analyst: "run1:s2",
		State: supervise.StateDone, Findings: "finding: the note cites no source"}}
	if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(supervise.FindingRecord{}, "OutRef")); diff != "" {
		t.Errorf("findings (-want +got):\n%s", diff)
	}
	if len(got) == 1 && !strings.HasPrefix(got[0].OutRef, "sha256:") {
		t.Errorf("the finding's outRef %q is not its blob", got[0].OutRef)
	}
	for _, n := range res.Tree {
		if n.ID == "run1:s2" && n.Delivered {
			t.Error("an analyst's findings were delivered")
		}
	}
}

// An analysis the journal records as requested, from a process that died
// before its analyst's spawn was journaled, is not lost: the resumed run
// starts it (the analyst runs once, its finding reaches await_event and
// the coordination log). One it cannot start — its lens is no longer on
// the menu — is reported in the coordination log as not-run.
func TestRequestedAnalysisRunsOrIsReportedOnResume(t *testing.T) {
	dir := t.TempDir()
	o := baseOptions(t, analystExecutor(t), nil)
	o.RunDir, o.Brain = dir, analyseAlpha(t, "failure-triage")
	if _, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o); err != nil {
		t.Fatal(err)
	}
	// The process died right after journaling the request: no analyst
	// spawn, no settlement, no end. A second request names a lens the
	// resumed run does not offer.
	requested := false
	rewriteJournal(t, dir, func(r supervise.Record) bool {
		if r.Kind == supervise.KindAnalysisRequested {
			requested = true
		}
		_, _, analyst := supervise.ParseAnalystKey(r.Key)
		return !(r.Kind == supervise.KindSpawned && analyst) && !(r.Kind == supervise.KindSettled && r.Node == "run1:s2") &&
			r.Kind != supervise.KindFinished && r.Kind != supervise.KindAfterSettle
	}, supervise.Record{Kind: supervise.KindAnalysisRequested, Key: "analyst:retired-lens:run1:s1", Label: "retired-lens", Node: "run1:s1"})
	if !requested {
		t.Fatal("run_analyst journaled no analysis-requested record before its spawn")
	}
	if err := os.Remove(filepath.Join(dir, supervise.CoordinationLogFile)); err != nil {
		t.Fatal(err)
	}

	exec := analystExecutor(t)
	o = baseOptions(t, exec, nil)
	var event map[string]any
	o.RunDir, o.Resume = dir, true
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		event = tool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{"timeoutMs": 60000, "kinds": []string{"finding"}})
		return supervise.BrainReport{}, nil
	})
	if _, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o); err != nil {
		t.Fatal(err)
	}
	if n := exec.count("ANALYST LENS"); n != 1 {
		t.Errorf("the resumed run ran the requested analyst %d times, want 1", n)
	}
	if ev, _ := event["event"].(map[string]any); ev["kind"] != "finding" || ev["lens"] != "failure-triage" {
		t.Errorf("await_event = %v, want the resumed analysis's finding", event)
	}
	got := findings(t, dir)
	if len(got) != 2 {
		t.Fatalf("coordination log findings %+v, want the not-run report and the finding", got)
	}
	notRun, ran := got[0], got[1]
	if notRun.Outcome != supervise.FindingNotRun || notRun.Lens != "retired-lens" || !strings.Contains(notRun.Reason, "unknown-analyst") {
		t.Errorf("not-run report %+v", notRun)
	}
	if ran.Outcome != supervise.FindingSettled || ran.Lens != "failure-triage" || ran.Findings != "finding: the note cites no source" {
		t.Errorf("finding %+v", ran)
	}
}

// A settlement's hook (Options.AfterSettle, where a graph starts the
// lenses over a settle) that never returned — the process died between
// the settlement and the hook's end — runs again on resume, once, before
// the brain drives; a hook that returned is not run again.
func TestUnfinishedSettleHookRunsAgainOnResume(t *testing.T) {
	dir := t.TempDir()
	o := baseOptions(t, analystExecutor(t), nil)
	o.RunDir = dir
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		for _, w := range []string{"write alpha", "write beta"} {
			tool(t, ctx, c, supervise.VerbSpawnWorker, map[string]any{"profile": "writer", "task": w})
			tool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{"timeoutMs": 60000})
		}
		return supervise.BrainReport{}, nil
	})
	o.AfterSettle = func(context.Context, *supervise.Coordinator, supervise.Settled) {}
	if _, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o); err != nil {
		t.Fatal(err)
	}
	// The process died after alpha's hook returned and beta settled,
	// before beta's hook returned.
	rewriteJournal(t, dir, func(r supervise.Record) bool {
		return r.Kind != supervise.KindFinished && !(r.Kind == supervise.KindAfterSettle && r.Node == "run1:s2")
	})

	o = baseOptions(t, analystExecutor(t), nil)
	o.RunDir, o.Resume = dir, true
	var (
		mu    sync.Mutex
		calls []supervise.NodeID
		order []string
	)
	o.AfterSettle = func(_ context.Context, _ *supervise.Coordinator, s supervise.Settled) {
		mu.Lock()
		defer mu.Unlock()
		calls = append(calls, s.Node.ID)
		order = append(order, "hook")
	}
	o.Brain = supervise.BrainFunc(func(context.Context, *supervise.Coordinator, string) (supervise.BrainReport, error) {
		mu.Lock()
		defer mu.Unlock()
		order = append(order, "brain")
		return supervise.BrainReport{}, nil
	})
	if _, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]supervise.NodeID{"run1:s2"}, calls); diff != "" {
		t.Errorf("hooks run on resume (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"hook", "brain"}, order); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
	recs, _, err := supervise.ReadRunDir(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	var done []supervise.NodeID
	for _, r := range recs {
		if r.Kind == supervise.KindAfterSettle {
			done = append(done, r.Node)
		}
	}
	if diff := cmp.Diff([]supervise.NodeID{"run1:s1", "run1:s2"}, done); diff != "" {
		t.Errorf("after-settle records (-want +got):\n%s", diff)
	}
}
