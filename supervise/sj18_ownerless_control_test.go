package supervise_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/store/sqlite"
	"github.com/agentrt/agentrt/supervise"
)

// SJ18 check 3 (§3.6 "Cancellation", "Steering"; behaviours 48-50): the
// cross-process control layout is the run dir's files only — a store
// journal has no control channel of its own. A run journaled in SQLite
// with a run dir whose process died with a worker live (its journal took
// nothing after the spawn) gets, while no process holds it, a run
// cancellation, a worker cancellation and a root steer in its run dir.
// The next holder, resumed from the store with that run dir, answers
// each exactly once in the kernel.Effect vocabulary.
func TestSJ18OwnerlessControlRequestsAnsweredByTheStoreResume(t *testing.T) {
	dir := t.TempDir()
	dbPath := filepath.Join(t.TempDir(), "runs.db")
	st, err := sqlite.Open(context.Background(), dbPath, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	started := make(chan struct{}, 4)
	exec := supervise.ExecutorFunc(func(ctx context.Context, w supervise.Work) (supervise.WorkResult, error) {
		started <- struct{}{}
		<-ctx.Done()
		return supervise.WorkResult{Spent: zeroSpent()}, context.Cause(ctx)
	})
	o := baseOptions(t, exec, nil)
	o.RunDir, o.SpawnStore, o.SpawnLeaseTTL = dir, &cutStore{Store: st, kind: supervise.KindSpawned, after: 1}, kernel.MinLeaseTTL
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		if _, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "writer", Task: "hang", Label: "w", Key: "w1"}); err != nil {
			return supervise.BrainReport{}, err
		}
		select {
		case <-started:
		case <-time.After(waitLimit):
			return supervise.BrainReport{}, errors.New("the worker did not start")
		}
		return supervise.BrainReport{Text: "x"}, nil
	})
	if _, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o); !errors.Is(err, errCut) {
		t.Fatalf("the dying run: %v, want its journal's failure", err)
	}

	ctx := context.Background()
	if _, err := supervise.WriteWorkerSteer(ctx, dir, "run1", supervise.WorkerSteer{OperationID: "op-steer", Message: "focus"}); err != nil {
		t.Fatal(err)
	}
	wc, err := supervise.CancelWorker(ctx, dir, "w", "op-w", supervise.CancelOptions{Reason: "enough"})
	if err != nil {
		t.Fatal(err)
	}
	if wc.Effect != kernel.EffectUnknown {
		t.Errorf("a worker cancel while no process holds the run: %+v, want unknown", wc)
	}
	if _, err := supervise.CancelRun(ctx, dir, "op-run", supervise.RunCancelOptions{Reason: "stop"}); err != nil {
		t.Fatal(err)
	}

	o = baseOptions(t, exec, nil)
	o.RunDir, o.SpawnStore, o.SpawnLeaseTTL, o.Resume = dir, st, kernel.MinLeaseTTL, true
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		select {
		case <-ctx.Done():
			return supervise.BrainReport{}, context.Cause(ctx)
		case <-time.After(waitLimit):
			return supervise.BrainReport{}, errors.New("the ownerless run cancellation never reached the resumed run")
		}
	})
	res, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != supervise.StatusNoWinner || res.Reason != supervise.ReasonCancelled || res.Cancellation == nil || res.Cancellation.OperationID != "op-run" {
		t.Errorf("the resumed run: %s %s %+v; want cancelled by op-run", res.Status, res.Reason, res.Cancellation)
	}
	rc, err := supervise.ReadRunCancellation(ctx, dir)
	if err != nil || rc == nil || rc.OperationID != "op-run" || rc.Effect != kernel.EffectCancelled {
		t.Errorf("the run cancellation's acknowledgement: %+v (%v); want op-run cancelled", rc, err)
	}
	// The worker the dead process started is in doubt: its cancel is
	// unknown, never success (behaviour 49).
	wc, err = supervise.ReadWorkerCancellation(ctx, dir, "op-w")
	if err != nil || wc.Effect != kernel.EffectUnknown || wc.WorkerID != "run1:s1" || wc.ObservedAt == 0 {
		t.Errorf("the worker cancellation: %+v (%v); want unknown for the in-doubt run1:s1, resolved", wc, err)
	}
	// This brain reads no inbox: the root steer is answered, not
	// delivered, and answered once (behaviour 48's vocabulary).
	ack, err := supervise.ReadSteerAck(ctx, dir, "op-steer")
	if err != nil || ack == nil || ack.Effect == supervise.SteerDelivered || ack.Effect == supervise.SteerUnknown {
		t.Errorf("the root steer's acknowledgement: %+v (%v); want an answer other than delivered or unknown", ack, err)
	}
	acks, err := os.ReadDir(filepath.Join(dir, supervise.SteerAcksDir))
	if err != nil || len(acks) > 1 {
		t.Errorf("steer acknowledgements %v (%v); want at most the one", acks, err)
	}
	// Without a run dir a store-journaled run has no control channel:
	// the control calls refuse an empty run dir instead of writing into
	// the working directory.
	if _, err := supervise.CancelRun(ctx, "", "op-x", supervise.RunCancelOptions{}); !errors.Is(err, supervise.ErrNoRun) {
		t.Errorf("CancelRun with no run dir: %v, want ErrNoRun", err)
	}
	if _, err := supervise.CancelWorker(ctx, "", "w", "op-x", supervise.CancelOptions{}); !errors.Is(err, supervise.ErrNoRun) {
		t.Errorf("CancelWorker with no run dir: %v, want ErrNoRun", err)
	}
	if _, err := supervise.WriteWorkerSteer(ctx, "", "w", supervise.WorkerSteer{OperationID: "op-x", Message: "m"}); !errors.Is(err, supervise.ErrNoRun) {
		t.Errorf("WriteWorkerSteer with no run dir: %v, want ErrNoRun", err)
	}
}
