package supervise

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/journal"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/store"
)

// SpawnLog is the durable side of a supervised run's spawn journal, the
// one interface over its two homes: the run dir's file
// (OpenFileSpawnLog, owned through the journal's file lock) and a run
// in a store.Store, SQLite or PostgreSQL (OpenStoreSpawnLog, owned
// through the store's lease-generation fence). Either way one process
// owns the log at a time: a second Open while the first holds it fails
// with an error matching ErrSpawnLogHeld, and every record an Append
// returned for is read back by the next owner in order.
type SpawnLog interface {
	// Records returns every record the log held when it was opened, in
	// order.
	Records(ctx context.Context) ([]Record, error)
	// Append makes recs durable, in order, as one write: all of them or
	// none. It fails, and writes nothing, once the log is no longer
	// this process's (a store lease another process took over or that
	// lapsed: errors.Is(err, store.ErrFenced)). A store append is
	// bounded by the lease TTL (at least kernel.DefaultCleanupTimeout),
	// and cut at once when the lease is lost while it runs; one that
	// fails with store.ErrUnknownOutcome may still have landed (a resume
	// reads back whatever did).
	Append(ctx context.Context, recs ...Record) error
	// Close gives the log up: the next owner can open it at once.
	Close() error
}

// ErrSpawnLogLost matches the error Supervise returns instead of its
// result when this process lost the run's spawn journal: another process
// took it over (this one was paused past the journal's lease, and the
// other resumed the run), or the lease ran out while renewals failed (its
// store stopped answering; the error then wraps a *store.FenceError of
// reason store.FenceLapsed). Either way its brain and workers were
// stopped as soon as it knew, nothing it writes lands any more, and it
// delivers nothing — no winner, no settlement, no acknowledgement. The
// run stays resumable: the process holding the journal next finishes it.
var ErrSpawnLogLost = errors.New("supervise: this process lost the run's spawn journal")

// ErrSpawnLogHeld matches the error of opening a spawn log another
// process (or another open log of this one) holds.
var ErrSpawnLogHeld = errors.New("supervise: another process holds the run's spawn journal")

// fileSpawnLog is the run dir's spawn-journal.jsonl.
type fileSpawnLog struct {
	j *journal.Journal
}

// OpenFileSpawnLog opens the spawn journal of run directory dir
// (SpawnJournalFile), creating the directory and the file if needed,
// and takes its lock; a journal another open log holds is an error
// matching ErrSpawnLogHeld (and *journal.LockedError).
func OpenFileSpawnLog(dir string) (SpawnLog, error) {
	return openFileSpawnLog(dir, false)
}

// unsyncedJournalKey, set on Supervise's context by benchmarks only,
// opens the run dir's spawn journal and progress log without fsyncs
// (journal.Options NoSync), to measure a spawn and settlement without
// the disk flushes (issue 13's "without fsync cost").
type unsyncedJournalKey struct{}

func openFileSpawnLog(dir string, noSync bool) (SpawnLog, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("supervise: run dir: %w", err)
	}
	j, err := journal.Open(filepath.Join(dir, SpawnJournalFile), journal.Options{NoSync: noSync})
	if err != nil {
		var locked *journal.LockedError
		if errors.As(err, &locked) {
			return nil, fmt.Errorf("%w: %w", ErrSpawnLogHeld, err)
		}
		return nil, fmt.Errorf("supervise: opening the spawn journal: %w", err)
	}
	return &fileSpawnLog{j: j}, nil
}

func (l *fileSpawnLog) Records(ctx context.Context) ([]Record, error) {
	var out []Record
	for e, err := range l.j.Read(ctx, 1) {
		if err != nil {
			var corrupt *journal.CorruptError
			if errors.As(err, &corrupt) {
				continue // one bad line never hides later ones
			}
			return out, fmt.Errorf("supervise: reading the spawn journal: %w", err)
		}
		var r Record
		if err := canonjson.FromValue(e.Value, &r); err != nil {
			return out, fmt.Errorf("supervise: spawn journal record %d does not decode: %w", e.Seq, err)
		}
		out = append(out, r)
	}
	return out, nil
}

