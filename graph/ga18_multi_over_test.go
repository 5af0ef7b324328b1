package graph_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/graph"
	"github.com/agentrt/agentrt/internal/journaltest"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/supervise"
)

// multiOverGraph is starGraph with an analyst over BOTH worker nodes
// (coder+reviewer), its findings to the driver, its analyzes cap
// maxTraversals: the analyst node critic, or with lens the registry
// lens failure-triage.
func multiOverGraph(t *testing.T, maxTraversals int, lens bool) graph.Graph {
	g := starGraph(t)
	g.Budget.MicroUSD = nil // an in-doubt worker's unmeasured dollars would refuse the rest
	// In-doubt workers are charged their ceilings (behaviour 40): room
	// for the rest of the run after any cut.
	g.Budget.Tokens, g.Budget.Iterations = i64(100_000), i64(40)
	analyst := "failure-triage"
	if !lens {
		analyst = "critic"
		g.Nodes = append(g.Nodes, graph.Node{ID: "critic", Profile: workerProfile(t, "critic")})
	}
	g.Edges = append(g.Edges, graph.Edge{Kind: graph.Analyzes, Analyst: analyst, Over: []string{"coder", "reviewer"}, To: "driver",
		Directive: "analyze/critic/v2", MaxTraversals: new(maxTraversals)})
	return g
}

// multiOverSeen is what the caller's brain saw of one run.
type multiOverSeen struct {
	mu       sync.Mutex
	findings []supervise.Event
	readout  ledger.Readout
	ledger   []graph.LedgerRow
}

// multiOverRun runs multiOverGraph in dir (resuming what it holds): the
// brain spawns the coder, waits for its settle, spawns the reviewer and
// awaits until the run is idle, noting every finding and, at its end,
// the pool's readout.
func multiOverRun(t *testing.T, g graph.Graph, dir string) (graph.GraphResult, *countingExec, *multiOverSeen, error) {
	exec := &countingExec{inner: kernelWorkers(t, killMatrixScript), runs: map[string]int{}}
	o := options(t, exec, nil)
	o.Supervise.Router, o.Supervise.RunDir, o.Supervise.Resume = nil, dir, true
	o.Supervise.PerWorker.MicroUSD = nil
	seen := &multiOverSeen{}
	o.Brain = graph.BrainFunc(func(ctx context.Context, d *graph.Driver, _ string) (supervise.BrainReport, error) {
		coder, err := d.Spawn(ctx, supervise.SpawnArgs{Profile: "coder", Task: "Fix test_login."})
		if err != nil {
			return supervise.BrainReport{}, err
		}
		spawnedReviewer := false
		for range 12 {
			ev, err := d.Await(ctx, supervise.AwaitArgs{TimeoutMS: 30000})
			if err != nil {
				return supervise.BrainReport{}, err
			}
			if ev.Event != nil && ev.Event.Kind == graph.EventFinding {
				seen.mu.Lock()
				seen.findings = append(seen.findings, *ev.Event)
				seen.mu.Unlock()
			}
			if !spawnedReviewer && (ev.Idle || (ev.Event != nil && ev.Event.WorkerID == coder.WorkerID)) {
				spawnedReviewer = true
				if _, err := d.Spawn(ctx, supervise.SpawnArgs{Profile: "reviewer", Task: "Review the login patch."}); err != nil {
					return supervise.BrainReport{}, err
				}
				continue
			}
			if ev.Idle && spawnedReviewer {
				seen.mu.Lock()
				seen.readout, seen.ledger = d.Readout(), d.Ledger()
				seen.mu.Unlock()
				return supervise.BrainReport{}, nil
			}
		}
		return supervise.BrainReport{}, errors.New("the run never went idle")
	})
	res, err := graph.RunGraph(context.Background(), g, o)
	return res, exec, seen, err
}

// GA18 §3.7 analyzes{over: [coder, reviewer], maxTraversals} (checklist
// FD-07, behaviours 36, 46, 53) live and resumed from every journal cut:
// the analyst node runs on each settle of a node it is over, within the
// cap (the settle past it is ledgered unpropagated, never refused);
// across every cut the analyst never runs twice, its finding reaches the
// root once, the analyzes rows are exactly one per traversal (1..n, no
// duplicate), the result's ledger equals the journal's edge records in
// order, the cap stays exhausted and the pool conserves.
func TestGA18MultiOverAnalystEveryCut(t *testing.T) {
	for _, tc := range []struct {
		name string
		cap  int
		// delivered is how many settles the critic analyses (min(cap, 2)).
		delivered int
		lens      bool
	}{
		{name: "analyst node, cap zero", cap: 0, delivered: 0},
		{name: "lens, cap zero", cap: 0, delivered: 0, lens: true},
		{name: "analyst node, cap one past", cap: 1, delivered: 1},
		{name: "analyst node, cap exactly at", cap: 2, delivered: 2},
		{name: "lens, cap one past", cap: 1, delivered: 1, lens: true},
		{name: "lens, cap exactly at", cap: 2, delivered: 2, lens: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			analyst := "critic"
			if tc.lens {
				analyst = "analyst-failure-triage"
			}
			multiOverEveryCut(t, multiOverGraph(t, tc.cap, tc.lens), analyst, tc.cap, tc.delivered)
		})
	}
}

