package graph_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/graph"
	"github.com/agentrt/agentrt/supervise"
)

// RES-03 with a delegates edge at its cap (§3.7 caps, behaviour 46 and
// 53): the restored cap counts the spawns the dead process made, and a
// replay-safe driver spawns them again on resume — those calls replay
// the journaled workers, they are no new traversals, and the cap must
// not refuse them. The run is cut after the edge's one traversal and the
// refusal of a second spawn; resumed, the driver's first spawn was
// refused edge-cap-exhausted (ledgered as a third, unpropagated row),
// the driver stopped and the reviewer never ran.
func TestGraphResumeReplaysTheSpawnsThatSpentACap(t *testing.T) {
	g := starGraph(t)
	g.Edges[0].MaxTraversals = new(1)
	g.Budget.MicroUSD = nil
	run := func(dir string) (graph.GraphResult, error) {
		o := options(t, kernelWorkers(t, killMatrixScript), nil)
		o.Supervise.Router, o.Supervise.RunDir, o.Supervise.Resume = nil, dir, true
		o.Supervise.PerWorker.MicroUSD = nil
		o.Brain = graph.BrainFunc(func(ctx context.Context, d *graph.Driver, _ string) (supervise.BrainReport, error) {
			if _, err := d.Spawn(ctx, supervise.SpawnArgs{Profile: "coder", Task: "Fix test_login."}); err != nil {
				return supervise.BrainReport{}, err
			}
			if _, err := d.Await(ctx, supervise.AwaitArgs{TimeoutMS: 30000}); err != nil {
				return supervise.BrainReport{}, err
			}
			// Over the cap: refused, and the driver goes on.
			if _, err := d.Spawn(ctx, supervise.SpawnArgs{Profile: "coder", Task: "Fix test_login again."}); err == nil {
				t.Errorf("a second spawn over the coder's cap of 1 was not refused")
			}
			if _, err := d.Spawn(ctx, supervise.SpawnArgs{Profile: "reviewer", Task: "Review the login patch."}); err != nil {
				return supervise.BrainReport{}, err
			}
			_, err := d.Await(ctx, supervise.AwaitArgs{TimeoutMS: 30000})
			return supervise.BrainReport{}, err
		})
		return graph.RunGraph(context.Background(), g, o)
	}
	ref := t.TempDir()
	want, err := run(ref)
	if err != nil {
		t.Fatalf("reference run: %v", err)
	}
	journal, err := os.ReadFile(filepath.Join(ref, supervise.SpawnJournalFile))
	if err != nil {
		t.Fatal(err)
	}
	var cut [][]byte
	for _, l := range bytes.SplitAfter(bytes.TrimSuffix(journal, []byte("\n")), []byte("\n")) {
		cut = append(cut, l)
		if strings.Contains(string(l), `"reason":"traversal-cap-exhausted (max 1)"`) {
			break
		}
	}
	dir := t.TempDir()
	if err := os.CopyFS(filepath.Join(dir, "blobs"), os.DirFS(filepath.Join(ref, "blobs"))); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, supervise.SpawnJournalFile), bytes.Join(cut, nil), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := run(dir)
	if err != nil {
		t.Fatalf("resume: %v", err)
	}
	// One row per traversal and per refusal, as the run that was not cut.
	if diff := cmp.Diff(ledgerRows(want.Ledger), ledgerRows(got.Ledger)); diff != "" {
		t.Errorf("resumed ledger (-uncut run +resumed):\n%s", diff)
	}
	if diff := cmp.Diff(want.ExhaustedEdges, got.ExhaustedEdges); diff != "" {
		t.Errorf("exhausted edges (-uncut run +resumed):\n%s", diff)
	}
}