func (l *fileSpawnLog) Append(ctx context.Context, recs ...Record) error {
	if _, err := l.j.AppendOf(ctx, recordRefs(recs)...); err != nil {
		return fmt.Errorf("supervise: journal append: %w", err)
	}
	return nil
}

// Enqueue queues r as one batch of the journal and returns how to
// wait for it: the batch's place is fixed now, its fsync shared with
// whatever else is queued when it commits (see runLog.enqueue). r is
// encoded before Enqueue returns and not kept.
func (l *fileSpawnLog) Enqueue(r *Record) (func(context.Context) error, error) {
	p, err := l.j.EnqueueOf(r)
	if err != nil {
		return nil, fmt.Errorf("supervise: journal append: %w", err)
	}
	return func(ctx context.Context) error {
		if _, err := p.Wait(ctx); err != nil {
			return fmt.Errorf("supervise: journal append: %w", err)
		}
		return nil
	}, nil
}

func (l *fileSpawnLog) Close() error { return l.j.Close() }

// spawnLogQueuer is a spawn log whose appends can be queued in order
// and awaited apart (the file journal): the caller fixes a record's
// place under its own lock and waits for its durability after
// releasing it, so concurrent spawns and settlements share fsyncs.
type spawnLogQueuer interface {
	Enqueue(r *Record) (wait func(context.Context) error, err error)
}

// recordRefs returns pointers to recs for the file journal's AppendOf,
// which encodes each record straight to its canonical line (a Record
// itself would be copied into each interface).
func recordRefs(recs []Record) []any {
	refs := make([]any, len(recs))
	for i := range recs {
		refs[i] = &recs[i]
	}
	return refs
}

func recordValues(recs []Record) ([]canonjson.Value, error) {
	vals := make([]canonjson.Value, len(recs))
	for i, r := range recs {
		v, err := canonjson.ToValue(r)
		if err != nil {
			return nil, fmt.Errorf("supervise: journal record: %w", err)
		}
		vals[i] = v
	}
	return vals, nil
}

// SpawnLogRunKind is the kind of the store run that holds a supervised
// run's spawn journal.
const SpawnLogRunKind = "supervise-journal"

// spawnLogPage is how many events Records reads per store call.
const spawnLogPage = 500

// SpawnLogLeaseMember is the member of a store spawn journal's run
// document that holds its lease: until when (Unix milliseconds) its
// holder may be taken over only by itself; 0 once released.
const SpawnLogLeaseMember = "leaseUntilMs"

// withLease is doc, the spawn journal's run document, with its lease
// until until (0 for the zero time); its other members, such as the run
// record (RunRecordMember), are kept.
func withLease(doc canonjson.Value, until time.Time) canonjson.Value {
	ms := int64(0)
	if !until.IsZero() {
		ms = until.UnixMilli()
	}
	return doc.With(SpawnLogLeaseMember, canonjson.NumberValue(float64(ms)))
}

// SpawnLogLease is until when the process named by r.Owner holds r, the
// store run of a spawn journal (SpawnLogRunKind), as its lease member
// (SpawnLogLeaseMember) says: past it, or zero (released or
// unreadable), no process holds the run.
func SpawnLogLease(r store.Run) time.Time { return leaseOf(r) }

// leaseOf is until when r's lease holds; the zero time when released or
// unreadable. Only its own member is read, so the document may hold
// others.
func leaseOf(r store.Run) time.Time {
	v, ok := r.Doc.Get(SpawnLogLeaseMember)
	if !ok || v.Kind() != canonjson.Number || !v.IsSafeInteger() || v.Float() <= 0 {
		return time.Time{}
	}
	return time.UnixMilli(int64(v.Float()))
}