func multiOverEveryCut(t *testing.T, g graph.Graph, analyst string, maxTraversals, analysed int) {
	edge := g.Edges[len(g.Edges)-1].ID()
	refDir := t.TempDir()
	ref, refExec, refSeen, err := multiOverRun(t, g, refDir)
	if err != nil || ref.Result.Winner == nil {
		t.Fatalf("reference run: %v, %+v", err, ref.Result)
	}
	checkMultiOver(t, "live", g, edge, refDir, ref, refSeen, maxTraversals, analysed)
	if n := refExec.count(analyst); n != analysed {
		t.Errorf("live: %s ran %d times, want %d", analyst, n, analysed)
	}
	if len(refSeen.findings) != analysed {
		t.Errorf("live: the driver saw %d findings, want %d", len(refSeen.findings), analysed)
	}
	cutsDir := t.TempDir()
	journaltest.CopyRunDir(t, refDir, filepath.Join(cutsDir, "ref"))
	total := journaltest.KeepRecords(t, filepath.Join(cutsDir, "ref"), 1<<30)
	inDoubt := 0 // cuts whose resume held an in-doubt analyst
	defer func() {
		if inDoubt == 0 && analysed > 0 {
			t.Errorf("no cut left an analyst in doubt: the ceiling check never ran on one")
		}
	}()
	for k := range total + 1 {
		dir := filepath.Join(cutsDir, fmt.Sprint(k))
		journaltest.CopyRunDir(t, refDir, dir)
		journaltest.KeepRecords(t, dir, k)
		before := analystWorkers(t, dir, analyst)
		res, exec, seen, err := multiOverRun(t, g, dir)
		where := fmt.Sprintf("cut after %d records", k)
		if err != nil || res.Result.Winner == nil {
			t.Errorf("%s: %v, %+v", where, err, res.Result)
			continue
		}
		checkMultiOver(t, where, g, edge, dir, res, seen, maxTraversals, analysed)
		for _, n := range res.Result.Tree {
			if n.InDoubt && n.Profile == analyst {
				inDoubt++
			}
		}
		// An analyst spawned before the cut never runs again (settled:
		// replayed; unsettled: in doubt); the others run once.
		if n, want := exec.count(analyst), analysed-before; n != want {
			t.Errorf("%s: %s ran %d times on resume with %d analyst spawns before the cut, want %d", where, analyst, n, before, want)
		}
		delivered := 0
		for _, r := range res.Ledger {
			if r.Edge == edge && r.Outcome == graph.OutcomeDelivered {
				delivered++
			}
		}
		if len(seen.findings) > delivered {
			t.Errorf("%s: the driver saw %d findings, %d delivered rows: %+v", where, len(seen.findings), delivered, seen.findings)
		}
	}
}

// analystWorkers counts the spawns of analyst profile in dir's journal.
func analystWorkers(t *testing.T, dir, profile string) int {
	n := 0
	for _, rec := range journalRecords(t, dir) {
		if rec.Kind == supervise.KindSpawned && rec.Profile == profile {
			n++
		}
	}
	return n
}

