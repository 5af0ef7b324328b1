package supervise_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/memory"
	"github.com/agentrt/agentrt/supervise"
)

// recordOptions are processOptions over a counting executor whose
// workers' kernel runs are recorded in st, the run recorded there too.
func recordOptions(t *testing.T, st store.Store, dir string) (supervise.Options, *countingExecutor) {
	t.Helper()
	exec := &countingExecutor{inner: &supervise.KernelExecutor{Provider: workerProvider(t), Store: st},
		calls: newCounting(t, workerProvider(t)).calls}
	o, err := processOptions(exec, dir)
	if err != nil {
		t.Fatal(err)
	}
	o.Brain, o.Store = pipeline("write alpha", "write beta"), st
	return o, exec
}

// A supervised run with a Store is recorded there once it ended: its
// record's result is the run's, every worker names the kernel run it
// ran as (which names the supervised run as the judge of its delivery),
// and the record decodes back to the same document.
func TestSupervisedRunIsRecorded(t *testing.T) {
	manager, err := processManager()
	if err != nil {
		t.Fatal(err)
	}
	st := memory.New(nil)
	o, _ := recordOptions(t, st, t.TempDir())
	res, err := supervise.Supervise(context.Background(), manager, "write the notes", o)
	if err != nil || res.Status != supervise.StatusWinner {
		t.Fatalf("run: %s %v", res.Status, err)
	}
	run, err := st.GetRun(context.Background(), "run1")
	if err != nil {
		t.Fatal(err)
	}
	if run.Kind != supervise.KindSupervise || run.Status != store.StatusCompleted {
		t.Errorf("the run's record is a %s run %s, want a completed %s", run.Kind, run.Status, supervise.KindSupervise)
	}
	rec, err := supervise.ReadRunRecord(context.Background(), st, "run1")
	if err != nil {
		t.Fatal(err)
	}
	if rec.Task != "write the notes" || rec.Manager.Name != "manager" || rec.Manager.ProfileDigest == "" {
		t.Errorf("record names task %q manager %+v", rec.Task, rec.Manager)
	}
	got := rec.Result()
	if got.Status != res.Status || got.Winner.Node != res.Winner.Node || !cmp.Equal(got.Spent, res.Spent) || len(got.Tree) != len(res.Tree) {
		t.Errorf("the record's result differs from the run's:\n%s", cmp.Diff(res, got))
	}
	for i, w := range rec.Workers {
		if w.ID != res.Tree[i].ID || w.Delivered != res.Tree[i].Delivered || w.Execution == "" {
			t.Errorf("recorded worker %d: %+v, want node %s delivered %v bound to an execution", i, w, res.Tree[i].ID, res.Tree[i].Delivered)
			continue
		}
		wr, err := kernel.ReadRun(context.Background(), st, w.Execution)
		if err != nil {
			t.Fatalf("worker %s's run %s: %v", w.ID, w.Execution, err)
		}
		if wr.Kind != supervise.WorkerRunKind || wr.Exact == nil || wr.Exact.JudgedBy != "supervise run run1, node "+string(w.ID) ||
			wr.Exact.Delivered != nil || wr.Exact.CheckError != "" {
			t.Errorf("worker %s's run %s: kind %s record %+v, want its delivery judged by the supervised run", w.ID, w.Execution, wr.Kind, wr.Exact)
		}
	}
	v, err := canonjson.ToValue(rec)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(canonjson.Marshal(run.Doc), canonjson.Marshal(v)); diff != "" {
		t.Errorf("the record does not decode back to its document:\n%s", diff)
	}
}