// StoreSpawnLogOptions configure OpenStoreSpawnLog. The zero value is
// the default.
type StoreSpawnLogOptions struct {
	// Owner names this process in the run's lease; "" means
	// "<hostname>/<pid>".
	Owner string
	// LeaseTTL is how long the lease lasts unrenewed: 0 means
	// kernel.DefaultLeaseTTL; below kernel.MinLeaseTTL is refused. The
	// log renews it every third of it while open.
	LeaseTTL time.Duration
	// Logger receives lease renewals that failed; nil discards.
	Logger *slog.Logger
}

// StoreSpawnLog is a spawn journal kept as the events of one run (kind
// SpawnLogRunKind, id the supervised run's id) in a store.Store. Its
// holder is fenced by the run's lease generation: opening creates the
// run at generation 1, or takes it over by raising the generation, which
// makes the store refuse every later write of an earlier holder; every
// Append is one AppendEvents under the holder's fence. Whether the run
// may be taken over is its lease, kept in the run's document
// (SpawnLogLeaseMember, Unix milliseconds) and renewed while the log is
// open: a live lease is ErrSpawnLogHeld, a lapsed or released one is
// taken over. (The store's own LeaseUntil is not used: a run whose
// store lease lapses reads as interrupted for good, while a spawn
// journal must outlive a writer that crashed, to be resumed.)
type StoreSpawnLog struct {
	st     store.Store
	fence  store.Fence
	ttl    time.Duration
	logger *slog.Logger
	prior  []Record

	mu     sync.Mutex // orders appends, so event ids follow the order
	n      int64      // events this holder appended
	closed bool
	// lost is why the lease was lost, once a renewal or an append was
	// fenced or the lease lapsed unrenewed (see Held); lostCh is closed
	// then (see Lost).
	lost     atomic.Pointer[error]
	lostCh   chan struct{}
	lostOnce sync.Once
	// leaseEnd is when the lease this process last wrote runs out, as
	// nanoseconds after base: past it unrenewed, another process may
	// take the run over. It is kept on the monotonic clock (see until),
	// so a step of the wall clock neither lapses a lease renewed in
	// time nor stretches one that ran out; the store's lease member,
	// which other processes read, stays wall-clock.
	leaseEnd atomic.Int64
	base     time.Time
	// leaseCtx is cancelled, its cause the loss, the moment the lease
	// is lost: every store call of the log derives its context from it
	// (bound), so a call in flight then — into a store that stopped
	// answering — ends at once instead of running out its own timeout.
	leaseCtx context.Context
	cut      context.CancelCauseFunc

	stop chan struct{}
	done chan struct{}
}

// OpenStoreSpawnLog opens (creating or taking over, see StoreSpawnLog)
// the spawn journal of supervised run runID in st.
func OpenStoreSpawnLog(ctx context.Context, st store.Store, runID string, o StoreSpawnLogOptions) (*StoreSpawnLog, error) {
	switch {
	case st == nil:
		return nil, fmt.Errorf("%w: a store spawn journal needs a store", ErrInvalidOptions)
	case runID == "":
		return nil, fmt.Errorf("%w: a store spawn journal needs the run's id", ErrInvalidOptions)
	case o.LeaseTTL != 0 && o.LeaseTTL < kernel.MinLeaseTTL:
		return nil, fmt.Errorf("%w: LeaseTTL %s is below %s", ErrInvalidOptions, o.LeaseTTL, kernel.MinLeaseTTL)
	}
	ttl := o.LeaseTTL
	if ttl == 0 {
		ttl = kernel.DefaultLeaseTTL
	}
	owner := o.Owner
	if owner == "" {
		host, _ := os.Hostname()
		owner = fmt.Sprintf("%s/%d", host, os.Getpid())
	}
	logger := o.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	// Opening is bounded: a store that stops answering fails the open
	// rather than hold a caller that set no deadline. It waits out a
	// holder paused inside a transaction on the run's row, which an
	// append's bound would not.
	ctx, cancel := context.WithTimeout(ctx, spawnLogOpenTimeout(ttl))
	defer cancel()
	run, err := claimSpawnLog(ctx, st, runID, owner, ttl)
	if err != nil {
		return nil, err
	}
	l := &StoreSpawnLog{st: st, fence: run.Fence(), ttl: ttl, logger: logger, lostCh: make(chan struct{}),
		stop: make(chan struct{}), done: make(chan struct{}), base: time.Now()}
	l.leaseCtx, l.cut = context.WithCancelCause(context.Background())
	// The claim's end, read back from the store, has no monotonic
	// reading: it is converted once, against the wall clock of a moment
	// ago, and every renewal after it is monotonic.
	l.extend(leaseOf(run))
	// Renewed while it loads: a journal long enough, or a store slow
	// enough, to outlast the lease being read back would otherwise be
	// taken over by another process from under the one reading it.
	go l.renew()
	if l.prior, err = l.load(ctx); err != nil {
		err = l.failed(err)
		l.Close()
		return nil, err
	}
	if err := l.Held(); err != nil {
		l.Close()
		return nil, fmt.Errorf("supervise: the spawn journal's lease was lost while it was read: %w", err)
	}
	return l, nil
}

