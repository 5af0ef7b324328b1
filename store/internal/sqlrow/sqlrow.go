package sqlrow

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/store"
)

// Scanner is one row: *sql.Row, *sql.Rows, pgx.Row and pgx.Rows all are.
type Scanner interface{ Scan(dest ...any) error }

// Rows is a result set: *sql.Rows and pgx.Rows both are.
type Rows interface {
	Scanner
	Next() bool
	Err() error
}

// Nanos stores an instant as Unix nanoseconds; the zero time is 0.
func Nanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// FromNanos reads an instant stored by Nanos, in UTC.
func FromNanos(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

// Encode stores a document as its canonical JSON text; an absent (invalid)
// value is NULL (nil).
func Encode(v canonjson.Value) (*string, error) {
	if !v.IsValid() {
		return nil, nil
	}
	b, err := canonjson.Canonical(v)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", store.ErrInvalid, err)
	}
	text := string(b)
	return &text, nil
}

// Decode reads a document stored by Encode.
func Decode(text *string) (canonjson.Value, error) {
	if text == nil {
		return canonjson.Value{}, nil
	}
	return canonjson.Decode([]byte(*text))
}

// CanonicalTexts encodes ledger bodies, refusing any that has no
// canonical form before anything is written.
func CanonicalTexts(bodies []canonjson.Value) ([]string, error) {
	texts := make([]string, len(bodies))
	for i, b := range bodies {
		c, err := canonjson.Canonical(b)
		if err != nil {
			return nil, fmt.Errorf("%w: ledger entry %d: %w", store.ErrInvalid, i, err)
		}
		texts[i] = string(c)
	}
	return texts, nil
}

// RunColumns are the run columns ScanRun reads, in order.
const RunColumns = `id, kind, status, created_at, updated_at, revision, owner, lease_until, doc, generation`

// ScanRun reads a run selected with RunColumns; adapter names the
// database in errors.
func ScanRun(row Scanner, adapter string) (store.Run, error) {
	var r store.Run
	var status string
	var created, updated, lease int64
	var doc *string
	if err := row.Scan(&r.ID, &r.Kind, &status, &created, &updated, &r.Revision, &r.Owner, &lease, &doc, &r.Generation); err != nil {
		return store.Run{}, err
	}
	r.Status = store.Status(status)
	r.CreatedAt, r.UpdatedAt, r.LeaseUntil = FromNanos(created), FromNanos(updated), FromNanos(lease)
	var err error
	if r.Doc, err = Decode(doc); err != nil {
		return store.Run{}, fmt.Errorf("%s: run %s document: %w", adapter, r.ID, err)
	}
	return r, nil
}

