package supervise

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/ledger"
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
// is in no run of its own, only here (Outcome.DriverInference) and in
// this run's store ledger (LedgerEntries: an entry per worker and the
// manager's), whose entries add up to Outcome.Spent.
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
// for a winner, cancelled for a run its caller stopped (reason cancelled
// or aborted), failed for every other no-winner end.
func RecordStatus(o *OutcomeRecord) store.Status {
	switch {
	case o.Status == StatusWinner:
		return store.StatusCompleted
	case o.Reason == ReasonCancelled, o.Reason == ReasonAborted:
		// The caller stopped it (CancelRun, its context, RootHandle.Abort):
		// cancelled, never failed (CHD-11, CAN-06).
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

// Ledger entry kinds of a supervised run's record (LedgerEntries).
const (
	// LedgerWorker is a node's entry: what its settlement measured and
	// what the run's totals charged for it.
	LedgerWorker = "supervise-worker"
	// LedgerManager is the manager's own inference: its metered turns.
	LedgerManager = "supervise-manager"
)

// LedgerEntries are the store ledger entries of run res's record: one
// LedgerWorker entry per node of its tree, in seq order, and one
// LedgerManager entry for the manager's own inference. Each is
// {kind, node, spent, charged}: spent per channel (tokens, microUsd,
// iterations) in the kernel's amount form (kernel.AmountValue) — a
// number when measured, null when unknown (a node that never settled or
// did not report the channel), {"atLeast": n} when only a floor is known
// (the manager's turns, some of which reported nothing); charged the
// numbers the run's totals count (TreeCharged: a node's ceiling where
// its measure is missing, less what a nested manager's children count of
// it). The charged members sum to res.Spent exactly, and
// the spent members to it whenever a channel is known.
func LedgerEntries(res SupervisedResult) []canonjson.Value {
	out := make([]canonjson.Value, 0, len(res.Tree)+1)
	infos := make([]NodeInfo, len(res.Tree))
	for i, n := range res.Tree {
		infos[i] = n.NodeInfo
	}
	counted, _ := TreeCharged(infos)
	for i, n := range res.Tree {
		charged := counted[i]
		var got ledger.Spend
		if n.Settlement != nil {
			got = n.Settlement.Spent
		}
		measured := func(p *int64) ledger.Amount[int64] {
			if p == nil {
				return ledger.Amount[int64]{}
			}
			return ledger.Amount[int64]{Value: *p, Reported: true, Complete: true}
		}
		out = append(out, ledgerEntry(LedgerWorker, string(n.ID), measured(got.Tokens), measured(got.MicroUSD), measured(got.Iterations), charged))
	}
	d := res.Breakdown.DriverInference
	// The manager's meter adds what its turns reported: short of the
	// whole when one reported nothing, a floor.
	floor := func(v int64, known bool) ledger.Amount[int64] {
		return ledger.Amount[int64]{Value: v, Reported: true, Complete: known}
	}
	out = append(out, ledgerEntry(LedgerManager, res.RunID, floor(d.Tokens, d.TokensKnown), floor(d.MicroUSD, d.USDKnown),
		floor(d.Iterations, d.IterationsKnown), d))
	return out
}

func ledgerEntry(kind, node string, tokens, microUSD, iterations ledger.Amount[int64], charged SpentTotal) canonjson.Value {
	num := func(v int64) canonjson.Value { return canonjson.NumberValue(float64(v)) }
	return canonjson.ObjectValue([]canonjson.Member{
		{Name: "charged", Value: canonjson.ObjectValue([]canonjson.Member{
			{Name: "iterations", Value: num(charged.Iterations)},
			{Name: "microUsd", Value: num(charged.MicroUSD)},
			{Name: "tokens", Value: num(charged.Tokens)},
		})},
		{Name: "kind", Value: canonjson.StringValue(kind)},
		{Name: "node", Value: canonjson.StringValue(node)},
		{Name: "spent", Value: canonjson.ObjectValue([]canonjson.Member{
			{Name: "iterations", Value: kernel.AmountValue(iterations)},
			{Name: "microUsd", Value: kernel.AmountValue(microUSD)},
			{Name: "tokens", Value: kernel.AmountValue(tokens)},
		})},
	})
}

// storeRunRecord writes rec to st once the run ended, with its ledger
// entries (LedgerEntries), as a KindSupervise run: created running under
// a lease, its ledger appended in one batch, then ended; when st already
// holds the run's store spawn journal (journal's run), into that run's
// document and ledger instead, fenced as the journal's appends are. A
// record already ended there (a resume to the run's end) is left as it
// is; one a killed process left running is taken over and finished, its
// ledger appended only if it holds none (the batch is atomic). An
// interrupted run (OutcomeRecord.Interrupted) has not ended and is not
// recorded. The writes are bounded by kernel.DefaultLeaseTTL.
func storeRunRecord(ctx context.Context, st store.Store, journal *StoreSpawnLog, rec RunRecord, entries []canonjson.Value, now time.Time) error {
	if rec.Outcome == nil || rec.Outcome.Interrupted() {
		return nil
	}
	v, err := canonjson.ToValue(rec)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrRunNotRecorded, err)
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), kernel.DefaultLeaseTTL)
	defer cancel()
	run, err := st.CreateRun(ctx, store.Run{ID: rec.RunID, Kind: KindSupervise, Status: store.StatusRunning,
		CreatedAt: now, UpdatedAt: now, Owner: recordOwner(), LeaseUntil: now.Add(kernel.DefaultLeaseTTL), Doc: v})
	if err == nil {
		return finishRecord(ctx, st, run.Fence(), RecordStatus(rec.Outcome), entries, now)
	}
	if !errors.Is(err, store.ErrExists) {
		return fmt.Errorf("%w: run %s: %w", ErrRunNotRecorded, rec.RunID, err)
	}
	prior, err := st.GetRun(ctx, rec.RunID)
	switch {
	case err != nil:
		return fmt.Errorf("%w: run %s exists and cannot be read: %w", ErrRunNotRecorded, rec.RunID, err)
	case prior.Kind == KindSupervise && (prior.Status == store.StatusRunning || prior.Status == store.StatusInterrupted):
		// Left unfinished by a killed process: this run's supervisor
		// (the one holding its journal) finishes it.
		taken, err := st.UpdateRun(ctx, rec.RunID, func(r *store.Run) error {
			if r.Kind != KindSupervise || (r.Status != store.StatusRunning && r.Status != store.StatusInterrupted) {
				return fmt.Errorf("run %s is a %s run %s", r.ID, r.Kind, r.Status)
			}
			r.Generation++
			r.Owner, r.LeaseUntil, r.Status = recordOwner(), now.Add(kernel.DefaultLeaseTTL), store.StatusRunning
			return nil
		})
		if err != nil {
			return fmt.Errorf("%w: taking over its unfinished record %s: %w", ErrRunNotRecorded, rec.RunID, err)
		}
		return finishRecord(ctx, st, taken.Fence(), RecordStatus(rec.Outcome), entries, now)
	case prior.Kind == KindSupervise:
		return nil
	case prior.Kind == SpawnLogRunKind && journal != nil:
		if _, ok := prior.Doc.Get(RunRecordMember); ok {
			return nil // recorded when the run ended
		}
		if err := appendLedgerOnce(ctx, st, journal.fence, entries, now); err != nil {
			return fmt.Errorf("%w: the ledger of its journal's run %s: %w", ErrRunNotRecorded, rec.RunID, err)
		}
		if err := journal.putRecord(ctx, v); err != nil {
			return fmt.Errorf("%w: in its journal's run %s: %w", ErrRunNotRecorded, rec.RunID, err)
		}
		return nil
	}
	return fmt.Errorf("%w: the store's run %s is a %s run, not this supervised run's record", ErrRunNotRecorded, rec.RunID, prior.Kind)
}