// bound is ctx bounded by timeout and by the lease: cancelled, with
// the loss as its cause, once the lease is lost (see leaseCtx).
func (l *StoreSpawnLog) bound(ctx context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancelCause := context.WithCancelCause(ctx)
	ctx, cancelTimeout := context.WithTimeout(ctx, timeout)
	stop := context.AfterFunc(l.leaseCtx, func() { cancelCause(context.Cause(l.leaseCtx)) })
	return ctx, func() {
		stop()
		cancelTimeout()
		cancelCause(nil)
	}
}

// failed is err, a store call's failure, as this process's loss of the
// run where it is one. A refusal by the fence is returned as it is. Any
// other failure — a timeout, a connection that died, a call the lease's
// loss cut (bound) — leaves the call's outcome unknown (a write may have
// committed), and is also the loss (matching ErrSpawnLogLost and
// store.ErrFenced) once the lease as last written has run out: past it
// another process may have taken the run over, as the renewal would
// conclude. A process paused past its lease in the middle of a call
// wakes with the call's timer and the renewal's tick due at once; the
// call's failure must not read as a mere unknown outcome of a run still
// its own.
func (l *StoreSpawnLog) failed(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, store.ErrFenced) {
		l.lose(err)
		return err
	}
	if lapsed := l.lapsed(time.Now()); lapsed != nil {
		l.lose(lapsed)
	}
	if held := l.Held(); held != nil {
		return fmt.Errorf("%w (and %w: %w)", err, ErrSpawnLogLost, held)
	}
	return err
}

// claimSpawnLog creates the log's run or takes it over.
func claimSpawnLog(ctx context.Context, st store.Store, runID, owner string, ttl time.Duration) (store.Run, error) {
	now := time.Now()
	run, err := st.CreateRun(ctx, store.Run{ID: runID, Kind: SpawnLogRunKind, Status: store.StatusRunning,
		CreatedAt: now, UpdatedAt: now, Owner: owner, Doc: withLease(canonjson.ObjectValue(nil), now.Add(ttl))})
	if err == nil {
		return run, nil
	}
	if !errors.Is(err, store.ErrExists) {
		return store.Run{}, fmt.Errorf("supervise: creating the spawn journal's run %s: %w", runID, err)
	}
	run, err = st.UpdateRun(ctx, runID, func(r *store.Run) error {
		now := time.Now()
		switch until := leaseOf(*r); {
		case r.Kind != SpawnLogRunKind:
			return fmt.Errorf("supervise: run %s in the store is a %s run, not a spawn journal", runID, r.Kind)
		case r.Status.Terminal():
			return fmt.Errorf("supervise: the spawn journal's run %s ended as %s and cannot be taken over", runID, r.Status)
		case now.Before(until):
			return fmt.Errorf("%w: %s holds run %s's lease until %s: if that process is still running, let it finish or stop it; if it died, resume again after the lease lapses", ErrSpawnLogHeld, r.Owner, runID, until.UTC().Format(time.RFC3339))
		}
		r.Generation++
		r.Owner, r.Doc = owner, withLease(r.Doc, now.Add(ttl))
		return nil
	})
	if err != nil {
		return store.Run{}, fmt.Errorf("supervise: taking over the spawn journal's run %s: %w", runID, err)
	}
	return run, nil
}