// A process killed after journaling its end but before recording the
// run (here: run without a Store) leaves it unrecorded; the resume that
// returns the journaled end records it — with no worker run again — and
// a further resume finds it recorded and leaves it.
func TestResumeToItsEndRecordsARunLeftUnrecorded(t *testing.T) {
	manager, err := processManager()
	if err != nil {
		t.Fatal(err)
	}
	st, dir := memory.New(nil), t.TempDir()
	o, _ := recordOptions(t, st, dir)
	o.Store = nil
	first, err := supervise.Supervise(context.Background(), manager, "write the notes", o)
	if err != nil || first.Status != supervise.StatusWinner {
		t.Fatalf("first: %s %v", first.Status, err)
	}
	if _, err := supervise.ReadRunRecord(context.Background(), st, "run1"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a run without a Store is recorded: %v", err)
	}
	for i := range 2 {
		o, exec := recordOptions(t, st, dir)
		o.ReturnEnded = true
		again, err := supervise.Supervise(context.Background(), manager, "write the notes", o)
		if err != nil || again.Status != supervise.StatusWinner {
			t.Fatalf("resume %d: %s %v", i+1, again.Status, err)
		}
		if n := exec.count("alpha") + exec.count("beta"); n != 0 {
			t.Errorf("resume %d ran %d workers again", i+1, n)
		}
		rec, err := supervise.ReadRunRecord(context.Background(), st, "run1")
		if err != nil {
			t.Fatalf("resume %d left the run unrecorded: %v", i+1, err)
		}
		if got := rec.Result(); got.Status != first.Status || got.Winner.Node != first.Winner.Node || !cmp.Equal(got.Spent, first.Spent) {
			t.Errorf("resume %d recorded %s %+v, the run ended %s %+v", i+1, got.Status, got.Spent, first.Status, first.Spent)
		}
	}
}

// A run its caller's context interrupted has not ended (a resume drives
// it on): it is not recorded.
func TestAnInterruptedRunIsNotRecorded(t *testing.T) {
	manager, err := processManager()
	if err != nil {
		t.Fatal(err)
	}
	st := memory.New(nil)
	o, _ := recordOptions(t, st, t.TempDir())
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	o.Brain = spawnAlphaThen(func(bctx context.Context) (supervise.BrainReport, error) {
		cancel(errProcessStopping)
		<-bctx.Done()
		return supervise.BrainReport{}, bctx.Err()
	})
	res, err := supervise.Supervise(ctx, manager, "t", o)
	if err != nil || res.Reason != supervise.ReasonAborted {
		t.Fatalf("run: %s %s %v, want aborted by its context", res.Status, res.Reason, err)
	}
	if _, err := supervise.ReadRunRecord(context.Background(), st, "run1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("an interrupted run was recorded: %v", err)
	}
}

// A store whose run id is another run's keeps that run: the result
// stands, and beside it ErrRunNotRecorded says the record is missing.
func TestARunIDTakenInTheStoreIsErrRunNotRecorded(t *testing.T) {
	manager, err := processManager()
	if err != nil {
		t.Fatal(err)
	}
	st := memory.New(nil)
	now := time.Now()
	if _, err := st.CreateRun(context.Background(), store.Run{ID: "run1", Kind: "execute", Status: store.StatusCompleted, CreatedAt: now, UpdatedAt: now}); err != nil {
		t.Fatal(err)
	}
	o, _ := recordOptions(t, st, t.TempDir())
	res, err := supervise.Supervise(context.Background(), manager, "t", o)
	if res.Status != supervise.StatusWinner || !errors.Is(err, supervise.ErrRunNotRecorded) {
		t.Fatalf("run: %s, err %v; want a winner beside ErrRunNotRecorded", res.Status, err)
	}
	if r, _ := st.GetRun(context.Background(), "run1"); r.Kind != "execute" {
		t.Errorf("the other run became a %s run", r.Kind)
	}
}

