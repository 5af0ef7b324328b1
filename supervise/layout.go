package supervise

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/internal/regularfile"
	"github.com/agentrt/agentrt/journal"
	"github.com/agentrt/agentrt/ledger"
)

// Files of the supervisor run layout (§3.6 "Supervisor run layout") that
// other processes read to follow a run: its current state and a line per
// progress event. Both are projections of the spawn journal, which stays
// the run's truth: after a crash a reader that finds either missing or
// stale falls back to the journal.
const (
	// StateFile holds the run's current RunState, replaced atomically
	// (a temporary file renamed over it) after each state change, so a
	// concurrent reader sees the previous state or the next, never part
	// of one. Changes that come within a millisecond of each other, or
	// faster than the disk, are coalesced into one rewrite; the run's
	// final state is always written before Supervise returns.
	StateFile = "state.json"
	// ProgressFile holds one ProgressRecord per spawn, settlement, steer,
	// cancellation and finish, appended through the journal writer.
	ProgressFile = "progress.ndjson"
)

// Layout limits.
const (
	// MaxStateBytes bounds state.json. A state that would be larger is
	// not written (the previous one stays, and the failure is logged);
	// ReadRunState refuses a larger file.
	MaxStateBytes = 64 << 10
	// MaxProgressRecordBytes bounds one progress line.
	MaxProgressRecordBytes = 16 << 10
	// MaxProgressBytes bounds progress.ndjson. Once it is reached further
	// progress lines are dropped and RunState.ProgressTruncated says so;
	// the spawn journal still holds every event.
	MaxProgressBytes = 16 << 20
)

// RunStateSchemaVersion is the version of RunState this package writes.
const RunStateSchemaVersion = 1

// RunStatus values of RunState.Status besides the run's final
// SupervisedResult status.
const (
	// RunStatusRunning: no finished record yet.
	RunStatusRunning = "running"
)

// RunState is the content of state.json: where a supervise run stands
// now. A channel absent from Spent is unknown (some spend on it went
// unreported), never zero; a channel absent from Budget is uncapped.
type RunState struct {
	SchemaVersion int    `json:"schemaVersion"`
	RunID         string `json:"runId"`
	// Status is "running" until the run ends, then the result's status.
	Status      string `json:"status"`
	Reason      string `json:"reason,omitzero"`
	StartedAtMS int64  `json:"startedAtMs,omitzero"`
	DeadlineMS  int64  `json:"deadlineMs,omitzero"`
	UpdatedAtMS int64  `json:"updatedAtMs"`
	// Revision counts the writes of state.json by this process, from 1.
	Revision int64 `json:"revision"`
	// Spawned counts the workers the journal records as spawned;
	// Settled counts their settlements by state; Live is the difference.
	Spawned int64           `json:"spawned"`
	Live    int64           `json:"live"`
	Settled map[State]int64 `json:"settled,omitzero"`
	// Budget is the run's ceiling per channel; Reserved what live work
	// holds; Spent what settled work (and the driver) spent.
	Budget   *BudgetRecord `json:"budget,omitzero"`
	Reserved *BudgetRecord `json:"reserved,omitzero"`
	Spent    *SpendRecord  `json:"spent,omitzero"`
	// ProgressTruncated: progress.ndjson reached MaxProgressBytes and
	// later lines were dropped.
	ProgressTruncated bool `json:"progressTruncated,omitzero"`
}

// Progress record kinds.
const (
	ProgressSpawn  = "spawn"
	ProgressSettle = "settle"
	ProgressSteer  = "steer"
	ProgressCancel = "cancel"
	ProgressFinish = "finish"
)