func (l *StoreSpawnLog) load(ctx context.Context) ([]Record, error) {
	var out []Record
	after := ""
	for {
		recs, next, err := ReadStoreSpawnLog(ctx, l.st, l.fence.RunID, after)
		if err != nil {
			return nil, err
		}
		out = append(out, recs...)
		if next == after {
			return out, nil
		}
		after = next
	}
}

// ReadStoreSpawnLog reads, without taking the journal's lease, one page
// (at most a few hundred records) of the spawn journal of supervised run
// runID in st, after cursor after ("" from the start). It returns the
// records and the cursor to read on from; an unchanged cursor means the
// journal holds nothing more yet. A reader following a run on another
// machine (agentrt supervise's progress) pages through it so, each
// record read once. A page the store does not give within
// kernel.DefaultLeaseTTL is an error, whatever ctx's deadline
// (ReadStoreSpawnLogHeld's bound).
func ReadStoreSpawnLog(ctx context.Context, st store.Store, runID, after string) ([]Record, string, error) {
	held, next, err := ReadStoreSpawnLogHeld(ctx, st, runID, after)
	if err != nil {
		return nil, after, err
	}
	out := make([]Record, len(held))
	for i := range held {
		out[i] = held[i].Record
	}
	return out, next, nil
}

// HeldRecord is a record of a store spawn journal with the lease
// generation of the process that appended it (StoreSpawnLog.Fence):
// after a take-over, which holder wrote what.
type HeldRecord struct {
	Record
	// Generation is the appending holder's lease generation; 0 when the
	// event does not say (one not appended by a StoreSpawnLog).
	Generation int64
}

// ReadStoreSpawnLogHeld is ReadStoreSpawnLog with each record's holder:
// a process following its own run (agentrt supervise's progress) tells
// its records from those of a process that took the run over from it
// (RunStart.JournalGeneration).
func ReadStoreSpawnLogHeld(ctx context.Context, st store.Store, runID, after string) ([]HeldRecord, string, error) {
	// A store that stops answering fails the read rather than hold its
	// caller (a --resume's first check, a progress feed) forever.
	ctx, cancel := context.WithTimeout(ctx, spawnLogCallTimeout(kernel.DefaultLeaseTTL))
	defer cancel()
	evs, err := st.Events(ctx, runID, after, spawnLogPage)
	if err != nil {
		return nil, after, fmt.Errorf("supervise: reading the spawn journal's run %s: %w", runID, err)
	}
	out := make([]HeldRecord, len(evs))
	for i, e := range evs {
		if err := canonjson.FromValue(e.Body, &out[i].Record); err != nil {
			return nil, after, fmt.Errorf("supervise: spawn journal event %d of run %s does not decode: %w", e.Sequence, runID, err)
		}
		out[i].Generation = eventGeneration(e.ID)
	}
	if len(evs) > 0 {
		after = evs[len(evs)-1].Cursor
	}
	return out, after, nil
}

// storeJournalName names the store spawn journal of supervised run
// runID where an error names a run dir's journal by its directory.
func storeJournalName(runID string) string { return "run " + runID + " in the store" }

// undecodable reports whether err is a journal row that does not decode:
// not JSON (*canonjson.DecodeError), or JSON that is not a Record
// (*canonjson.UnmarshalError).
func undecodable(err error) bool {
	_, notJSON := errors.AsType[*canonjson.DecodeError](err)
	_, notRecord := errors.AsType[*canonjson.UnmarshalError](err)
	return notJSON || notRecord
}

// spawnEventID is the id of the n-th event the holder of lease
// generation gen appends: unique across holders, and naming its writer
// (eventGeneration).
func spawnEventID(gen, n int64) string { return fmt.Sprintf("g%d.%d", gen, n) }

