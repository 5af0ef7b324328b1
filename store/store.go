package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentrt/agentrt/canonjson"
)

// Status is a run's lifecycle state. Pending and Running are live; the
// rest are terminal and exactly one of them ends every run.
type Status string

// Run statuses.
const (
	StatusPending   Status = "pending"
	StatusRunning   Status = "running"
	StatusCompleted Status = "completed"
	StatusFailed    Status = "failed"
	StatusCancelled Status = "cancelled"
	StatusTimedOut  Status = "timed_out"
	// StatusInterrupted marks a run whose process died before it reached a
	// terminal state: its owner's lease expired. It is never "completed".
	StatusInterrupted Status = "interrupted"
)

// Terminal reports whether s ends a run.
func (s Status) Terminal() bool {
	switch s {
	case StatusCompleted, StatusFailed, StatusCancelled, StatusTimedOut, StatusInterrupted:
		return true
	}
	return false
}

// Valid reports whether s is a known status.
func (s Status) Valid() bool { return s == StatusPending || s == StatusRunning || s.Terminal() }

// Run is a run record.
type Run struct {
	ID string
	// Kind names the front door that created the run (execute, rounds,
	// toolloop, …).
	Kind      string
	Status    Status
	CreatedAt time.Time
	UpdatedAt time.Time
	// Revision increases with every update; Update refuses a stale one.
	Revision int64
	// Generation is the run's lease generation: 1 when it is created,
	// raised by whoever takes over a lapsed run. A lease holder's writes
	// name the generation they were granted under (a Fence), and the
	// store refuses them once another generation, a lapsed lease or a
	// terminal status says the holder no longer owns the run.
	Generation int64
	// Owner identifies the process driving a live run, and LeaseUntil
	// when its claim lapses unless renewed. A live run whose lease lapsed
	// is reported as StatusInterrupted.
	Owner      string
	LeaseUntil time.Time
	// Doc is the run's document: what was requested, what ran, what was
	// observed. The store keeps it as canonical JSON.
	Doc canonjson.Value
}

// Event is one durable event of a run.
type Event struct {
	RunID string
	// Sequence numbers a run's events 1, 2, 3… without gaps.
	Sequence int64
	// Cursor is an opaque position: replaying after it yields the events
	// that follow.
	Cursor string
	// ID is the event's own id (unique within the run).
	ID   string
	Type string
	Time time.Time
	Body canonjson.Value
}

// NewEvent is an event to append; the store assigns its sequence and
// cursor.
type NewEvent struct {
	ID   string
	Type string
	Time time.Time
	Body canonjson.Value
}

// LedgerEntry is one durable cost-ledger entry of a run.
type LedgerEntry struct {
	RunID    string
	Sequence int64
	Time     time.Time
	Body     canonjson.Value
}

// Idempotency is the record of one idempotent operation: the key, the
// canonical digest of the request that first used it, and its result.
type Idempotency struct {
	Scope         string
	Key           string
	RequestDigest string
	Result        canonjson.Value
	CreatedAt     time.Time
}

// IdempotencyKey names one idempotency record.
type IdempotencyKey struct {
	Scope string
	Key   string
}

// IdempotencyQuery selects the idempotency records of one scope for
// ListIdempotency.
type IdempotencyQuery struct {
	// Scope is required.
	Scope string
	// KeyPrefix, when set, selects only keys that start with it (byte
	// for byte).
	KeyPrefix string
	// Before, when set, selects only records created before it.
	Before time.Time
	// Limit is 1..MaxIdempotencyBatch.
	Limit int
}

// IdempotencyCounter is a Store that counts its idempotency records, so
// that a caller can bound them by number as well as by age (the
// memory, SQLite and PostgreSQL stores are).
type IdempotencyCounter interface {
	// CountIdempotency returns how many records of q.Scope have a key
	// starting with q.KeyPrefix and, when q.Before is set, were created
	// before it. q.Limit is not used.
	CountIdempotency(ctx context.Context, q IdempotencyQuery) (int64, error)
}

// MaxIdempotencyBatch bounds one ListIdempotency answer and one
// DeleteIdempotency call, so that each costs a bounded transaction.
const MaxIdempotencyBatch = 1000

// ListOptions filters ListRuns. The zero value lists the newest runs.
type ListOptions struct {
	Status Status
	// Kind, when set, lists only runs of that kind (Run.Kind).
	Kind  string
	Limit int
}