// ProgressRecord is one line of progress.ndjson. ID names the event
// (kind and node, or kind, operation id and effect) so that a line
// written twice collapses to its first copy in ReadProgress. Effect is
// a steer's or cancellation's acknowledged effect at that moment.
type ProgressRecord struct {
	ID          string `json:"id"`
	Kind        string `json:"kind"`
	AtMS        int64  `json:"atMs"`
	Node        NodeID `json:"node,omitzero"`
	Label       string `json:"label,omitzero"`
	State       State  `json:"state,omitzero"`
	OperationID string `json:"operationId,omitzero"`
	Effect      string `json:"effect,omitzero"`
	Outcome     string `json:"outcome,omitzero"`
	Reason      string `json:"reason,omitzero"`
}

// StateError reports a state.json that cannot be read as a RunState:
// too large, not JSON, or a member out of shape. Pointer is the RFC 6901
// pointer of the offending value ("" for the whole document).
type StateError struct {
	Path    string
	Pointer string
	Reason  string
	Err     error
}

func (e *StateError) Error() string {
	s := fmt.Sprintf("supervise: %s at %q: %s", e.Path, e.Pointer, e.Reason)
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns the underlying error.
func (e *StateError) Unwrap() error { return e.Err }

// ReadRunState reads state.json of run directory dir without locking
// it. A run that has not written one (an older writer, or a run still
// starting) gives an error matching fs.ErrNotExist; a file that is not a
// RunState gives a *StateError.
func ReadRunState(ctx context.Context, dir string) (RunState, error) {
	if err := ctx.Err(); err != nil {
		return RunState{}, err
	}
	path := filepath.Join(dir, StateFile)
	f, _, err := regularfile.Open(path)
	if err != nil {
		return RunState{}, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxStateBytes+1))
	if err != nil {
		return RunState{}, err
	}
	if len(data) > MaxStateBytes {
		return RunState{}, &StateError{Path: path, Reason: fmt.Sprintf("larger than %d bytes", MaxStateBytes)}
	}
	return decodeRunState(path, data)
}

// decodeRunState decodes and checks one state document.
func decodeRunState(path string, data []byte) (RunState, error) {
	v, err := canonjson.Decode(data)
	if err != nil {
		var de *canonjson.DecodeError
		ptr := ""
		if errors.As(err, &de) {
			ptr = de.Pointer
		}
		return RunState{}, &StateError{Path: path, Pointer: ptr, Reason: "not JSON", Err: err}
	}
	var st RunState
	if err := canonjson.FromValue(v, &st); err != nil {
		var ue *canonjson.UnmarshalError
		ptr := ""
		if errors.As(err, &ue) {
			ptr = ue.Pointer
		}
		return RunState{}, &StateError{Path: path, Pointer: ptr, Reason: "not a run state", Err: err}
	}
	bad := func(ptr, reason string) (RunState, error) {
		return RunState{}, &StateError{Path: path, Pointer: ptr, Reason: reason}
	}
	switch {
	case st.SchemaVersion != RunStateSchemaVersion:
		return bad("/schemaVersion", fmt.Sprintf("schema version %d, want %d", st.SchemaVersion, RunStateSchemaVersion))
	case st.RunID == "":
		return bad("/runId", "empty")
	case st.Status == "":
		return bad("/status", "empty")
	case st.Revision < 1:
		return bad("/revision", "below 1")
	case st.Spawned < 0:
		return bad("/spawned", "negative")
	case st.Live < 0 || st.Live > st.Spawned:
		return bad("/live", "outside 0..spawned")
	}
	for s, n := range st.Settled {
		if n < 0 {
			return bad(canonjson.Pointer("settled", string(s)), "negative")
		}
	}
	return st, nil
}

// ReadProgress reads progress.ndjson of run directory dir without
// locking it: every line that decodes as a ProgressRecord, in order, a
// line whose ID an earlier line holds collapsing to that first one, and
// how many lines it skipped (corrupt, or not a ProgressRecord). A torn
// tail is ignored. A run that has not written one gives an error
// matching fs.ErrNotExist.
func ReadProgress(ctx context.Context, dir string) ([]ProgressRecord, int, error) {
	recs, skipped, err := readTolerant[ProgressRecord](ctx, filepath.Join(dir, ProgressFile))
	return firstByID(recs, func(r ProgressRecord) string { return r.ID }), skipped, err
}