// eventGeneration is the lease generation a spawnEventID names; 0 for
// an id of another form.
func eventGeneration(id string) int64 {
	rest, ok := strings.CutPrefix(id, "g")
	if !ok {
		return 0
	}
	g, _, ok := strings.Cut(rest, ".")
	if !ok {
		return 0
	}
	n, err := strconv.ParseInt(g, 10, 64)
	if err != nil || n < 1 {
		return 0
	}
	return n
}

// Held returns nil while this process holds the log's lease, and why not
// (matching store.ErrFenced) once a renewal or an append found it taken
// over or lapsed: from then on nothing this process writes for the run
// may land.
func (l *StoreSpawnLog) Held() error {
	if err := l.lost.Load(); err != nil {
		return *err
	}
	return nil
}

// current is Held, and also the loss once the lease as this process
// last wrote it ran out by its own clock (it was paused past it, or its
// renewals failed), before a renewal found out: from then on another
// process may hold the run, so nothing outside the journal may be done
// for it. The lapse is recorded as the loss (Lost is closed).
func (l *StoreSpawnLog) current(now time.Time) error {
	if err := l.Held(); err != nil {
		return err
	}
	if lapsed := l.lapsed(now); lapsed != nil {
		l.lose(lapsed)
		return l.Held()
	}
	return nil
}

// Lost is closed once this process lost the log's lease (Held says
// why): another process took the run over, or the lease ran out before
// a renewal could land. Supervise stops the run's brain and workers
// then, since the run is no longer this process's to drive.
func (l *StoreSpawnLog) Lost() <-chan struct{} { return l.lostCh }

// lose records that the lease is lost, when err says so.
func (l *StoreSpawnLog) lose(err error) {
	if errors.Is(err, store.ErrFenced) && l.lost.CompareAndSwap(nil, &err) {
		l.lostOnce.Do(func() {
			close(l.lostCh)
			l.cut(fmt.Errorf("%w: %w", ErrSpawnLogLost, err))
		})
	}
}

// lapsed reports, as a *store.FenceError of reason store.FenceLapsed,
// that the lease this process last wrote has run out; nil while it
// lasts.
func (l *StoreSpawnLog) lapsed(now time.Time) error {
	until := l.until()
	if now.Before(until) {
		return nil
	}
	return &store.FenceError{RunID: l.fence.RunID, Generation: l.fence.Generation, Current: l.fence.Generation,
		Reason: store.FenceLapsed, Status: store.StatusRunning, LeaseUntil: until.Round(0)}
}

// until is when the lease, as last written, runs out, with a monotonic
// reading (comparisons with time.Now ignore wall-clock steps).
func (l *StoreSpawnLog) until() time.Time { return l.base.Add(time.Duration(l.leaseEnd.Load())) }

// extend records a lease written to last until until, a time.Now()-based
// instant; an earlier end than the one recorded is ignored.
func (l *StoreSpawnLog) extend(until time.Time) {
	d := int64(until.Sub(l.base))
	for {
		old := l.leaseEnd.Load()
		if d <= old || l.leaseEnd.CompareAndSwap(old, d) {
			return
		}
	}
}

// Confirm renews the lease now, fenced, and returns nil when this
// process still holds the log, or the refusal (matching store.ErrFenced)
// once another process took it over: what a holder asks before an
// effect outside the journal, such as delivering the run's result. A
// renewal that fails for another reason (the store did not answer) is
// returned too, unchanged.
func (l *StoreSpawnLog) Confirm(ctx context.Context) error {
	if err := l.Held(); err != nil {
		return err
	}
	l.mu.Lock()
	closed := l.closed
	l.mu.Unlock()
	if closed {
		return fmt.Errorf("supervise: confirming the spawn journal's lease: %w", journal.ErrClosed)
	}
	ctx, cancel := l.bound(ctx, max(l.ttl/3, time.Second))
	defer cancel()
	until := time.Now().Add(l.ttl)
	if _, err := l.st.UpdateFenced(ctx, l.fence, func(r *store.Run) error {
		r.Doc = withLease(r.Doc, until)
		return nil
	}); err != nil {
		return fmt.Errorf("supervise: confirming the spawn journal's lease: %w", l.failed(err))
	}
	l.extend(until)
	return nil
}