// Store is durable run state. Implementations are safe for concurrent use
// by many goroutines and, for the database adapters, many processes.
type Store interface {
	// CreateRun stores a new run with Revision 1 and, when r.Generation
	// is 0, lease generation 1. A run with the same id is ErrExists.
	CreateRun(ctx context.Context, r Run) (Run, error)
	// GetRun returns a run, reporting a live run whose lease lapsed as
	// StatusInterrupted. A missing run is ErrNotFound.
	GetRun(ctx context.Context, id string) (Run, error)
	// UpdateRun applies fn to the current run and stores the result if
	// nobody updated it in between (compare-and-set on Revision); fn may be
	// called more than once. A terminal run cannot change status.
	UpdateRun(ctx context.Context, id string, fn func(*Run) error) (Run, error)
	// ListRuns returns runs, newest first.
	ListRuns(ctx context.Context, opts ListOptions) ([]Run, error)
	// DeleteRun removes an ended run (Effective status terminal) with its
	// events and ledger entries, at once. A missing run is ErrNotFound; a
	// live one is refused (ErrInvalid) and nothing is removed.
	DeleteRun(ctx context.Context, id string) error
	// UpdateFenced is UpdateRun for the run's lease holder: it applies fn
	// and stores the result only while f holds (CheckFence), atomically
	// with the write; otherwise it returns a *FenceError and changes
	// nothing.
	UpdateFenced(ctx context.Context, f Fence, fn func(*Run) error) (Run, error)
	// AppendEvents durably appends events to the fenced run in order and
	// returns them with their sequences and cursors. Nothing is visible
	// to readers before it is durable. An event id already in the run is
	// ErrExists, a fence that no longer holds is a *FenceError, and then
	// nothing is appended.
	AppendEvents(ctx context.Context, f Fence, events []NewEvent) ([]Event, error)
	// Events returns up to limit events of a run after cursor ("" for the
	// beginning), in sequence order.
	Events(ctx context.Context, runID, after string, limit int) ([]Event, error)
	// AppendLedger durably appends cost-ledger entries to the fenced run;
	// a fence that no longer holds is a *FenceError and nothing is
	// appended.
	AppendLedger(ctx context.Context, f Fence, bodies []canonjson.Value, at time.Time) ([]LedgerEntry, error)
	// Ledger returns a run's ledger entries in order.
	Ledger(ctx context.Context, runID string) ([]LedgerEntry, error)
	// ClaimIdempotency records rec if (Scope, Key) is new and returns it
	// with created true. Otherwise it returns the existing record: the
	// caller compares RequestDigest to tell a replay from a conflict.
	ClaimIdempotency(ctx context.Context, rec Idempotency) (existing Idempotency, created bool, err error)
	// ListIdempotency returns up to q.Limit records of q.Scope whose key
	// starts with q.KeyPrefix and, when q.Before is set, that were
	// created before it: oldest first (by creation time, then key).
	ListIdempotency(ctx context.Context, q IdempotencyQuery) ([]Idempotency, error)
	// DeleteIdempotency removes the named records at once (all of them
	// or, on error, none) and returns how many of them existed; a name
	// with no record is no error. It takes at most MaxIdempotencyBatch
	// names.
	DeleteIdempotency(ctx context.Context, keys []IdempotencyKey) (int, error)
	// Close releases the store.
	Close() error
}

// Errors every adapter returns (wrapped) for these conditions.
var (
	ErrNotFound = errors.New("store: not found")
	ErrExists   = errors.New("store: already exists")
	ErrConflict = errors.New("store: concurrent update")
	ErrTerminal = errors.New("store: run already ended")
	ErrInvalid  = errors.New("store: invalid record")
	// ErrUnknownOutcome: the caller's context ended, or the connection
	// to the database died, while the write was being committed; it may
	// or may not have been stored.
	ErrUnknownOutcome = errors.New("store: the write's outcome is unknown")
	// ErrClosed is a write that reached a store after (or while) it
	// was closed; nothing of it was written.
	ErrClosed = errors.New("store: closed")
)

// Fence is a lease holder's claim on a live run: the run and the lease
// generation it was granted. A fenced write succeeds only while the run
// is live, still in that generation, and its lease has not lapsed.
type Fence struct {
	RunID      string
	Generation int64
}

// Fence returns the claim of whoever holds r's current lease.
func (r Run) Fence() Fence { return Fence{RunID: r.ID, Generation: r.Generation} }

// ErrFenced matches every *FenceError.
var ErrFenced = errors.New("store: the lease no longer holds")

// Why a fence no longer holds (FenceError.Reason).
const (
	// FenceLapsed: the lease expired before the write; readers already
	// see the run interrupted.
	FenceLapsed = "lapsed"
	// FenceSuperseded: another holder took the run over (a newer
	// generation).
	FenceSuperseded = "superseded"
	// FenceEnded: the run already reached a terminal status.
	FenceEnded = "ended"
)

