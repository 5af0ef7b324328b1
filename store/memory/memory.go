package memory

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/store"
)

// Store is an in-memory store.Store. The zero value is not usable; call
// New.
type Store struct {
	mu          sync.Mutex
	runs        map[string]*store.Run
	events      map[string][]store.Event
	eventIDs    map[string]map[string]bool // per run: the event ids it holds
	ledger      map[string][]store.LedgerEntry
	idempotency map[[2]string]store.Idempotency
	now         func() time.Time
	closed      bool

	// order indexes every run, byKind each kind's runs, oldest first by
	// (CreatedAt, ID) — both immutable — so ListRuns reads the newest off
	// their ends instead of sorting all runs.
	order  []*store.Run
	byKind map[string][]*store.Run
}

var _ store.Store = (*Store)(nil)

// New returns an empty store. now, when not nil, replaces time.Now.
func New(now func() time.Time) *Store {
	if now == nil {
		now = time.Now
	}
	return &Store{runs: map[string]*store.Run{}, byKind: map[string][]*store.Run{}, events: map[string][]store.Event{}, eventIDs: map[string]map[string]bool{},
		ledger: map[string][]store.LedgerEntry{}, idempotency: map[[2]string]store.Idempotency{}, now: now}
}

func (s *Store) check() error {
	if s.closed {
		return fmt.Errorf("memory store is closed: %w", store.ErrInvalid)
	}
	return nil
}