// putRecord sets the run record (RunRecordMember) of the journal's run
// to v, fenced: a holder that lost the run writes nothing.
func (l *StoreSpawnLog) putRecord(ctx context.Context, v canonjson.Value) error {
	if err := l.Held(); err != nil {
		return err
	}
	ctx, cancel := l.bound(ctx, spawnLogCallTimeout(l.ttl))
	defer cancel()
	_, err := l.st.UpdateFenced(ctx, l.fence, func(r *store.Run) error {
		r.Doc = r.Doc.With(RunRecordMember, v)
		return nil
	})
	return l.failed(err)
}

// blobScope is the store scope of a store spawn log's result blobs: one
// idempotency record per run and blob (key "<runID>/<ref>", request
// digest the ref, result the blob), so a run resumed on another machine,
// with another run dir, reads its settled workers' outputs back.
const blobScope = "supervise.blob"

// PutBlob stores result blob v under its ref (its canonical digest) with
// the run's journal, fenced by nothing (a blob is content-addressed:
// writing it twice, or by a former holder, writes the same bytes). It is
// bounded as an append is.
func (l *StoreSpawnLog) PutBlob(ctx context.Context, ref string, v canonjson.Value) error {
	ctx, cancel := l.bound(ctx, spawnLogCallTimeout(l.ttl))
	defer cancel()
	rec := store.Idempotency{Scope: blobScope, Key: l.fence.RunID + "/" + ref, RequestDigest: ref, Result: v, CreatedAt: time.Now()}
	got, _, err := l.st.ClaimIdempotency(ctx, rec)
	if err != nil {
		return fmt.Errorf("supervise: storing result blob %s: %w", ref, l.failed(err))
	}
	if got.RequestDigest != ref {
		return fmt.Errorf("supervise: result blob %s: the store holds another blob under its name", ref)
	}
	return nil
}

// GetBlob reads result blob ref of the run back; a blob the store does
// not hold is fs.ErrNotExist.
func (l *StoreSpawnLog) GetBlob(ctx context.Context, ref string) (canonjson.Value, error) {
	ctx, cancel := l.bound(ctx, spawnLogCallTimeout(l.ttl))
	defer cancel()
	key := l.fence.RunID + "/" + ref
	recs, err := l.st.ListIdempotency(ctx, store.IdempotencyQuery{Scope: blobScope, KeyPrefix: key, Limit: 1})
	if err != nil {
		return canonjson.Value{}, fmt.Errorf("supervise: reading result blob %s: %w", ref, l.failed(err))
	}
	if len(recs) == 0 || recs[0].Key != key {
		return canonjson.Value{}, fs.ErrNotExist
	}
	return recs[0].Result, nil
}

// Fence is the lease this log holds.
func (l *StoreSpawnLog) Fence() store.Fence { return l.fence }

// Records returns the records the run held when the log was opened.
func (l *StoreSpawnLog) Records(context.Context) ([]Record, error) { return l.prior, nil }

// Append appends recs as events of the log's run, fenced by its lease.
func (l *StoreSpawnLog) Append(ctx context.Context, recs ...Record) error {
	if len(recs) == 0 {
		return nil
	}
	vals, err := recordValues(recs)
	if err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return fmt.Errorf("supervise: journal append: %w", journal.ErrClosed)
	}
	if err := l.Held(); err != nil {
		// Known lost: the store would refuse it, or not answer.
		return fmt.Errorf("supervise: journal append: %w", err)
	}
	now := time.Now()
	evs := make([]store.NewEvent, len(recs))
	for i, r := range recs {
		evs[i] = store.NewEvent{ID: spawnEventID(l.fence.Generation, l.n+int64(i)+1), Type: r.Kind, Time: now, Body: vals[i]}
	}
	// The ids are spent whether or not the append lands: one whose
	// outcome is unknown (a timeout after the store committed) must not
	// be reused, or every later append would fail as a duplicate.
	l.n += int64(len(recs))
	// A store that stops answering fails the append rather than hold
	// the run: a spawn not journaled is not started. The lease's loss
	// cuts it at once (bound): its outcome is then unknown, as a
	// timeout's is — a resume reads back whatever did commit.
	ctx, cancel := l.bound(ctx, spawnLogCallTimeout(l.ttl))
	defer cancel()
	if _, err := l.st.AppendEvents(ctx, l.fence, evs); err != nil {
		return fmt.Errorf("supervise: journal append: %w", l.failed(err))
	}
	return nil
}