// FenceError is the refusal of a write by a holder that no longer owns
// the run. errors.Is(err, ErrFenced) matches it.
type FenceError struct {
	RunID string
	// Generation is the writer's; Current the run's.
	Generation, Current int64
	// Reason is FenceLapsed, FenceSuperseded or FenceEnded.
	Reason string
	// Status is the run's status as readers see it.
	Status Status
	// LeaseUntil is when the run's lease lapsed (or lapses).
	LeaseUntil time.Time
}

func (e *FenceError) Error() string {
	switch e.Reason {
	case FenceLapsed:
		return fmt.Sprintf("run %s: the lease of generation %d lapsed at %s; the run is %s", e.RunID, e.Generation, e.LeaseUntil.UTC().Format(time.RFC3339Nano), e.Status)
	case FenceSuperseded:
		return fmt.Sprintf("run %s: generation %d was superseded by generation %d", e.RunID, e.Generation, e.Current)
	}
	return fmt.Sprintf("run %s already ended as %s", e.RunID, e.Status)
}

// Is makes errors.Is(err, ErrFenced) match.
func (e *FenceError) Is(target error) bool { return target == ErrFenced }

// CheckFence reports whether f still holds on r at now: nil, or the
// *FenceError saying why not. r may be as stored or as GetRun reports it
// (a lapsed lease read as interrupted is still reported lapsed).
// Adapters call it inside the transaction (or under the lock) of a
// fenced write.
func CheckFence(r Run, f Fence, now time.Time) error {
	e := &FenceError{RunID: r.ID, Generation: f.Generation, Current: r.Generation, Status: Effective(r, now), LeaseUntil: r.LeaseUntil}
	lapsed := !r.LeaseUntil.IsZero() && now.After(r.LeaseUntil)
	switch {
	case r.Generation != f.Generation:
		e.Reason = FenceSuperseded
	case r.Status.Terminal() && !(r.Status == StatusInterrupted && lapsed):
		e.Reason = FenceEnded
	case lapsed:
		e.Reason = FenceLapsed
	default:
		return nil
	}
	return e
}

// CursorFor returns the cursor of sequence seq. Cursors are opaque to
// callers; this spelling keeps them ordered as strings too.
func CursorFor(seq int64) string { return fmt.Sprintf("c%019d", seq) }

// ParseCursor returns the sequence a cursor names ("" is 0).
func ParseCursor(c string) (int64, error) {
	if c == "" {
		return 0, nil
	}
	if !strings.HasPrefix(c, "c") || len(c) != 20 {
		return 0, fmt.Errorf("%w: malformed cursor %q", ErrInvalid, c)
	}
	n, err := strconv.ParseInt(c[1:], 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%w: malformed cursor %q", ErrInvalid, c)
	}
	return n, nil
}

// Effective returns the status a reader should see: a live run whose
// lease lapsed before now is interrupted.
func Effective(r Run, now time.Time) Status {
	if (r.Status == StatusRunning || r.Status == StatusPending) && !r.LeaseUntil.IsZero() && now.After(r.LeaseUntil) {
		return StatusInterrupted
	}
	return r.Status
}

// CheckDelete refuses the deletion of r at now unless it ended
// (Effective status terminal). Adapters call it inside DeleteRun's
// transaction (or under its lock).
func CheckDelete(r Run, now time.Time) error {
	if st := Effective(r, now); !st.Terminal() {
		return fmt.Errorf("run %s is %s: %w: only an ended run can be deleted", r.ID, st, ErrInvalid)
	}
	return nil
}

// CheckUpdate validates an update of before into after: the identity and
// history fields are fixed, the status is known, and a terminal run keeps
// its status. Adapters call it inside UpdateRun.
func CheckUpdate(before, after Run) error {
	if after.ID != before.ID || after.Kind != before.Kind || !after.CreatedAt.Equal(before.CreatedAt) {
		return fmt.Errorf("%w: a run's id, kind and creation time cannot change", ErrInvalid)
	}
	if !after.Status.Valid() {
		return fmt.Errorf("%w: unknown status %q", ErrInvalid, after.Status)
	}
	if err := checkText("run owner", after.Owner); err != nil {
		return err
	}
	if before.Status.Terminal() && after.Status != before.Status {
		return fmt.Errorf("%w: %s run %s cannot become %s", ErrTerminal, before.Status, before.ID, after.Status)
	}
	if after.Generation < before.Generation {
		return fmt.Errorf("%w: run %s's lease generation cannot go back from %d to %d", ErrInvalid, before.ID, before.Generation, after.Generation)
	}
	return nil
}