// FuzzDecodeRunRecord: a stored record of any shape decodes to a record
// or a typed error, never a panic; what decodes encodes back to a
// document that decodes the same.
func FuzzDecodeRunRecord(f *testing.F) {
	f.Add([]byte(`{"runId":"r","manager":{"profileDigest":"sha256:00"},"task":"t","outcome":{"status":"winner","winner":{"node":"r:s1","outRef":"sha256:aa"},"spent":{"tokens":1,"iterations":1,"microUsd":0,"tokensKnown":true,"iterationsKnown":true,"usdKnown":false},"driverInference":{"tokens":0,"iterations":0,"microUsd":0,"tokensKnown":true,"iterationsKnown":true,"usdKnown":true},"childWork":{"tokens":1,"iterations":1,"microUsd":0,"tokensKnown":true,"iterationsKnown":true,"usdKnown":false},"ms":5},"workers":[{"id":"r:s1","state":"done","delivered":true,"spent":{"tokens":1,"iterations":1,"microUsd":null},"execution":"worker-1"}]}`))
	f.Add([]byte(`{"runId":"r","manager":{"profileDigest":""},"task":"","outcome":{"status":"no-winner","reason":"cancelled"},"workers":[]}`))
	f.Add([]byte(`{"runId":"r","outcome":null,"workers":null}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := canonjson.Decode(data)
		if err != nil {
			return
		}
		rec, err := supervise.DecodeRunRecord(v)
		if err != nil {
			return
		}
		_ = rec.Result()
		back, err := canonjson.ToValue(rec)
		if err != nil {
			t.Fatalf("a decoded record does not encode: %v", err)
		}
		again, err := supervise.DecodeRunRecord(back)
		if err != nil {
			t.Fatalf("a re-encoded record does not decode: %v", err)
		}
		if diff := cmp.Diff(rec, again); diff != "" {
			t.Fatalf("the record changed through encoding:\n%s", diff)
		}
	})
}

// A record whose tree holds a worker that never settled (in doubt after
// a kill, its spend unknown: Spent nil) is written as any other and
// decodes back to the same record — `agentrt runs show` must be able to
// read the record of a run that ended with such a worker.
func TestARunRecordWithANeverSettledWorkerDecodes(t *testing.T) {
	tokens, iterations := int64(46), int64(1)
	outcome := &supervise.OutcomeRecord{Status: supervise.StatusNoWinner, Reason: supervise.ReasonAllChildrenDown}
	for _, tc := range []struct {
		name   string
		worker supervise.WorkerRecord
	}{
		{"settled", supervise.WorkerRecord{ID: "r:s1", State: supervise.StateDone, Delivered: true,
			Spent: &supervise.SpendRecord{Tokens: &tokens, Iterations: &iterations}, Execution: "worker-1"}},
		{"never settled", supervise.WorkerRecord{ID: "r:s2", State: supervise.StateRunning, InDoubt: true,
			Reason: "its kernel run is running", Execution: "worker-2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := supervise.RunRecord{RunID: "r", Manager: supervise.ManagerRecord{ProfileDigest: "sha256:00"}, Task: "t",
				Outcome: outcome, Workers: []supervise.WorkerRecord{tc.worker}}
			v, err := canonjson.ToValue(rec)
			if err != nil {
				t.Fatal(err)
			}
			got, err := supervise.DecodeRunRecord(v)
			if err != nil {
				t.Fatalf("the record %s does not decode: %v", canonjson.Marshal(v), err)
			}
			if diff := cmp.Diff(&rec, got); diff != "" {
				t.Errorf("the record changed through its document:\n%s", diff)
			}
		})
	}
}

// A run the caller stopped — a CancelRun request (cancelled) or its own
// signal (aborted: its context, RootHandle.Abort) — is stored cancelled,
// never failed (CHD-11, CAN-06); a run that ended on its own without a
// winner is failed; a winner is completed.
func TestRecordStatusKeepsTheCallersStopApartFromFailure(t *testing.T) {
	cases := []struct {
		o    supervise.OutcomeRecord
		want store.Status
	}{
		{supervise.OutcomeRecord{Status: supervise.StatusWinner}, store.StatusCompleted},
		{supervise.OutcomeRecord{Status: supervise.StatusNoWinner, Reason: supervise.ReasonCancelled}, store.StatusCancelled},
		{supervise.OutcomeRecord{Status: supervise.StatusNoWinner, Reason: supervise.ReasonAborted}, store.StatusCancelled},
		{supervise.OutcomeRecord{Status: supervise.StatusNoWinner, Reason: supervise.ReasonAllChildrenDown}, store.StatusFailed},
		{supervise.OutcomeRecord{Status: supervise.StatusNoWinner, Reason: supervise.ReasonBudgetExhausted}, store.StatusFailed},
	}
	for _, tc := range cases {
		if got := supervise.RecordStatus(&tc.o); got != tc.want {
			t.Errorf("RecordStatus(%s %s) = %s, want %s", tc.o.Status, tc.o.Reason, got, tc.want)
		}
	}
}
