package graph_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/graph"
	"github.com/agentrt/agentrt/supervise"
)

// A process that dies after a worker's spawn was journaled and before
// the delegates edge's row for it was (the two are separate appends)
// leaves a traversal that happened — the task crossed with the spawn —
// and no row. The resumed run must ledger and charge it (the edge's cap
// counts it) rather than lose it: before, the resumed ledger had the
// reviewer's first traversal as the respawned g:s4, and the edge's cap
// was one traversal short. Found under -race, whose slowness widened the
// window in TestKilledGraphResumesWithoutRerunningSettledNodes.
func TestResumeLedgersASpawnWhoseEdgeRowWasLost(t *testing.T) {
	g, o, dir := passingResumeGraph(t)
	if _, err := graph.RunGraph(context.Background(), g, o); err != nil {
		t.Fatal(err)
	}
	// The journal as a process killed right after the reviewer's spawn
	// record landed left it.
	cutAfterSpawnOf(t, filepath.Join(dir, supervise.SpawnJournalFile), "reviewer")

	exec, err := newResumeExecutor(reviewPasses)
	if err != nil {
		t.Fatal(err)
	}
	o.Supervise.Executor = exec
	res, err := graph.RunGraph(context.Background(), g, o)
	if err != nil {
		t.Fatal(err)
	}
	got := ledgerRows(res.Ledger)
	want := []ledgerRow{
		{"delegates:driver->coder", 1, graph.OutcomeDelivered, "g:s1"},
		{"analyzes:failure-triage:coder->driver", 1, graph.OutcomeDelivered, "g:s1"},
		{"delegates:driver->reviewer", 1, graph.OutcomeDelivered, "g:s3"},
		{"delegates:driver->reviewer", 2, graph.OutcomeDelivered, "g:s4"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ledger across the restart (-want +got):\n%s", diff)
	}
	for _, r := range res.Ledger {
		if r.WorkerID == "g:s3" && (r.Bytes != len(reviewDirective)+len("Review the login patch.")) {
			t.Errorf("the restored row's bytes %d, want the directive and task it carried (%d)", r.Bytes, len(reviewDirective)+len("Review the login patch."))
		}
	}
}

// cutAfterSpawnOf rewrites the journal at path as a process killed
// right after the spawn record of the first worker of profile node left
// it: that worker's later records (its delegates row, its settlement)
// and the run's end are gone; every other record, whenever it was
// appended, is kept (the lens over the coder may journal after the
// reviewer's spawn, yet it settled before the brain spawned it).
func cutAfterSpawnOf(t *testing.T, path, node string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	var worker string
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var rec struct {
			Kind, Profile, Node string
			Data                struct{ WorkerID string }
		}
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatalf("a journal line does not decode: %v", err)
		}
		switch {
		case rec.Kind == supervise.KindSpawned && rec.Profile == node && worker == "":
			worker = rec.Node
		case rec.Kind == supervise.KindFinished:
			continue
		case worker != "" && (rec.Node == worker || rec.Data.WorkerID == worker):
			continue
		}
		out.Write(sc.Bytes())
		out.WriteByte('\n')
	}
	if worker == "" {
		t.Fatalf("no spawn of %s in %s", node, path)
	}
	if err := os.WriteFile(path, out.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
}