// finishRecord appends a KindSupervise record's ledger (once) and ends
// it as status, under fence f.
func finishRecord(ctx context.Context, st store.Store, f store.Fence, status store.Status, entries []canonjson.Value, now time.Time) error {
	if err := appendLedgerOnce(ctx, st, f, entries, now); err != nil {
		return fmt.Errorf("%w: run %s's ledger: %w", ErrRunNotRecorded, f.RunID, err)
	}
	_, err := st.UpdateFenced(ctx, f, func(r *store.Run) error {
		r.Status, r.LeaseUntil, r.UpdatedAt = status, time.Time{}, now
		return nil
	})
	if err != nil {
		return fmt.Errorf("%w: ending run %s: %w", ErrRunNotRecorded, f.RunID, err)
	}
	return nil
}

// appendLedgerOnce appends entries to run f.RunID's ledger in one batch
// unless it already holds a supervised run's entry (an earlier process
// appended the batch before it was killed).
func appendLedgerOnce(ctx context.Context, st store.Store, f store.Fence, entries []canonjson.Value, now time.Time) error {
	prior, err := st.Ledger(ctx, f.RunID)
	if err != nil {
		return err
	}
	for _, e := range prior {
		if k, ok := e.Body.Get("kind"); ok && k.Kind() == canonjson.String && (k.Str() == LedgerWorker || k.Str() == LedgerManager) {
			return nil
		}
	}
	if len(entries) == 0 {
		return nil
	}
	_, err = st.AppendLedger(ctx, f, entries, now)
	return err
}

// LedgerSpend is the spend a supervised run's ledger entries
// (LedgerEntries) state, summed per channel in the kernel's amount form:
// {iterations, microUsd, tokens}, each a number when every entry
// measured it, {"atLeast": n} when some entry knows only a floor, null
// when some entry does not know it. Entries of other kinds are ignored;
// an unreadable channel counts as unknown.
func LedgerSpend(entries []store.LedgerEntry) canonjson.Value {
	channels := []string{"iterations", "microUsd", "tokens"}
	sums := make([]ledger.Amount[int64], len(channels))
	for i := range sums {
		sums[i] = ledger.Amount[int64]{Reported: true, Complete: true}
	}
	for _, e := range entries {
		k, _ := e.Body.Get("kind")
		if k.Kind() != canonjson.String || (k.Str() != LedgerWorker && k.Str() != LedgerManager) {
			continue
		}
		spent, _ := e.Body.Get("spent")
		for i, name := range channels {
			c, _ := spent.Get(name)
			switch c.Kind() {
			case canonjson.Number:
				sums[i].Value += int64(c.Float())
			case canonjson.Object:
				if f, ok := c.Get("atLeast"); ok && f.Kind() == canonjson.Number {
					sums[i].Value += int64(f.Float())
					sums[i].Complete = false
					continue
				}
				sums[i].Reported = false
			default:
				sums[i].Reported = false
			}
		}
	}
	m := make([]canonjson.Member, len(channels))
	for i, name := range channels {
		m[i] = canonjson.Member{Name: name, Value: kernel.AmountValue(sums[i])}
	}
	return canonjson.ObjectValue(m)
}

// recordOwner names this process as the writer of a run's record.
func recordOwner() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%s/%d", host, os.Getpid())
}
