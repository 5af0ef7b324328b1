package graph_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentrt/agentrt/graph"
	"github.com/agentrt/agentrt/supervise"
)

// RES-03 (§3.7, behaviour 46) with a lens edge at its traversal cap: a
// process killed after the lens it started over the coder settled but
// before the coder's settle hook was journaled as returned (the lens
// runs on its own, so it can settle first) leaves both hooks open. The
// resume runs them in journal order, the coder's first: its lens run is
// journaled, and was charged at its spawn (restore counts it), so that
// very run must not make the edge's cap look reached and get a capped
// row beside the delivered row its findings get. One analyzes row per
// analyst worker, delivered.
func TestGraphResumedLensAtItsCapIsNotCappedBehaviour46(t *testing.T) {
	g := starGraph(t)
	g.Edges = append(g.Edges, graph.Edge{Kind: graph.Analyzes, Analyst: "failure-triage", Over: []string{"coder"}, To: "driver",
		Directive: "analyze/critic/v2", MaxTraversals: new(1)})
	g.Budget.MicroUSD = nil
	refDir := t.TempDir()
	ref, _, err := killMatrixRun(t, g, refDir, false)
	if err != nil || ref.Result.Winner == nil {
		t.Fatalf("reference run: %v, %+v", err, ref.Result)
	}
	journal, err := os.ReadFile(filepath.Join(refDir, supervise.SpawnJournalFile))
	if err != nil {
		t.Fatal(err)
	}
	// The cut: through the lens's settlement, without the coder's
	// after-settle record.
	var coder, lens string
	var cut [][]byte
	done := false
	for _, l := range bytes.SplitAfter(bytes.TrimSuffix(journal, []byte("\n")), []byte("\n")) {
		var rec struct{ Kind, Node, Profile string }
		if err := json.Unmarshal(l, &rec); err != nil {
			t.Fatal(err)
		}
		switch {
		case rec.Kind == supervise.KindSpawned && rec.Profile == "coder":
			coder = rec.Node
		case rec.Kind == supervise.KindSpawned && rec.Profile == "analyst-failure-triage":
			lens = rec.Node
		case rec.Kind == supervise.KindAfterSettle && rec.Node == coder:
			continue
		}
		cut = append(cut, l)
		if rec.Kind == supervise.KindSettled && rec.Node == lens && lens != "" {
			done = true
			break
		}
	}
	if !done {
		t.Fatalf("the reference journal has no settled lens run (coder %q, lens %q)", coder, lens)
	}
	dir := t.TempDir()
	if err := os.CopyFS(filepath.Join(dir, "blobs"), os.DirFS(filepath.Join(refDir, "blobs"))); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, supervise.SpawnJournalFile), bytes.Join(cut, nil), 0o600); err != nil {
		t.Fatal(err)
	}
	res, _, err := killMatrixRun(t, g, dir, false)
	if err != nil {
		t.Fatalf("resume: %v", err)
	}
	var analyzes []graph.LedgerRow
	for _, r := range res.Ledger {
		if r.Kind == graph.Analyzes {
			analyzes = append(analyzes, r)
		}
	}
	if len(analyzes) != 1 || analyzes[0].Outcome != graph.OutcomeDelivered {
		t.Errorf("analyzes rows %+v, want one, delivered (the lens run %s over %s)", analyzes, lens, coder)
	}
}

// RES-03 (§3.7, behaviour 46): every cut of a run whose lens edge has
// MaxTraversals 1 resumes with one analyzes row per analyst worker, as
// TestGraphResumesFromEveryJournalCutBehaviour46 checks at the default
// cap.
func TestGraphResumesEveryCutOfALensAtItsCapBehaviour46(t *testing.T) {
	g := starGraph(t)
	g.Edges = append(g.Edges, graph.Edge{Kind: graph.Analyzes, Analyst: "failure-triage", Over: []string{"coder"}, To: "driver",
		Directive: "analyze/critic/v2", MaxTraversals: new(1)})
	resumeEveryCut(t, g, "analyst-failure-triage", false)
}
