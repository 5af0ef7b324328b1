package supervise

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/store"
)

// KindSupervise is the store run kind of a supervised run's record
// (Options.Store): a run created once the supervised run ended, its
// document a RunRecord, its status the run's end (RecordStatus).
const KindSupervise = "supervise"

// RunRecordMember is the member of a store spawn journal's run document
// (SpawnLogRunKind) that holds the run's RunRecord once it ended, when
// the record's store is the journal's (Options.Store is
// Options.SpawnStore): the run already has that id there.
const RunRecordMember = "record"

// ErrRunNotRecorded matches the error Supervise returns beside a result
// whose run record (Options.Store) could not be written. The result
// stands and its journal holds it; a resume to its end writes the record
// again.
var ErrRunNotRecorded = errors.New("supervise: the run's record could not be stored")

// RunRecord is what a store holds of a supervised run once it ended
// (Options.Store): the run as its result reports it, so that the store's
// runs reconcile with the result. The workers' kernel runs (kind
// WorkerRunKind) hold their own spend and name this run as the judge of
// their delivery (kernel.Record.JudgedBy); the manager's own inference
// is in no run of its own, only here (Outcome.DriverInference), so the
// workers' runs and this record's DriverInference add up to
// Outcome.Spent.
type RunRecord struct {
	RunID   string        `json:"runId"`
	Manager ManagerRecord `json:"manager"`
	Task    string        `json:"task"`
	// RunDir is the run's directory, "" for a run that kept none.
	RunDir  string         `json:"runDir,omitzero"`
	Outcome *OutcomeRecord `json:"outcome"`
	// Workers is every node of the tree, in seq order.
	Workers []WorkerRecord `json:"workers"`
}

// ManagerRecord names a supervised run's manager.
type ManagerRecord struct {
	Name          string `json:"name,omitzero"`
	ProfileDigest string `json:"profileDigest"`
}

// WorkerRecord is one node of a supervised run's tree as its RunRecord
// holds it.
type WorkerRecord struct {
	ID      NodeID `json:"id"`
	Parent  NodeID `json:"parent,omitzero"`
	Label   string `json:"label,omitzero"`
	Profile string `json:"profile,omitzero"`
	State   State  `json:"state"`
	// Delivered is the run's completion gate's decision.
	Delivered  bool            `json:"delivered"`
	Verdict    *kernel.Verdict `json:"verdict,omitzero"`
	Reason     string          `json:"reason,omitzero"`
	CheckError string          `json:"checkError,omitzero"`
	InDoubt    bool            `json:"inDoubt,omitzero"`
	Replayed   bool            `json:"replayed,omitzero"`
	// Spent is its settled spend, an unreported channel absent; nil
	// (absent from the document) when it never settled: charged at its
	// ceiling, Outcome.SpendGaps names it.
	Spent *SpendRecord `json:"spent,omitzero"`
	// Execution is the execution its executor bound it to: for a
	// KernelExecutor its first kernel run's id in the same store (a
	// steered worker's later turns are "<execution>.<n>"); "" when none
	// was bound.
	Execution string `json:"execution,omitzero"`
}

// RecordStatus is the store status of an ended run's record: completed
// for a winner, cancelled for a cancelled run, failed for every other
// no-winner end.
func RecordStatus(o *OutcomeRecord) store.Status {
	switch {
	case o.Status == StatusWinner:
		return store.StatusCompleted
	case o.Reason == ReasonCancelled:
		return store.StatusCancelled
	}
	return store.StatusFailed
}

// DecodeRunRecord decodes a run record: the document of a KindSupervise
// run, or the RunRecordMember of a spawn journal's. It is strict, and its
// outcome must be a result a run could return (OutcomeRecord.Check).
func DecodeRunRecord(v canonjson.Value) (*RunRecord, error) {
	var rec RunRecord
	if err := canonjson.FromValue(v, &rec); err != nil {
		return nil, fmt.Errorf("supervise: decoding the run record: %w", err)
	}
	if rec.Outcome == nil {
		return nil, &OutcomeError{Path: "/outcome", Reason: "a run record without its outcome"}
	}
	if err := rec.Outcome.Check(); err != nil {
		return nil, err
	}
	return &rec, nil
}

// ReadRunRecord reads supervised run runID's record from st: a
// KindSupervise run, or the record its store spawn journal holds. It is
// store.ErrNotFound for a run st holds no record of — one that has not
// ended, or whose journal is elsewhere and was run without a Store.
func ReadRunRecord(ctx context.Context, st store.Store, runID string) (*RunRecord, error) {
	ctx, cancel := context.WithTimeout(ctx, kernel.DefaultLeaseTTL)
	defer cancel()
	r, err := st.GetRun(ctx, runID)
	if err != nil {
		return nil, err
	}
	return RunRecordOf(r)
}