// ResolveWorker names the worker a steer or cancellation request
// addressed to ref reaches now, read without locking from run directory
// dir's spawn journal — progress.ndjson when the run journals in a store
// and its directory has none — by the rule the supervisor applies to
// the request: a node id is that node; a direct child's label (or
// profile name, when it has no label) names its newest worker. ok is
// false when neither names such a worker (not spawned yet, the run's
// own id, or lines dropped past MaxProgressBytes): the supervisor
// resolves ref when it takes the request. Callers that derive a
// request's operation id from its target use the node, so that a later
// worker under a reused label is a new request, not the earlier
// worker's answer. The journal comes first because progress.ndjson is
// written after it, by a writer of its own: a command run twice just
// after a spawn must name the same node both times, or the same steer
// would become two requests.
func ResolveWorker(ctx context.Context, dir, ref string) (NodeID, bool, error) {
	type spawn struct {
		node  NodeID
		label string
	}
	var spawns []spawn
	recs, _, err := ReadRunDir(ctx, dir)
	switch {
	case err == nil:
		for _, r := range recs {
			if _, child := r.Node.Parent(); r.Kind == KindSpawned && child { // a root spawn is the run itself
				spawns = append(spawns, spawn{r.Node, labelOf(r.Label, r.Profile)})
			}
		}
	case errors.Is(err, fs.ErrNotExist):
		progress, _, err := ReadProgress(ctx, dir)
		if err != nil {
			return "", false, err
		}
		for _, r := range progress {
			if r.Kind == ProgressSpawn {
				spawns = append(spawns, spawn{r.Node, r.Label})
			}
		}
	default:
		return "", false, err
	}
	var newest NodeID
	for _, s := range spawns {
		if s.node == NodeID(ref) {
			return s.node, true, nil
		}
		if p, ok := s.node.Parent(); ok && s.label == ref {
			if _, nested := p.Parent(); !nested {
				newest = s.node
			}
		}
	}
	return newest, newest != "", nil
}

// firstByID keeps the first record of each id, in order.
func firstByID[T any](recs []T, id func(T) string) []T {
	seen := make(map[string]bool, len(recs))
	out := recs[:0]
	for _, r := range recs {
		k := id(r)
		if seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, r)
	}
	return out
}

// maxPendingProgress bounds the progress lines waiting for the writer;
// a record that finds it full waits for room (backpressure), so memory
// stays bounded however fast records come.
const maxPendingProgress = 1024

// layout writes state.json and progress.ndjson of a run directory from
// the records the run log appends. observe folds a record into the state
// under mu and hands the work to one writer goroutine, which lingers
// writerLinger for more, appends the waiting progress lines as one batch
// (one fsync) and then rewrites state.json once for all of them: the
// spawn path never waits on these projections' disk writes. close drains what waits, so the last state
// written is the run's final one. Its methods are safe for concurrent
// use.
type layout struct {
	dir     string
	now     func() time.Time
	logger  *slog.Logger
	readout func() ledger.Readout
	// progress and progBytes belong to the writer goroutine.
	progress  *journal.Journal
	progBytes int64

	mu      sync.Mutex
	room    *sync.Cond // signalled when the writer takes pending
	state   RunState
	nodes   map[NodeID]string // spawned workers' labels; settled ones removed
	pending []ProgressRecord
	spare   []ProgressRecord // a written batch, emptied, for pending to reuse
	dirty   bool             // the state changed since the writer last took it
	closing bool

	kick chan struct{} // cap 1: work is waiting
	// stop is closed with kick by close: it ends the writer's linger.
	stop chan struct{}
	done chan struct{} // closed when the writer has drained and stopped

	// fence, when set (setFence), is asked before each write: once it
	// fails — a store spawn journal's lease was lost (StoreSpawnLog
	// .Held) — state.json and progress.ndjson are not written any more,
	// so a process taken over never overwrites its successor's. fenced
	// is the writer's: the fence failed once.
	fence  func() error
	fenced bool
}

