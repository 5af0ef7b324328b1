package graph_test

// A second outside pass over §3.7 runGraph through the Go API: the
// ledger's fields row by row, the cap error's ledger against the
// journal's edge records, and define_analyst's §9 bounds under a graph.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/graph"
	"github.com/agentrt/agentrt/supervise"
)

// journaledEdgeRows reads the edge records of the run dir's journal as
// ledger rows, in journal order.
func journaledEdgeRows(t *testing.T, dir string) []graph.LedgerRow {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, supervise.SpawnJournalFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows []graph.LedgerRow
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var rec struct {
			Kind string          `json:"kind"`
			Data json.RawMessage `json:"data"`
		}
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatalf("journal line %q: %v", sc.Text(), err)
		}
		if rec.Kind != supervise.KindEdge {
			continue
		}
		var row graph.LedgerRow
		if err := json.Unmarshal(rec.Data, &row); err != nil {
			t.Fatalf("edge record %s: %v", rec.Data, err)
		}
		rows = append(rows, row)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return rows
}

// §3.7 ledger rows + behaviour 53: one run with a delivered spawn, a
// stripped steer (bytes = what was sent), an analyst node's findings to
// the driver (workerId = the SOURCE worker, bytes = directive +
// findings) and a cap refusal (continuity of the call, bytes 0); no
// winner, so GraphEdgeCapError, whose ledger is exactly what the run
// journaled as edge records, field for field and in order.
func TestOutside2CapErrorLedgerIsTheJournaledEdgesBehaviour53(t *testing.T) {
	ctx := context.Background()
	g := outsideGraph(t, 2, func(string) bool { return false })
	ex := newOutsideExec()
	ex.block["coder"] = true
	ex.text = func(w supervise.Work) string {
		if *w.Profile.Name == "critic" {
			return "finding: no nil check"
		}
		return "out of coder"
	}
	auth := func(_ context.Context, m graph.Message) (string, error) {
		return strings.ReplaceAll(m.Instruction, " SECRET", ""), nil
	}
	dir := t.TempDir()
	var coder supervise.NodeID
	var refusal error
	brain := graph.BrainFunc(func(ctx context.Context, d *graph.Driver, task string) (supervise.BrainReport, error) {
		s, err := d.Spawn(ctx, supervise.SpawnArgs{Profile: "coder", Task: "write it"})
		if err != nil {
			return supervise.BrainReport{}, err
		}
		coder = s.WorkerID
		if _, err := d.Steer(ctx, supervise.SteerArgs{WorkerID: s.WorkerID, Instruction: "use key SECRET"}); err != nil {
			t.Errorf("Steer: %v", err)
		}
		close(ex.release)
		outsideAwait(ctx, t, d, 2)
		_, refusal = d.Spawn(ctx, supervise.SpawnArgs{Profile: "coder", Task: "again"})
		return supervise.BrainReport{Text: "gave up"}, nil
	})
	_, err := graph.RunGraph(ctx, g, graph.Options{Task: "t", Brain: brain, AuthorizeMessage: auth,
		Supervise: supervise.Options{Executor: ex, RunDir: dir, RunID: "o2"}})
	if vr := (*supervise.VerbRefusal)(nil); !errors.As(refusal, &vr) || vr.Code != "edge-cap-exhausted" {
		t.Errorf("third traversal of a cap-2 edge: %v, want edge-cap-exhausted", refusal)
	}
	var capErr *graph.GraphEdgeCapError
	if !errors.As(err, &capErr) {
		t.Fatalf("RunGraph: %v, want *GraphEdgeCapError", err)
	}
	del := func(tr int, cont string, out graph.Outcome, bytes int, reason string, w supervise.NodeID) graph.LedgerRow {
		return graph.LedgerRow{Edge: "delegates:driver->coder", Kind: graph.Delegates, From: "driver", To: "coder", Directive: "delegate/v1",
			Traversal: tr, Outcome: out, Continuity: cont, Bytes: bytes, Reason: reason, WorkerID: w}
	}
	directive, _ := graph.BuiltinRegistry().Resolve("delegate/v1")
	critic, _ := graph.BuiltinRegistry().Resolve("analyze/v1")
	want := []graph.LedgerRow{
		del(1, graph.ContinuityFresh, graph.OutcomeDelivered, len(directive)+len("write it"), "", coder),
		del(2, graph.ContinuitySteer, graph.OutcomeStripped, len("use key"), "authorization narrowed 14 composed bytes", coder),
		{Edge: "analyzes:critic:coder->driver", Kind: graph.Analyzes, From: "coder", To: "driver", Directive: "analyze/v1", Traversal: 1,
			Outcome: graph.OutcomeDelivered, Continuity: graph.ContinuitySteer, Bytes: len(critic) + len("finding: no nil check"), WorkerID: coder},
		del(3, graph.ContinuityFresh, graph.OutcomeUnpropagated, 0, "traversal-cap-exhausted (max 2)", ""),
	}
	if diff := cmp.Diff(want, capErr.Ledger); diff != "" {
		t.Errorf("cap error ledger (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(capErr.Ledger, journaledEdgeRows(t, dir)); diff != "" {
		t.Errorf("journaled edge records differ from the cap error's ledger (-ledger +journal):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"delegates:driver->coder"}, capErr.ExhaustedEdges); diff != "" {
		t.Errorf("ExhaustedEdges (-want +got):\n%s", diff)
	}
}
