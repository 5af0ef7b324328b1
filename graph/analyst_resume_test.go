package graph_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/graph"
	"github.com/agentrt/agentrt/supervise"
)

// cutAnalysis rewrites the journal at path as a process killed while the
// first worker of analyst node analyst ran left it: its spawn record is
// kept; its later records, every analyzes edge row and the run's end are
// gone.
func cutAnalysis(t *testing.T, path, analyst string) {
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
			Data                struct{ Edge string }
		}
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatalf("a journal line does not decode: %v", err)
		}
		switch {
		case rec.Kind == supervise.KindSpawned && rec.Profile == analyst && worker == "":
			worker = rec.Node
		case rec.Kind == supervise.KindFinished,
			rec.Kind == supervise.KindEdge && strings.HasPrefix(rec.Data.Edge, "analyzes:"),
			worker != "" && rec.Node == worker:
			continue
		}
		out.Write(sc.Bytes())
		out.WriteByte('\n')
	}
	if worker == "" {
		t.Fatalf("no spawn of %s in %s", analyst, path)
	}
	if err := os.WriteFile(path, out.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
}

// §3.7 "the ledger never lies by omission", across a resume: an analyst
// node the dead process left running over the coder's settle is in
// doubt on resume (its outcome cannot be recovered, so it routes no
// findings). Its traversal, charged to the edge's cap at its spawn, is
// ledgered unpropagated, with the SOURCE worker it was analysing (the
// reference's workerId rule for driver-destined findings) and the
// reason; a second resume ledgers it no second time.
func TestResumedInDoubtAnalystNodeIsLedgered(t *testing.T) {
	g := withCritic(t, "driver")
	dir := t.TempDir()
	o := options(t, kernelWorkers(t, workerScript), nil)
	o.Supervise.Router, o.Supervise.RunDir, o.Supervise.Resume = nil, dir, true
	o.Brain = graph.BrainFunc(func(ctx context.Context, d *graph.Driver, _ string) (supervise.BrainReport, error) {
		if _, err := d.Spawn(ctx, supervise.SpawnArgs{Profile: "coder", Task: "Fix test_login."}); err != nil {
			return supervise.BrainReport{}, err
		}
		for range 2 {
			if _, err := d.Await(ctx, supervise.AwaitArgs{TimeoutMS: 30000}); err != nil {
				return supervise.BrainReport{}, err
			}
		}
		return supervise.BrainReport{}, nil
	})
	first, err := graph.RunGraph(context.Background(), g, o)
	if err != nil {
		t.Fatal(err)
	}
	unbroken := []ledgerRow{
		{"delegates:driver->coder", 1, graph.OutcomeDelivered, "g:s1"},
		{"analyzes:critic:coder->driver", 1, graph.OutcomeDelivered, "g:s1"},
	}
	if diff := cmp.Diff(unbroken, ledgerRows(first.Ledger)); diff != "" {
		t.Fatalf("the unbroken run's ledger (-want +got):\n%s", diff)
	}
	cutAnalysis(t, filepath.Join(dir, supervise.SpawnJournalFile), "critic")

	want := []ledgerRow{
		{"delegates:driver->coder", 1, graph.OutcomeDelivered, "g:s1"},
		{"analyzes:critic:coder->driver", 1, graph.OutcomeUnpropagated, "g:s1"},
	}
	for i := range 2 { // the second resume reads the first's row back
		o.Supervise.Executor = kernelWorkers(t, workerScript)
		res, err := graph.RunGraph(context.Background(), g, o)
		if err != nil {
			t.Fatalf("resume %d: %v", i+1, err)
		}
		if diff := cmp.Diff(want, ledgerRows(res.Ledger)); diff != "" {
			t.Errorf("resume %d's ledger (-want +got):\n%s", i+1, diff)
		}
		if r := res.Ledger[len(res.Ledger)-1]; !strings.Contains(r.Reason, "analyst worker g:s2 is in doubt") {
			t.Errorf("resume %d: the in-doubt row's reason %q does not name the analyst worker", i+1, r.Reason)
		}
	}
}