// ScanEvents reads events selected as (seq, id, type, time, body).
func ScanEvents(rows Rows, runID, adapter string) ([]store.Event, error) {
	var out []store.Event
	for rows.Next() {
		e := store.Event{RunID: runID}
		var t int64
		var body string
		if err := rows.Scan(&e.Sequence, &e.ID, &e.Type, &t, &body); err != nil {
			return nil, fmt.Errorf("%s: events: %w", adapter, err)
		}
		e.Cursor, e.Time = store.CursorFor(e.Sequence), time.Unix(0, t).UTC()
		var err error
		if e.Body, err = canonjson.Decode([]byte(body)); err != nil {
			return nil, fmt.Errorf("%s: event %d body: %w", adapter, e.Sequence, err)
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

// ScanLedger reads ledger entries selected as (seq, time, body).
func ScanLedger(rows Rows, runID, adapter string) ([]store.LedgerEntry, error) {
	var out []store.LedgerEntry
	for rows.Next() {
		e := store.LedgerEntry{RunID: runID}
		var t int64
		var body string
		if err := rows.Scan(&e.Sequence, &t, &body); err != nil {
			return nil, fmt.Errorf("%s: ledger: %w", adapter, err)
		}
		e.Time = time.Unix(0, t).UTC()
		var err error
		if e.Body, err = canonjson.Decode([]byte(body)); err != nil {
			return nil, fmt.Errorf("%s: ledger entry %d: %w", adapter, e.Sequence, err)
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

// maxUpdateAttempts bounds UpdateRun's retries under contention.
const maxUpdateAttempts = 1000

// Write stores next over cur: only if the row's revision is still cur's
// and, when fenced, the lease has not lapsed at now (lease_until is 0 or
// at least now) — it reports whether it did.
type Write func(cur, next store.Run, doc *string, fenced bool, now time.Time) (bool, error)

// UpdateRun is the optimistic update of both SQL adapters: read the run
// with get, check the fence f when it is not nil (store.CheckFence),
// apply fn, check the update (store.CheckUpdate), stamp the next revision
// and time, and store it with write; when write did not store it, read
// again (store.ErrConflict after maxUpdateAttempts).
func UpdateRun(ctx context.Context, id string, f *store.Fence, now func() time.Time,
	get func(ctx context.Context, id string) (store.Run, error), fn func(*store.Run) error, write Write) (store.Run, error) {
	for attempt := 0; ; attempt++ {
		cur, err := get(ctx, id)
		if err != nil {
			return store.Run{}, err
		}
		at := now()
		if f != nil {
			if err := store.CheckFence(cur, *f, at); err != nil {
				return store.Run{}, err
			}
		}
		next := cur
		if err := fn(&next); err != nil {
			return store.Run{}, err
		}
		if err := store.CheckUpdate(cur, next); err != nil {
			return store.Run{}, err
		}
		doc, err := Encode(next.Doc)
		if err != nil {
			return store.Run{}, err
		}
		next.Revision = cur.Revision + 1
		next.UpdatedAt = at.UTC()
		// The lease is checked again by the write itself, at the latest
		// instant this process can name.
		written, err := write(cur, next, doc, f != nil, now())
		if err != nil {
			return store.Run{}, err
		}
		if written {
			return next, nil
		}
		if attempt >= maxUpdateAttempts {
			return store.Run{}, fmt.Errorf("run %s: %w", id, store.ErrConflict)
		}
		if err := ctx.Err(); err != nil {
			return store.Run{}, err
		}
	}
}

// LeaseHolds is the SQL condition, over a parameter holding now in Unix
// nanoseconds, that a run's lease has not lapsed.
func LeaseHolds(param string) string { return `(lease_until = 0 OR lease_until >= ` + param + `)` }

// CheckFenced reads the fence columns of a run locked for writing (its
// status, generation and lease) and checks f at now; a missing run is
// store.ErrNotFound.
func CheckFenced(row Scanner, f store.Fence, now time.Time, adapter string, notFound error) error {
	var status string
	var gen, lease int64
	if err := row.Scan(&status, &gen, &lease); err != nil {
		if errors.Is(err, notFound) {
			return fmt.Errorf("run %s: %w", f.RunID, store.ErrNotFound)
		}
		return fmt.Errorf("%s: %w", adapter, err)
	}
	return Fenced(f, status, gen, lease, now)
}

// Fenced checks f at now against a run's stored fence columns: its
// status, generation and lease_until.
func Fenced(f store.Fence, status string, generation, leaseUntil int64, now time.Time) error {
	r := store.Run{ID: f.RunID, Status: store.Status(status), Generation: generation, LeaseUntil: FromNanos(leaseUntil)}
	return store.CheckFence(r, f, now)
}

// Head is what a batch of appends needs to know of one run, read while
// the run is locked for writing: its fence columns and its last event
// sequence.
type Head struct {
	Status                 string
	Generation, LeaseUntil int64
	Last                   int64
}

// Append is one AppendEvents call in a batch: the writer's fence, the
// events, and their canonical bodies.
type Append struct {
	Fence  store.Fence
	Events []store.NewEvent
	Bodies []string
}

// EventKey names an event within its run.
type EventKey struct{ RunID, ID string }

// PlanAppends decides, in order, each append of a batch whose runs are
// locked: it fails one whose run is missing from heads
// (store.ErrNotFound), whose fence does not hold at now (a
// *store.FenceError), or that repeats an event id already stored
// (stored) or appended earlier in the batch (store.ErrExists), and gives
// the others consecutive sequences after their run's last. It returns
// each append's first sequence (0 if it failed) and error, and updates
// heads' Last.
func PlanAppends(batch []Append, heads map[string]*Head, stored map[EventKey]bool, now time.Time) (first []int64, errs []error) {
	first, errs = make([]int64, len(batch)), make([]error, len(batch))
	taken := map[EventKey]bool{}
	for i, a := range batch {
		h, ok := heads[a.Fence.RunID]
		if !ok {
			errs[i] = fmt.Errorf("run %s: %w", a.Fence.RunID, store.ErrNotFound)
			continue
		}
		if err := Fenced(a.Fence, h.Status, h.Generation, h.LeaseUntil, now); err != nil {
			errs[i] = err
			continue
		}
		for _, e := range a.Events {
			if k := (EventKey{a.Fence.RunID, e.ID}); stored[k] || taken[k] {
				errs[i] = fmt.Errorf("event %s of run %s: %w", e.ID, a.Fence.RunID, store.ErrExists)
				break
			}
		}
		if errs[i] != nil {
			continue
		}
		for _, e := range a.Events {
			taken[EventKey{a.Fence.RunID, e.ID}] = true
		}
		first[i] = h.Last + 1
		h.Last += int64(len(a.Events))
	}
	return first, errs
}

// Appended is the events of an append whose first sequence is first.
func Appended(a Append, first int64) []store.Event {
	out := make([]store.Event, len(a.Events))
	for i, e := range a.Events {
		seq := first + int64(i)
		out[i] = store.Event{RunID: a.Fence.RunID, Sequence: seq, Cursor: store.CursorFor(seq), ID: e.ID, Type: e.Type,
			Time: time.Unix(0, e.Time.UnixNano()).UTC(), Body: e.Body}
	}
	return out
}

// NewAppend checks events (store.CheckEvents) and encodes their bodies
// for an append by the holder of f.
func NewAppend(f store.Fence, events []store.NewEvent) (Append, error) {
	if err := store.CheckEvents(events); err != nil {
		return Append{}, err
	}
	bodies := make([]string, len(events))
	for i, e := range events {
		b, err := canonjson.Canonical(e.Body)
		if err != nil {
			return Append{}, fmt.Errorf("%w: %w", store.ErrInvalid, err)
		}
		bodies[i] = string(b)
	}
	return Append{Fence: f, Events: events, Bodies: bodies}, nil
}

// AndWhere adds cond to a SQL WHERE clause (where is "" when there is
// none yet).
func AndWhere(where, cond string) string {
	if where == "" {
		return "WHERE " + cond
	}
	return "WHERE (" + strings.TrimPrefix(where, "WHERE ") + ") AND " + cond
}

// PrefixRange is the half-open key range [prefix, upper) that holds
// exactly the keys starting with prefix under byte-wise collation (SQLite
// BINARY, PostgreSQL "C"), so an index on the key serves the match. ok
// is false when no such upper bound is valid text (prefix is empty or
// ends in a byte past ASCII); the caller then matches the prefix
// itself.
func PrefixRange(prefix string) (upper string, ok bool) {
	if prefix == "" || prefix[len(prefix)-1] >= 0x7f {
		return "", false
	}
	return prefix[:len(prefix)-1] + string(prefix[len(prefix)-1]+1), true
}

// ScanIdempotency reads the rows of scope, key, request_digest, result,
// created_at.
func ScanIdempotency(rows Rows, adapter string) ([]store.Idempotency, error) {
	var out []store.Idempotency
	for rows.Next() {
		var rec store.Idempotency
		var res *string
		var created int64
		if err := rows.Scan(&rec.Scope, &rec.Key, &rec.RequestDigest, &res, &created); err != nil {
			return nil, fmt.Errorf("%s: idempotency: %w", adapter, err)
		}
		var err error
		if rec.Result, err = Decode(res); err != nil {
			return nil, err
		}
		rec.CreatedAt = FromNanos(created)
		out = append(out, rec)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("%s: idempotency: %w", adapter, err)
	}
	return out, nil
}
