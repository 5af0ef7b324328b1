package supervise_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/supervise"
)

// §3.6 "Supervisor run layout": a live run writes state.json and
// progress.ndjson beside its spawn journal. Each spawn, settlement,
// steer, cancellation and the finish make one progress line of the
// expected shape; state.json ends with the run's status, counts, budget
// and spend; and a reader polling state.json while the run changes state
// never sees a half-written file.
func TestRunLayoutFiles(t *testing.T) {
	ctx := context.Background()
	exec := newInboxExecutor()
	run := startLiveRun(t, exec, 0, "long")

	// A concurrent reader: every state it reads must decode.
	var reads, torn atomic.Int64
	var firstBad atomic.Value
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			_, err := supervise.ReadRunState(ctx, run.dir)
			reads.Add(1)
			if err != nil && !errors.Is(err, fs.ErrNotExist) {
				torn.Add(1)
				firstBad.CompareAndSwap(nil, err.Error())
			}
		}
	})

	// The state follows the journal (it is written off the spawn path).
	eventually(t, "state.json shows two spawned, one live", func() (bool, error) {
		st, err := supervise.ReadRunState(ctx, run.dir)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return false, err
		}
		if st.Status != "" && st.Status != supervise.RunStatusRunning {
			return false, fmt.Errorf("status %q while running", st.Status)
		}
		return st.Spawned == 2 && st.Live == 1, nil
	})

	if _, err := supervise.WriteWorkerSteer(ctx, run.dir, "long", supervise.WorkerSteer{OperationID: "op-s1", Message: "focus"}); err != nil {
		t.Fatal(err)
	}
	awaitSteer(t, run.dir, "op-s1")
	if _, err := supervise.CancelWorker(ctx, run.dir, "long", "op-c1", supervise.CancelOptions{Reason: "enough"}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the cancellation is observed", func() (bool, error) {
		r, err := supervise.ReadWorkerCancellation(ctx, run.dir, "op-c1")
		return r.Effect == kernel.EffectCancelled, err
	})
	res := run.finish(t)
	close(stop)
	wg.Wait()
	if n := torn.Load(); n > 0 {
		t.Errorf("%d of %d concurrent reads of state.json failed, first: %v", n, reads.Load(), firstBad.Load())
	}
	t.Logf("%d concurrent reads of state.json", reads.Load())

	progress, skipped, err := supervise.ReadProgress(ctx, run.dir)
	if err != nil || skipped != 0 {
		t.Fatalf("ReadProgress: skipped %d, %v", skipped, err)
	}
	byID := map[string]supervise.ProgressRecord{}
	for _, p := range progress {
		if p.AtMS <= 0 {
			t.Errorf("progress %+v has no time", p)
		}
		byID[p.ID] = p
	}
	if last := progress[len(progress)-1]; last.Kind != supervise.ProgressFinish {
		t.Errorf("the last progress line is %+v, want the finish", last)
	}
	tests := []struct {
		name string
		want supervise.ProgressRecord
	}{
		{"spawn", supervise.ProgressRecord{ID: "spawn:run1:s1", Kind: supervise.ProgressSpawn, Node: "run1:s1", Label: "quick"}},
		{"settle done", supervise.ProgressRecord{ID: "settle:run1:s1", Kind: supervise.ProgressSettle, Node: "run1:s1", Label: "quick", State: supervise.StateDone}},
		{"second spawn", supervise.ProgressRecord{ID: "spawn:run1:s2", Kind: supervise.ProgressSpawn, Node: "run1:s2", Label: "long"}},
		{"steer claimed", supervise.ProgressRecord{ID: "steer:op-s1:unknown", Kind: supervise.ProgressSteer, Node: "run1:s2", OperationID: "op-s1", Effect: "unknown"}},
		{"steer delivered", supervise.ProgressRecord{ID: "steer:op-s1:delivered", Kind: supervise.ProgressSteer, Node: "run1:s2", OperationID: "op-s1", Effect: "delivered"}},
		{"cancel requested", supervise.ProgressRecord{ID: "cancel:op-c1:requested", Kind: supervise.ProgressCancel, Node: "run1:s2", OperationID: "op-c1", Effect: "requested"}},
		{"cancel observed", supervise.ProgressRecord{ID: "cancel:op-c1:cancelled", Kind: supervise.ProgressCancel, Node: "run1:s2", OperationID: "op-c1", Effect: "cancelled"}},
		{"settle cancelled", supervise.ProgressRecord{ID: "settle:run1:s2", Kind: supervise.ProgressSettle, Node: "run1:s2", Label: "long", State: supervise.StateCancelled}},
		{"finish", supervise.ProgressRecord{ID: "finish:run1", Kind: supervise.ProgressFinish, Outcome: string(res.Status), Reason: string(res.Reason)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := byID[tt.want.ID]
			if !ok {
				t.Fatalf("no progress line %q in %+v", tt.want.ID, progress)
			}
			if diff := cmp.Diff(tt.want, got, cmpopts.IgnoreFields(supervise.ProgressRecord{}, "AtMS", "Reason")); diff != "" {
				t.Errorf("progress (-want +got):\n%s", diff)
			}
		})
	}

	final, err := supervise.ReadRunState(ctx, run.dir)
	if err != nil {
		t.Fatal(err)
	}
	tokens, iterations, spentTokens, spentIterations := int64(10_000), int64(20), int64(20), int64(2)
	want := supervise.RunState{SchemaVersion: supervise.RunStateSchemaVersion, RunID: "run1", Status: string(res.Status),
		Reason: string(res.Reason), Spawned: 2, Live: 0,
		Settled: map[supervise.State]int64{supervise.StateDone: 1, supervise.StateCancelled: 1},
		Budget:  &supervise.BudgetRecord{Tokens: &tokens, Iterations: &iterations}}
	opts := cmp.Options{cmpopts.IgnoreFields(supervise.RunState{}, "StartedAtMS", "UpdatedAtMS", "Revision", "Reserved", "Spent")}
	if diff := cmp.Diff(want, final, opts); diff != "" {
		t.Errorf("final state (-want +got):\n%s", diff)
	}
	if final.Spent == nil || final.Spent.Tokens == nil || *final.Spent.Tokens != spentTokens ||
		final.Spent.Iterations == nil || *final.Spent.Iterations != spentIterations {
		t.Errorf("final spend %+v, want 20 tokens and 2 iterations", final.Spent)
	}
	if final.Revision < 1 || final.StartedAtMS == 0 || final.UpdatedAtMS < final.StartedAtMS {
		t.Errorf("final state %+v: no revision, or times out of order", final)
	}
}