func checkMultiOver(t *testing.T, where string, g graph.Graph, edge, dir string, res graph.GraphResult, seen *multiOverSeen, maxTraversals, analysed int) {
	t.Helper()
	var rows []graph.LedgerRow
	for _, r := range res.Ledger {
		if r.Edge == edge {
			rows = append(rows, r)
		}
	}
	if len(rows) != 2 {
		t.Errorf("%s: %d rows of %s, want one per settle of coder and reviewer: %+v", where, len(rows), edge, rows)
	}
	// Which settle's hook takes the last traversal is a race (the
	// coder's settle reaches the brain before its hook runs); how many
	// do is not.
	capReason := fmt.Sprintf("traversal-cap-exhausted (max %d)", maxTraversals)
	capped, sources := 0, map[supervise.NodeID]int{}
	for i, r := range rows {
		if r.Traversal != i+1 {
			t.Errorf("%s: row %d of %s has traversal %d: %+v", where, i, edge, r.Traversal, rows)
		}
		sources[r.WorkerID]++
		switch {
		case r.Reason == capReason && r.Outcome == graph.OutcomeUnpropagated:
			capped++
		case r.Outcome != graph.OutcomeDelivered && r.Outcome != graph.OutcomeUnpropagated:
			t.Errorf("%s: analysed settle %d is %s", where, i, r.Outcome)
		}
	}
	if capped != 2-analysed {
		t.Errorf("%s: %d settles ledgered past the cap of %d, want %d: %+v", where, capped, maxTraversals, 2-analysed, rows)
	}
	for src, n := range sources {
		if n != 1 {
			t.Errorf("%s: the settle of %s has %d rows of %s, want 1: %+v", where, src, n, edge, rows)
		}
	}
	if diff := cmp.Diff(journaledEdgeRows(t, dir), res.Ledger); diff != "" {
		t.Errorf("%s: the result's ledger is not the journal's edge records (-journal +result):\n%s", where, diff)
	}
	if got, want := contains(res.ExhaustedEdges, edge), maxTraversals < 2; got != want {
		t.Errorf("%s: exhausted edges %v, want %s listed: %v", where, res.ExhaustedEdges, edge, want)
	}
	if err := seen.readout.Conserved(); err != nil || len(seen.readout.Channels) == 0 {
		t.Errorf("%s: the pool at the brain's end: %v (%+v)", where, err, seen.readout)
	}
	chargedOnce(t, where, res, seen.readout)
	tot := g.Budget
	for ch, want := range map[string]int64{"tokens": *tot.Tokens, "iterations": *tot.Iterations} {
		if b := seen.readout.Channels[ch]; b.Total != want {
			t.Errorf("%s: channel %s total %d, want the graph budget's %d", where, ch, b.Total, want)
		}
	}
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// journalRecord is the part of a journal record these tests read.
type journalRecord struct {
	Kind, Node, Profile, Key string
}

// journalRecords reads dir's spawn journal.
func journalRecords(t *testing.T, dir string) []journalRecord {
	t.Helper()
	recs, _, err := supervise.ReadRunDir(context.Background(), dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	var out []journalRecord
	for _, r := range recs {
		out = append(out, journalRecord{Kind: r.Kind, Node: string(r.Node), Profile: r.Profile, Key: r.Key})
	}
	return out
}

// GA18 §3.7 "over-cap analyzes traversals are ledgered unpropagated"
// across a resume (checklist FD-07, behaviour 46): a process killed
// after the settle past the cap was ledgered but before its settlement
// hook was journaled as returned leaves the hook open; the resumed run
// runs it again, and the journal's row is that settle's traversal: no
// second capped row, the traversal count goes on from the journal.
func TestGA18OverCapRowNotLedgeredTwiceOnResume(t *testing.T) {
	for _, lens := range []bool{false, true} {
		t.Run(fmt.Sprint("lens=", lens), func(t *testing.T) {
			g := multiOverGraph(t, 1, lens)
			edge := g.Edges[len(g.Edges)-1].ID()
			refDir := t.TempDir()
			if _, _, _, err := multiOverRun(t, g, refDir); err != nil {
				t.Fatal(err)
			}
			recs, _, err := supervise.ReadRunDir(context.Background(), refDir)
			if err != nil {
				t.Fatal(err)
			}
			cut := -1
			for i, rec := range recs {
				if rec.Kind != supervise.KindEdge {
					continue
				}
				if reason, _ := rec.Data.Get("reason"); reason.Str() == "traversal-cap-exhausted (max 1)" {
					cut = i + 1
				}
			}
			if cut < 0 {
				t.Fatalf("the reference run ledgered no settle past the cap of %s", edge)
			}
			dir := t.TempDir()
			journaltest.CopyRunDir(t, refDir, dir)
			journaltest.KeepRecords(t, dir, cut)
			res, _, seen, err := multiOverRun(t, g, dir)
			if err != nil {
				t.Fatal(err)
			}
			checkMultiOver(t, "resumed after the capped row", g, edge, dir, res, seen, 1, 1)
		})
	}
}

// chargedOnce checks behaviour 40 over a resumed run's pool: the tokens
// committed at the brain's end (nothing live) are, node by node, what
// each settled node spent and each node without a settlement (in doubt
// after the restart) reserved — its ceiling, charged once.
func chargedOnce(t *testing.T, where string, res graph.GraphResult, readout ledger.Readout) {
	t.Helper()
	var want int64
	for _, n := range res.Result.Tree {
		switch {
		case n.Settlement != nil && n.Settlement.Spent.Tokens != nil:
			want += *n.Settlement.Spent.Tokens
		case n.Reserved.Tokens != nil:
			want += *n.Reserved.Tokens
		}
	}
	b := readout.Channels[ledger.ChannelTokens]
	if b.Committed+b.Reserved != want {
		t.Errorf("%s: tokens committed %d + reserved %d, want %d (each settled node's spend, each in-doubt node's ceiling once): %+v", where, b.Committed, b.Reserved, want, res.Result.Tree)
	}
}