// CheckNew validates a run before CreateRun.
func CheckNew(r Run) error {
	if r.ID == "" || r.Kind == "" {
		return fmt.Errorf("%w: a run needs an id and a kind", ErrInvalid)
	}
	if err := checkText("run id", r.ID, "run kind", r.Kind, "run owner", r.Owner); err != nil {
		return err
	}
	if r.Generation < 0 {
		return fmt.Errorf("%w: run %s has a negative lease generation", ErrInvalid, r.ID)
	}
	if !r.Status.Valid() {
		return fmt.Errorf("%w: unknown status %q", ErrInvalid, r.Status)
	}
	if r.Doc.IsValid() {
		if err := canonjson.Check(r.Doc); err != nil {
			return fmt.Errorf("%w: run document: %w", ErrInvalid, err)
		}
	}
	return nil
}

// smallBatch is the longest batch CheckEvents searches for a repeated
// id without a set.
const smallBatch = 16

// CheckEvents validates events before AppendEvents: ids and types set,
// unique within the batch, bodies canonical JSON.
func CheckEvents(events []NewEvent) error {
	// A short batch (the usual one) is searched in place; a long one
	// through a set, so the check stays linear in the batch.
	var seen map[string]struct{}
	if len(events) > smallBatch {
		seen = make(map[string]struct{}, len(events))
	}
	for i, e := range events {
		if e.ID == "" || e.Type == "" {
			return fmt.Errorf("%w: event %d needs an id and a type", ErrInvalid, i)
		}
		if err := checkText("event id", e.ID, "event type", e.Type); err != nil {
			return err
		}
		dup := false
		if seen != nil {
			_, dup = seen[e.ID]
			seen[e.ID] = struct{}{}
		} else {
			dup = slices.ContainsFunc(events[:i], func(x NewEvent) bool { return x.ID == e.ID })
		}
		if dup {
			return fmt.Errorf("%w: event id %q appears twice in one append", ErrExists, e.ID)
		}
		if err := canonjson.Check(e.Body); err != nil {
			return fmt.Errorf("%w: event %q body: %w", ErrInvalid, e.ID, err)
		}
	}
	return nil
}

// checkText refuses, as ErrInvalid, a name no store can hold the same
// way: text that is not valid UTF-8 or holds a NUL byte (PostgreSQL's
// text refuses both, so SQLite and memory refuse them too). Its
// arguments are pairs of what the text names and the text.
func checkText(pairs ...string) error {
	for i := 0; i+1 < len(pairs); i += 2 {
		if v := pairs[i+1]; !utf8.ValidString(v) || strings.IndexByte(v, 0) >= 0 {
			return fmt.Errorf("%w: the %s %q is not valid UTF-8 text without NUL bytes", ErrInvalid, pairs[i], v)
		}
	}
	return nil
}

// CheckIdempotency validates a record before ClaimIdempotency.
func CheckIdempotency(rec Idempotency) error {
	if rec.Scope == "" || rec.Key == "" || !canonjson.IsDigest(rec.RequestDigest) {
		return fmt.Errorf("%w: an idempotency record needs a scope, a key and a sha256 request digest", ErrInvalid)
	}
	if err := checkText("idempotency scope", rec.Scope, "idempotency key", rec.Key); err != nil {
		return err
	}
	if rec.Result.IsValid() {
		if err := canonjson.Check(rec.Result); err != nil {
			return fmt.Errorf("%w: idempotency result: %w", ErrInvalid, err)
		}
	}
	return nil
}

// CheckIdempotencyQuery validates a query before ListIdempotency.
func CheckIdempotencyQuery(q IdempotencyQuery) error {
	if q.Scope == "" || q.Limit < 1 || q.Limit > MaxIdempotencyBatch {
		return fmt.Errorf("%w: an idempotency query needs a scope and a limit of 1..%d (got %d)", ErrInvalid, MaxIdempotencyBatch, q.Limit)
	}
	return nil
}

// CheckIdempotencyKeys validates the names before DeleteIdempotency.
func CheckIdempotencyKeys(keys []IdempotencyKey) error {
	if len(keys) > MaxIdempotencyBatch {
		return fmt.Errorf("%w: %d idempotency records in one delete, more than %d", ErrInvalid, len(keys), MaxIdempotencyBatch)
	}
	for i, k := range keys {
		if k.Scope == "" || k.Key == "" {
			return fmt.Errorf("%w: idempotency record %d to delete needs a scope and a key", ErrInvalid, i)
		}
		if err := checkText("idempotency scope", k.Scope, "idempotency key", k.Key); err != nil {
			return err
		}
	}
	return nil
}