// ReadRunState refuses what is not a whole, well-formed state with a
// typed error naming where; a missing file is fs.ErrNotExist.
func TestReadRunState(t *testing.T) {
	valid := `{"live":0,"revision":3,"runId":"r1","schemaVersion":1,"spawned":1,"status":"running","updatedAtMs":5}`
	tests := []struct {
		name        string
		data        string
		wantPointer string
		wantReason  string
	}{
		{name: "valid", data: valid},
		{name: "half written", data: valid[:40], wantPointer: "", wantReason: "not JSON"},
		{name: "unknown member", data: strings.Replace(valid, `"live":0`, `"live":0,"x":1`, 1), wantPointer: "", wantReason: "not a run state"},
		{name: "wrong type", data: strings.Replace(valid, `"spawned":1`, `"spawned":"one"`, 1), wantPointer: "/spawned", wantReason: "not a run state"},
		{name: "other schema", data: strings.Replace(valid, `"schemaVersion":1`, `"schemaVersion":2`, 1), wantPointer: "/schemaVersion"},
		{name: "no run id", data: strings.Replace(valid, `"runId":"r1"`, `"runId":""`, 1), wantPointer: "/runId"},
		{name: "more live than spawned", data: strings.Replace(valid, `"live":0`, `"live":2`, 1), wantPointer: "/live"},
		{name: "negative count", data: strings.Replace(valid, `"live":0`, `"live":0,"settled":{"done":-1}`, 1), wantPointer: "/settled/done"},
		{name: "too large", data: valid + strings.Repeat(" ", supervise.MaxStateBytes), wantReason: "larger than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, supervise.StateFile), []byte(tt.data), 0o600); err != nil {
				t.Fatal(err)
			}
			st, err := supervise.ReadRunState(context.Background(), dir)
			if tt.name == "valid" {
				if err != nil || st.RunID != "r1" || st.Revision != 3 {
					t.Fatalf("got %+v, %v", st, err)
				}
				return
			}
			var se *supervise.StateError
			if !errors.As(err, &se) {
				t.Fatalf("err %v, want *StateError", err)
			}
			if se.Pointer != tt.wantPointer && tt.wantPointer != "" {
				t.Errorf("pointer %q, want %q (%v)", se.Pointer, tt.wantPointer, err)
			}
			if !strings.Contains(se.Reason, tt.wantReason) {
				t.Errorf("reason %q, want it to say %q", se.Reason, tt.wantReason)
			}
		})
	}
	if _, err := supervise.ReadRunState(context.Background(), t.TempDir()); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("no state.json: %v, want fs.ErrNotExist", err)
	}
}