// RunRecordOf is the record run r holds (see ReadRunRecord).
func RunRecordOf(r store.Run) (*RunRecord, error) {
	switch r.Kind {
	case KindSupervise:
		return DecodeRunRecord(r.Doc)
	case SpawnLogRunKind:
		v, ok := r.Doc.Get(RunRecordMember)
		if !ok {
			return nil, fmt.Errorf("supervise: run %s's journal holds no record yet (the run has not ended): %w", r.ID, store.ErrNotFound)
		}
		return DecodeRunRecord(v)
	}
	return nil, fmt.Errorf("supervise: run %s is a %s run, not a supervised one: %w", r.ID, r.Kind, store.ErrNotFound)
}

// Result is the run's result as the record holds it: its end, its
// spend, its tree (each node's settlement only as far as its spend), the
// winner's text when at most MaxJournaledText bytes (its result blob,
// Winner.OutRef in the run's journal, holds the rest).
func (r *RunRecord) Result() SupervisedResult {
	res := r.Outcome.result(r.RunID)
	for i, w := range r.Workers {
		n := NodeInfo{ID: w.ID, Parent: w.Parent, Seq: i + 1, Label: w.Label, Profile: w.Profile, State: w.State, InDoubt: w.InDoubt}
		if w.Spent != nil {
			n.Settlement = &Settlement{Node: w.ID, Seq: i + 1, State: w.State, Spent: w.Spent.spend()}
		}
		ws := WorkerSummary{NodeInfo: n, Delivered: w.Delivered, Verdict: w.Verdict, Replayed: w.Replayed, CheckError: w.CheckError}
		if w.InDoubt {
			ws.InDoubtReason = w.Reason
		} else {
			ws.Reason = w.Reason
		}
		res.Tree = append(res.Tree, ws)
	}
	return res
}

// runRecord is res, journaled as outcome, as the store records it.
func (c *Coordinator) runRecord(res SupervisedResult, outcome *OutcomeRecord, manager ManagerRecord, task, runDir string) RunRecord {
	if abs, err := filepath.Abs(runDir); err == nil && runDir != "" {
		runDir = abs // where another process (agentrt steer, top) finds it
	}
	rec := RunRecord{RunID: res.RunID, Manager: manager, Task: task, RunDir: runDir, Outcome: outcome,
		Workers: make([]WorkerRecord, 0, len(res.Tree))}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, n := range res.Tree {
		w := WorkerRecord{ID: n.ID, Parent: n.Parent, Label: n.Label, Profile: n.Profile, State: n.State,
			Delivered: n.Delivered, Verdict: n.Verdict, Reason: clip(n.Reason, MaxReasonBytes),
			CheckError: clip(n.CheckError, MaxReasonBytes), InDoubt: n.InDoubt, Replayed: n.Replayed}
		if n.InDoubt {
			w.Reason = clip(n.InDoubtReason, MaxReasonBytes)
		}
		if n.Settlement != nil {
			w.Spent = spendRecord(n.Settlement.Spent)
		}
		if wk := c.workers[n.ID]; wk != nil {
			w.Execution = wk.execution
		}
		rec.Workers = append(rec.Workers, w)
	}
	return rec
}

// storeRunRecord writes rec to st once the run ended, as a
// KindSupervise run created ended; when st already holds the run's store
// spawn journal (journal's run), into that run's document instead,
// fenced as the journal's appends are. A record already there (a resume
// to the run's end) is left as it is. An interrupted run
// (OutcomeRecord.Interrupted) has not ended and is not recorded. The
// writes are bounded by kernel.DefaultLeaseTTL.
func storeRunRecord(ctx context.Context, st store.Store, journal *StoreSpawnLog, rec RunRecord, now time.Time) error {
	if rec.Outcome == nil || rec.Outcome.Interrupted() {
		return nil
	}
	v, err := canonjson.ToValue(rec)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrRunNotRecorded, err)
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), kernel.DefaultLeaseTTL)
	defer cancel()
	_, err = st.CreateRun(ctx, store.Run{ID: rec.RunID, Kind: KindSupervise, Status: RecordStatus(rec.Outcome),
		CreatedAt: now, UpdatedAt: now, Doc: v})
	if err == nil {
		return nil
	}
	if !errors.Is(err, store.ErrExists) {
		return fmt.Errorf("%w: run %s: %w", ErrRunNotRecorded, rec.RunID, err)
	}
	prior, err := st.GetRun(ctx, rec.RunID)
	switch {
	case err != nil:
		return fmt.Errorf("%w: run %s exists and cannot be read: %w", ErrRunNotRecorded, rec.RunID, err)
	case prior.Kind == KindSupervise:
		return nil
	case prior.Kind == SpawnLogRunKind && journal != nil:
		if _, ok := prior.Doc.Get(RunRecordMember); ok {
			return nil // recorded when the run ended
		}
		if err := journal.putRecord(ctx, v); err != nil {
			return fmt.Errorf("%w: in its journal's run %s: %w", ErrRunNotRecorded, rec.RunID, err)
		}
		return nil
	}
	return fmt.Errorf("%w: the store's run %s is a %s run, not this supervised run's record", ErrRunNotRecorded, rec.RunID, prior.Kind)
}