// CreateRun implements store.Store.
func (s *Store) CreateRun(ctx context.Context, r store.Run) (store.Run, error) {
	if err := store.CheckNew(r); err != nil {
		return store.Run{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(); err != nil {
		return store.Run{}, err
	}
	if _, ok := s.runs[r.ID]; ok {
		return store.Run{}, fmt.Errorf("run %s: %w", r.ID, store.ErrExists)
	}
	now := s.now().UTC()
	if r.CreatedAt.IsZero() {
		r.CreatedAt = now
	}
	r.UpdatedAt, r.Revision = now, 1
	if r.Generation == 0 {
		r.Generation = 1
	}
	cp := &store.Run{}
	*cp = r
	s.runs[r.ID] = cp
	s.order = indexInsert(s.order, cp)
	s.byKind[r.Kind] = indexInsert(s.byKind[r.Kind], cp)
	return r, nil
}

// compareAge orders runs oldest first: by creation time, then id (the
// reverse of ListRuns' newest first).
func compareAge(a, b *store.Run) int {
	if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
		return c
	}
	return strings.Compare(a.ID, b.ID)
}

// indexInsert inserts r into the ordered index idx: O(log n) to find its
// place, and no move for the usual run created newest.
func indexInsert(idx []*store.Run, r *store.Run) []*store.Run {
	i, _ := slices.BinarySearchFunc(idx, r, compareAge)
	return slices.Insert(idx, i, r)
}

// indexRemove removes r from the ordered index idx.
func indexRemove(idx []*store.Run, r *store.Run) []*store.Run {
	if i, ok := slices.BinarySearchFunc(idx, r, compareAge); ok {
		idx = slices.Delete(idx, i, i+1)
	}
	return idx
}

// GetRun implements store.Store.
func (s *Store) GetRun(ctx context.Context, id string) (store.Run, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(); err != nil {
		return store.Run{}, err
	}
	r, ok := s.runs[id]
	if !ok {
		return store.Run{}, fmt.Errorf("run %s: %w", id, store.ErrNotFound)
	}
	out := *r
	out.Status = store.Effective(out, s.now())
	return out, nil
}

// UpdateRun implements store.Store.
func (s *Store) UpdateRun(ctx context.Context, id string, fn func(*store.Run) error) (store.Run, error) {
	return s.update(id, nil, fn)
}

// UpdateFenced implements store.Store.
func (s *Store) UpdateFenced(ctx context.Context, f store.Fence, fn func(*store.Run) error) (store.Run, error) {
	return s.update(f.RunID, &f, fn)
}

func (s *Store) update(id string, f *store.Fence, fn func(*store.Run) error) (store.Run, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, err := s.run(id, f)
	if err != nil {
		return store.Run{}, err
	}
	before := *cur
	before.Status = store.Effective(before, s.now())
	next := before
	if err := fn(&next); err != nil {
		return store.Run{}, err
	}
	if err := store.CheckUpdate(before, next); err != nil {
		return store.Run{}, err
	}
	if next.Doc.IsValid() {
		if _, err := canonjson.Canonical(next.Doc); err != nil {
			return store.Run{}, fmt.Errorf("%w: run document: %w", store.ErrInvalid, err)
		}
	}
	next.Revision = cur.Revision + 1
	next.UpdatedAt = s.now().UTC()
	*cur = next
	return next, nil
}

// run returns the stored run id, checking f when it is not nil; s.mu is
// held.
func (s *Store) run(id string, f *store.Fence) (*store.Run, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	r, ok := s.runs[id]
	if !ok {
		return nil, fmt.Errorf("run %s: %w", id, store.ErrNotFound)
	}
	if f != nil {
		if err := store.CheckFence(*r, *f, s.now()); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// DeleteRun implements store.Store.
func (s *Store) DeleteRun(ctx context.Context, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(); err != nil {
		return err
	}
	r, ok := s.runs[id]
	if !ok {
		return fmt.Errorf("run %s: %w", id, store.ErrNotFound)
	}
	if err := store.CheckDelete(*r, s.now()); err != nil {
		return err
	}
	delete(s.runs, id)
	s.order = indexRemove(s.order, r)
	if kind := indexRemove(s.byKind[r.Kind], r); len(kind) > 0 {
		s.byKind[r.Kind] = kind
	} else {
		delete(s.byKind, r.Kind)
	}
	delete(s.events, id)
	delete(s.eventIDs, id)
	delete(s.ledger, id)
	return nil
}

// ListRuns implements store.Store. It walks the ordered index (the
// kind's, for a kind) from the newest run and stops at the limit, so
// listing the newest runs costs the limit, not the runs held; a status
// filter (the effective status, which a lapsing lease changes without a
// write) costs the runs it passes over.
func (s *Store) ListRuns(ctx context.Context, opts store.ListOptions) ([]store.Run, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(); err != nil {
		return nil, err
	}
	idx := s.order
	if opts.Kind != "" {
		idx = s.byKind[opts.Kind]
	}
	now := s.now()
	var out []store.Run
	for i := len(idx) - 1; i >= 0; i-- {
		cp := *idx[i]
		cp.Status = store.Effective(cp, now)
		if opts.Status != "" && cp.Status != opts.Status {
			continue
		}
		if out == nil {
			size := len(idx)
			if opts.Limit > 0 {
				size = min(size, opts.Limit)
			}
			out = make([]store.Run, 0, size)
		}
		out = append(out, cp)
		if opts.Limit > 0 && len(out) == opts.Limit {
			break
		}
	}
	return out, nil
}

// AppendEvents implements store.Store.
func (s *Store) AppendEvents(ctx context.Context, f store.Fence, events []store.NewEvent) ([]store.Event, error) {
	if err := store.CheckEvents(events); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.run(f.RunID, &f); err != nil {
		return nil, err
	}
	runID := f.RunID
	log := s.events[runID]
	ids := s.eventIDs[runID]
	if ids == nil {
		ids = map[string]bool{}
		s.eventIDs[runID] = ids
	}
	for _, e := range events {
		if ids[e.ID] {
			return nil, fmt.Errorf("event %s of run %s: %w", e.ID, runID, store.ErrExists)
		}
	}
	for _, e := range events {
		ids[e.ID] = true
	}
	out := make([]store.Event, len(events))
	for i, e := range events {
		seq := int64(len(log) + 1)
		ev := store.Event{RunID: runID, Sequence: seq, Cursor: store.CursorFor(seq), ID: e.ID, Type: e.Type, Time: e.Time.UTC(), Body: e.Body}
		log = append(log, ev)
		out[i] = ev
	}
	s.events[runID] = log
	return out, nil
}

// Events implements store.Store.
func (s *Store) Events(ctx context.Context, runID, after string, limit int) ([]store.Event, error) {
	from, err := store.ParseCursor(after)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(); err != nil {
		return nil, err
	}
	if _, ok := s.runs[runID]; !ok {
		return nil, fmt.Errorf("run %s: %w", runID, store.ErrNotFound)
	}
	log := s.events[runID]
	if from >= int64(len(log)) {
		return nil, nil
	}
	// Copy only the page: a follower pages through a long log, and
	// copying the rest of it each time would make that quadratic.
	to := int64(len(log))
	if limit > 0 && from+int64(limit) < to {
		to = from + int64(limit)
	}
	return slices.Clone(log[from:to]), nil
}

// AppendLedger implements store.Store.
func (s *Store) AppendLedger(ctx context.Context, f store.Fence, bodies []canonjson.Value, at time.Time) ([]store.LedgerEntry, error) {
	for i, b := range bodies {
		if _, err := canonjson.Canonical(b); err != nil {
			return nil, fmt.Errorf("%w: ledger entry %d: %w", store.ErrInvalid, i, err)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.run(f.RunID, &f); err != nil {
		return nil, err
	}
	runID := f.RunID
	entries := s.ledger[runID]
	out := make([]store.LedgerEntry, len(bodies))
	for i, b := range bodies {
		e := store.LedgerEntry{RunID: runID, Sequence: int64(len(entries) + 1), Time: at.UTC(), Body: b}
		entries = append(entries, e)
		out[i] = e
	}
	s.ledger[runID] = entries
	return out, nil
}

// Ledger implements store.Store.
func (s *Store) Ledger(ctx context.Context, runID string) ([]store.LedgerEntry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(); err != nil {
		return nil, err
	}
	if _, ok := s.runs[runID]; !ok {
		return nil, fmt.Errorf("run %s: %w", runID, store.ErrNotFound)
	}
	return slices.Clone(s.ledger[runID]), nil
}

// ClaimIdempotency implements store.Store.
func (s *Store) ClaimIdempotency(ctx context.Context, rec store.Idempotency) (store.Idempotency, bool, error) {
	if err := store.CheckIdempotency(rec); err != nil {
		return store.Idempotency{}, false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(); err != nil {
		return store.Idempotency{}, false, err
	}
	k := [2]string{rec.Scope, rec.Key}
	if existing, ok := s.idempotency[k]; ok {
		return existing, false, nil
	}
	if rec.CreatedAt.IsZero() {
		rec.CreatedAt = s.now().UTC()
	}
	s.idempotency[k] = rec
	return rec, true, nil
}

// ListIdempotency implements store.Store.
func (s *Store) ListIdempotency(ctx context.Context, q store.IdempotencyQuery) ([]store.Idempotency, error) {
	if err := store.CheckIdempotencyQuery(q); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(); err != nil {
		return nil, err
	}
	var out []store.Idempotency
	for k, rec := range s.idempotency {
		if k[0] == q.Scope && strings.HasPrefix(k[1], q.KeyPrefix) && (q.Before.IsZero() || rec.CreatedAt.Before(q.Before)) {
			out = append(out, rec)
		}
	}
	slices.SortFunc(out, func(a, b store.Idempotency) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.Key, b.Key)
	})
	return out[:min(len(out), q.Limit)], nil
}

// CountIdempotency implements store.IdempotencyCounter.
func (s *Store) CountIdempotency(ctx context.Context, q store.IdempotencyQuery) (int64, error) {
	if q.Scope == "" {
		return 0, fmt.Errorf("%w: an idempotency count needs a scope", store.ErrInvalid)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(); err != nil {
		return 0, err
	}
	var n int64
	for k, rec := range s.idempotency {
		if k[0] == q.Scope && strings.HasPrefix(k[1], q.KeyPrefix) && (q.Before.IsZero() || rec.CreatedAt.Before(q.Before)) {
			n++
		}
	}
	return n, nil
}

// DeleteIdempotency implements store.Store.
func (s *Store) DeleteIdempotency(ctx context.Context, keys []store.IdempotencyKey) (int, error) {
	if err := store.CheckIdempotencyKeys(keys); err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(); err != nil {
		return 0, err
	}
	n := 0
	for _, k := range keys {
		if _, ok := s.idempotency[[2]string{k.Scope, k.Key}]; ok {
			delete(s.idempotency, [2]string{k.Scope, k.Key})
			n++
		}
	}
	return n, nil
}

// Close implements store.Store.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	return nil
}