// setFence installs the fence the writer asks before each write.
func (y *layout) setFence(f func() error) {
	y.mu.Lock()
	y.fence = f
	y.mu.Unlock()
}

// held reports whether the writer may still write; the writer calls it.
func (y *layout) held() bool {
	if y.fenced {
		return false
	}
	y.mu.Lock()
	f := y.fence
	y.mu.Unlock()
	if f == nil {
		return true
	}
	if err := f(); err != nil {
		y.fenced = true
		y.logger.Error("supervise: the run's lease is lost; state.json and progress.ndjson are not written any more", "err", err)
		return false
	}
	return true
}

// openLayout opens the progress journal of dir and rebuilds the state
// from the records the spawn journal already holds (a resumed run). A
// resumed run that has not ended writes its state at once: state.json
// may still hold the final status an earlier process wrote, which
// readers take as the run's end (a request written now would be answered
// not_live). noSync (benchmarks only, with the spawn journal's) writes
// the progress log without fsyncs.
func openLayout(dir, runID string, prior []Record, readout func() ledger.Readout, now func() time.Time, logger *slog.Logger, noSync bool) (*layout, error) {
	path := filepath.Join(dir, ProgressFile)
	j, err := journal.Open(path, journal.Options{MaxRecordBytes: MaxProgressRecordBytes, NoSync: noSync})
	if err != nil {
		return nil, fmt.Errorf("supervise: opening the progress log: %w", err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		j.Close()
		return nil, fmt.Errorf("supervise: opening the progress log: %w", err)
	}
	y := &layout{dir: dir, now: now, logger: logger, readout: readout, progress: j, progBytes: fi.Size(),
		state: RunState{SchemaVersion: RunStateSchemaVersion, RunID: runID, Status: RunStatusRunning},
		nodes: map[NodeID]string{}, kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	y.room = sync.NewCond(&y.mu)
	y.state.ProgressTruncated = y.progBytes >= MaxProgressBytes
	if err := checkRunDirOwner(dir, runID); err != nil {
		j.Close()
		return nil, err
	}
	if st, err := ReadRunState(context.Background(), dir); err == nil {
		y.state.Revision = st.Revision
	}
	for i := range prior {
		y.apply(&prior[i])
	}
	if len(prior) > 0 && y.state.Status == RunStatusRunning {
		if err := y.writeState(); err != nil {
			logger.Error("supervise: writing the resumed run's state", "err", err)
		}
	}
	go y.write()
	return y, nil
}

// checkRunDirOwner refuses to open run runID in dir when dir's
// state.json names another run (*RunDirMismatchError): the directory is
// that run's. A directory without a state, or with one that does not
// decode, is not refused here.
func checkRunDirOwner(dir, runID string) error {
	st, err := ReadRunState(context.Background(), dir)
	if err == nil && st.RunID != runID {
		return &RunDirMismatchError{RunDir: dir, RunID: runID, Recorded: st.RunID}
	}
	return nil
}

// apply folds r into the state and returns the progress line it makes,
// if any. y.mu is held (or y is not shared yet).
func (y *layout) apply(r *Record) (ProgressRecord, bool) {
	at := y.now().UnixMilli()
	switch r.Kind {
	case KindRunStarted:
		y.state.StartedAtMS, y.state.DeadlineMS = r.StartedAtMS, r.DeadlineMS
	case KindSpawned:
		if _, ok := r.Node.Parent(); !ok {
			return ProgressRecord{}, false // a root spawn is the run itself
		}
		y.state.Spawned++
		y.nodes[r.Node] = labelOf(r.Label, r.Profile)
		return ProgressRecord{ID: ProgressSpawn + ":" + string(r.Node), Kind: ProgressSpawn, AtMS: at, Node: r.Node,
			Label: labelOf(r.Label, r.Profile)}, true
	case KindSettled:
		label, ok := y.nodes[r.Node]
		if !ok {
			return ProgressRecord{}, false
		}
		delete(y.nodes, r.Node)
		if y.state.Settled == nil {
			y.state.Settled = map[State]int64{}
		}
		y.state.Settled[r.State]++
		return ProgressRecord{ID: ProgressSettle + ":" + string(r.Node), Kind: ProgressSettle, AtMS: at, Node: r.Node,
			Label: label, State: r.State, Reason: r.Reason}, true
	case KindSteerRequested, KindSteerAcknowledged, KindCancelRequested, KindCancelAcknowledged,
		KindRunCancelRequested, KindRunCancelAcknowledged:
		return controlProgress(r, at)
	case KindFinished:
		y.state.Status, y.state.Reason = r.Outcome, r.Reason
		if y.state.Status == "" {
			y.state.Status = "unknown"
		}
		return ProgressRecord{ID: ProgressFinish + ":" + y.state.RunID, Kind: ProgressFinish, AtMS: at,
			Outcome: r.Outcome, Reason: r.Reason}, true
	}
	return ProgressRecord{}, false
}

// controlProgress is the progress line of a steer or cancellation
// record: its operation and the effect it has now.
func controlProgress(r *Record, at int64) (ProgressRecord, bool) {
	p := ProgressRecord{AtMS: at, Node: r.Node}
	var ok bool
	switch r.Kind {
	case KindSteerRequested:
		ok = progressOf(r, &p, ProgressSteer, func(v SteerRequest) (string, string) { return v.OperationID, string(SteerUnknown) })
	case KindSteerAcknowledged:
		ok = progressOf(r, &p, ProgressSteer, func(v SteerAck) (string, string) { return v.OperationID, string(v.Effect) })
	case KindCancelRequested:
		ok = progressOf(r, &p, ProgressCancel, func(v CancelRequest) (string, string) { return v.OperationID, "requested" })
	case KindCancelAcknowledged:
		ok = progressOf(r, &p, ProgressCancel, func(v WorkerCancellation) (string, string) { return v.OperationID, string(v.Effect) })
	case KindRunCancelRequested:
		ok = progressOf(r, &p, ProgressCancel, func(v RunCancelRequest) (string, string) { return v.OperationID, "requested" })
	case KindRunCancelAcknowledged:
		ok = progressOf(r, &p, ProgressCancel, func(v RunCancellation) (string, string) { return v.OperationID, string(v.Effect) })
	}
	if !ok {
		return p, false
	}
	p.ID = p.Kind + ":" + p.OperationID + ":" + p.Effect
	return p, true
}

// progressOf fills p, a control record's progress line of kind, from
// r's data decoded as a T: its operation id and effect, as op reads
// them. It reports false when the data is not a T.
func progressOf[T any](r *Record, p *ProgressRecord, kind string, op func(T) (id, effect string)) bool {
	var v T
	if canonjson.FromValue(r.Data, &v) != nil {
		return false
	}
	p.Kind = kind
	p.OperationID, p.Effect = op(v)
	return true
}

// observe folds an appended record into the layout: a progress line
// when it makes one, and a state.json rewrite, both done by the writer.
func (y *layout) observe(r *Record) {
	y.mu.Lock()
	defer y.mu.Unlock()
	for len(y.pending) >= maxPendingProgress && !y.closing {
		y.room.Wait()
	}
	if y.closing {
		return // a record after run end: the final state is written
	}
	if p, ok := y.apply(r); ok {
		if y.pending == nil {
			y.pending, y.spare = y.spare, nil
		}
		y.pending = append(y.pending, p)
	}
	y.dirty = true
	select {
	case y.kick <- struct{}{}:
	default:
	}
}

// write is the writer goroutine: it runs until close, and drains what
// waits before it stops. Failures are logged, never returned: both files
// are projections of the journal the records are already in.
func (y *layout) write() {
	defer close(y.done)
	t := newLingerTimer()
	for {
		_, open := <-y.kick
		if open {
			open = linger(t, y.stop)
		}
		y.mu.Lock()
		batch, dirty := y.pending, y.dirty
		y.pending, y.dirty = nil, false
		y.room.Broadcast()
		y.mu.Unlock()
		if !y.held() {
			if !open {
				return
			}
			continue // drained and dropped: another process owns the run
		}
		y.appendProgress(batch)
		clear(batch)
		y.mu.Lock()
		dirty = dirty || y.dirty // appendProgress may have marked it truncated
		y.dirty = false
		y.spare = batch[:0]
		y.mu.Unlock()
		if dirty {
			if err := y.writeState(); err != nil {
				y.logger.Error("supervise: writing the run state", "err", err)
			}
		}
		if !open {
			return
		}
	}
}

// writerLinger is how long a projection writer (the layout's, the
// stream logs'), once woken, lets more records join its batch before it
// writes: records that come faster than that share one write (and one
// progress fsync, one state.json rewrite) instead of each waking the
// writer, whose writes would then compete with the spawn path for the
// CPU. A crash loses at most what lingers, which these projections and
// observation logs may lose anyway (their last lines; the spawn journal
// is the truth).
const writerLinger = time.Millisecond

// newLingerTimer returns a stopped timer for linger, one per writer
// goroutine: a batch reuses it rather than allocating its own.
func newLingerTimer() *time.Timer {
	t := time.NewTimer(writerLinger)
	t.Stop()
	return t
}

// linger waits writerLinger on t, or returns false at once when stop is
// closed: the writer is closing and drains now. It leaves the writer's
// kick channel alone: a record queued meanwhile joins the batch the
// writer takes next, and its kick (the channel holds one) stays for the
// writer's next turn, so the records of a busy run do not each wake the
// writer goroutine while it lingers.
func linger(t *time.Timer, stop <-chan struct{}) bool {
	t.Reset(writerLinger)
	select {
	case <-t.C:
		return true
	case <-stop:
		t.Stop()
		return false
	}
}

// appendProgress appends batch as one journal append, up to the file's
// bound; the writer goroutine calls it. A batch that cannot reach the
// bound (each line is at most MaxProgressRecordBytes) is encoded once,
// by the append; otherwise, or when a record of it does not encode,
// each line is encoded first to find where the bound falls and which
// records to skip.
func (y *layout) appendProgress(batch []ProgressRecord) {
	if len(batch) == 0 {
		return
	}
	y.mu.Lock()
	truncated := y.state.ProgressTruncated
	y.mu.Unlock()
	if truncated {
		return
	}
	if y.progBytes+int64(len(batch))*(MaxProgressRecordBytes+1) <= MaxProgressBytes {
		vals := make([]any, len(batch))
		for i := range batch {
			vals[i] = &batch[i]
		}
		before := y.progress.Size()
		_, err := y.progress.AppendOf(context.Background(), vals...)
		if err == nil {
			y.progBytes += y.progress.Size() - before
			return
		}
		if _, bad := errors.AsType[*journal.RecordError](err); !bad {
			y.logger.Error("supervise: appending progress", "err", err)
			return
		}
		// Nothing of the batch was written: the careful way below skips
		// the record that does not encode, logging it, and writes the rest.
	}
	y.appendProgressBounded(batch)
}

// appendProgressBounded is appendProgress encoding each line before the
// append: a line past MaxProgressBytes marks the log truncated and is
// dropped with every later one, a record that does not encode is
// logged and skipped.
func (y *layout) appendProgressBounded(batch []ProgressRecord) {
	vals := make([]any, 0, len(batch))
	size := y.progBytes
	var data []byte
	for i := range batch {
		var err error
		data, err = canonjson.AppendCanonicalOf(data[:0], &batch[i])
		if err != nil {
			y.logger.Error("supervise: a progress record", "err", err)
			continue
		}
		if size+int64(len(data))+1 > MaxProgressBytes {
			y.mu.Lock()
			y.state.ProgressTruncated, y.dirty = true, true
			y.mu.Unlock()
			y.logger.Warn("supervise: the progress log is full; later progress is in the spawn journal only",
				"limit", MaxProgressBytes)
			break
		}
		size += int64(len(data)) + 1
		vals = append(vals, &batch[i])
	}
	if len(vals) == 0 {
		return
	}
	if _, err := y.progress.AppendOf(context.Background(), vals...); err != nil {
		y.logger.Error("supervise: appending progress", "err", err)
		return
	}
	y.progBytes = size
}

// writeState replaces state.json with the current state; the writer
// goroutine calls it.
func (y *layout) writeState() error {
	y.mu.Lock()
	y.state.Revision++
	st := y.state
	st.Live = int64(len(y.nodes))
	if st.Settled != nil {
		st.Settled = maps.Clone(st.Settled)
	}
	y.mu.Unlock()
	st.UpdatedAtMS = y.now().UnixMilli()
	if y.readout != nil {
		st.Budget, st.Reserved, st.Spent = balances(y.readout())
	}
	data, err := canonjson.AppendCanonicalOf(make([]byte, 0, 512), &st)
	if err != nil {
		return err
	}
	if len(data) > MaxStateBytes {
		return fmt.Errorf("the state is %d bytes, over MaxStateBytes %d", len(data), MaxStateBytes)
	}
	path := filepath.Join(y.dir, StateFile)
	// No fsync: state.json is a projection, and a crash leaves either
	// file whole (rename is atomic) or a reader falls back to the journal.
	tmp, err := writeTempBytes(path, data, false)
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

// balances turns a pool readout into the run's ceiling, reservations and
// spend; a channel whose spend went unreported is left out of spent.
func balances(r ledger.Readout) (budget, reserved *BudgetRecord, spent *SpendRecord) {
	budget, reserved, spent = &BudgetRecord{}, &BudgetRecord{}, &SpendRecord{}
	for ch, b := range r.Channels {
		total, res, committed := b.Total, b.Reserved, b.Committed
		var cap *int64
		if b.Capped {
			cap = &total
		}
		var sp *int64
		if b.Known {
			sp = &committed
		}
		switch ch {
		case ledger.ChannelTokens:
			budget.Tokens, reserved.Tokens, spent.Tokens = cap, &res, sp
		case ledger.ChannelIterations:
			budget.Iterations, reserved.Iterations, spent.Iterations = cap, &res, sp
		case ledger.ChannelUSD:
			budget.MicroUSD, reserved.MicroUSD, spent.MicroUSD = cap, &res, sp
		default:
			name, ok := cutResource(ch)
			if !ok {
				continue
			}
			if cap != nil {
				if budget.Resources == nil {
					budget.Resources = map[string]int64{}
				}
				budget.Resources[name] = total
			}
			if reserved.Resources == nil {
				reserved.Resources = map[string]int64{}
			}
			reserved.Resources[name] = res
			if sp != nil {
				if spent.Resources == nil {
					spent.Resources = map[string]*int64{}
				}
				spent.Resources[name] = sp
			}
		}
	}
	return budget, reserved, spent
}

func cutResource(ch string) (string, bool) {
	const prefix = "resource:"
	if len(ch) <= len(prefix) || ch[:len(prefix)] != prefix {
		return "", false
	}
	return ch[len(prefix):], true
}

// close drains what waits to be written, stops the writer and closes
// the progress log.
func (y *layout) close() error {
	if y == nil {
		return nil
	}
	y.mu.Lock()
	if !y.closing {
		y.closing = true
		y.room.Broadcast()
		close(y.kick)
		close(y.stop)
	}
	y.mu.Unlock()
	<-y.done
	return y.progress.Close()
}