// spawnLogCallTimeout bounds each of a store spawn journal's appends
// and reads, for a lease of ttl.
func spawnLogCallTimeout(ttl time.Duration) time.Duration {
	return max(ttl, kernel.DefaultCleanupTimeout)
}

// pausedHolderWait is how long opening a store spawn journal may wait on
// a holder paused (SIGSTOP, a frozen VM) inside a transaction that
// locked the journal's run: longer than a store keeps such a holder's
// locks (PostgreSQL ends its session after
// pgdb.IdleInTransactionTimeout, 8 s), so a take-over on a short lease
// waits the paused holder out instead of failing before its lock goes.
const pausedHolderWait = 10 * time.Second

// spawnLogOpenTimeout bounds opening (creating or taking over, then
// reading) a store spawn journal for a lease of ttl.
func spawnLogOpenTimeout(ttl time.Duration) time.Duration {
	return spawnLogCallTimeout(ttl) + pausedHolderWait
}

// renew extends the lease every third of its TTL until Close. A renewal
// the fence refuses ends it, and so does a lease that ran out while
// renewals failed (a store that stopped answering, a network cut): past
// it another process may have taken the run over, so this one gives it
// up as the kernel does a run's (appends fail from then on, and Lost is
// closed).
func (l *StoreSpawnLog) renew() {
	defer close(l.done)
	t := time.NewTicker(l.ttl / 3)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
		}
		if l.Held() != nil {
			return // an append or a confirmation found it lost
		}
		until := time.Now().Add(l.ttl)
		err := l.setLease(until, l.ttl/3)
		if err == nil {
			l.extend(until)
			continue
		}
		if !errors.Is(err, store.ErrFenced) {
			l.logger.Warn("supervise: renewing the spawn journal's lease", "run", l.fence.RunID, "err", err)
			if lapsed := l.lapsed(time.Now()); lapsed != nil {
				err = lapsed
			}
		}
		if errors.Is(err, store.ErrFenced) {
			l.lose(err)
			l.logger.Error("supervise: the spawn journal's lease was lost", "run", l.fence.RunID, "err", err)
			return
		}
	}
}

// Close stops renewing the lease and releases it, so the next owner
// takes the run over at once; a lease already lost is left as it is,
// with no store call.
func (l *StoreSpawnLog) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	l.mu.Unlock()
	close(l.stop)
	<-l.done
	err := l.release()
	l.cut(journal.ErrClosed)
	return err
}

// release ends the lease now (a fenced write, so a holder that already
// lost the run changes nothing). A lease already known lost (fenced, or
// lapsed while the store did not answer) is not released: the store
// would refuse the write, and one that stopped answering would hold the
// process for the call's whole timeout.
func (l *StoreSpawnLog) release() error {
	if l.Held() != nil {
		return nil
	}
	if err := l.setLease(time.Time{}, kernel.DefaultCleanupTimeout); err != nil && !errors.Is(err, store.ErrFenced) {
		return fmt.Errorf("supervise: releasing the spawn journal's lease: %w", err)
	}
	return nil
}

// setLease writes the lease under the holder's fence, within timeout.
func (l *StoreSpawnLog) setLease(until time.Time, timeout time.Duration) error {
	ctx, cancel := l.bound(context.Background(), timeout)
	defer cancel()
	_, err := l.st.UpdateFenced(ctx, l.fence, func(r *store.Run) error {
		r.Doc = withLease(r.Doc, until)
		return nil
	})
	return err
}