// ReadProgress: a torn tail is ignored, a corrupt line is skipped and
// counted without hiding later lines, and a line repeating an earlier
// line's id collapses to the first.
func TestReadProgress(t *testing.T) {
	spawn := `{"atMs":1,"id":"spawn:r:s1","kind":"spawn","label":"a","node":"r:s1"}`
	settle := `{"atMs":2,"id":"settle:r:s1","kind":"settle","node":"r:s1","state":"done"}`
	settleAgain := `{"atMs":3,"id":"settle:r:s1","kind":"settle","node":"r:s1","state":"failed"}`
	wantSpawn := supervise.ProgressRecord{ID: "spawn:r:s1", Kind: "spawn", AtMS: 1, Node: "r:s1", Label: "a"}
	wantSettle := supervise.ProgressRecord{ID: "settle:r:s1", Kind: "settle", AtMS: 2, Node: "r:s1", State: supervise.StateDone}
	tests := []struct {
		name        string
		data        string
		want        []supervise.ProgressRecord
		wantSkipped int
	}{
		{"torn tail", spawn + "\n" + settle[:20], []supervise.ProgressRecord{wantSpawn}, 0},
		{"corrupt middle", spawn + "\n{nope\n" + settle + "\n", []supervise.ProgressRecord{wantSpawn, wantSettle}, 1},
		{"not a progress record", spawn + "\n" + `{"kind":5}` + "\n" + settle + "\n", []supervise.ProgressRecord{wantSpawn, wantSettle}, 1},
		{"duplicate id keeps the first", spawn + "\n" + settle + "\n" + settleAgain + "\n", []supervise.ProgressRecord{wantSpawn, wantSettle}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, supervise.ProgressFile), []byte(tt.data), 0o600); err != nil {
				t.Fatal(err)
			}
			got, skipped, err := supervise.ReadProgress(context.Background(), dir)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("records (-want +got):\n%s", diff)
			}
			if skipped != tt.wantSkipped {
				t.Errorf("skipped %d, want %d", skipped, tt.wantSkipped)
			}
		})
	}
	if _, _, err := supervise.ReadProgress(context.Background(), t.TempDir()); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("no progress.ndjson: %v, want fs.ErrNotExist", err)
	}
}

// RunDirFor never names a directory outside the supervisor directory, nor
// the supervisor directory itself, whatever the run id (a library caller
// need not have checked it as Supervise and the CLI do).
func TestRunDirForStaysInTheSupervisorDirectory(t *testing.T) {
	root := t.TempDir()
	sup := filepath.Join(root, filepath.FromSlash(supervise.SupervisorDir))
	for _, id := range []string{"", ".", "..", "...", "../x", "a/../..", `..\..`, "a/b", "run-1"} {
		dir := supervise.RunDirFor(root, id)
		if filepath.Dir(dir) != sup {
			t.Errorf("RunDirFor(%q) = %q, want a directory directly under %q", id, dir, sup)
		}
	}
}
