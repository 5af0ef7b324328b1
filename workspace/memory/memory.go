package memory

import (
	"bytes"
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/agentrt/agentrt/workspace"
)

// Store is an in-memory workspace.Store, safe for concurrent use. The
// zero value is not usable; call New.
type Store struct {
	mu      sync.Mutex
	tenants map[string]*tenant
	now     func() time.Time
	closed  bool
}

type tenant struct {
	docs       map[string]*entry
	tombstones []workspace.Tombstone
}

// entry is a path's state: its last revision (live or erased) and, while
// live, its content.
type entry struct {
	revision  int64
	live      bool
	body      []byte
	updatedAt time.Time
	updatedBy string
}

var _ workspace.Store = (*Store)(nil)

// New returns an empty store. now, when not nil, replaces time.Now.
func New(now func() time.Time) *Store {
	if now == nil {
		now = time.Now
	}
	return &Store{tenants: map[string]*tenant{}, now: now}
}

func (s *Store) tenant(id string, create bool) *tenant {
	t := s.tenants[id]
	if t == nil && create {
		t = &tenant{docs: map[string]*entry{}}
		s.tenants[id] = t
	}
	return t
}

func (s *Store) ready(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if s.closed {
		return fmt.Errorf("%w: the store is closed", workspace.ErrInvalid)
	}
	return nil
}

func (e *entry) meta(path string) workspace.Meta {
	return workspace.Meta{Path: path, Revision: e.revision, Size: int64(len(e.body)), UpdatedAt: e.updatedAt, UpdatedBy: e.updatedBy}
}

func (e *entry) liveRevision() int64 {
	if e == nil || !e.live {
		return 0
	}
	return e.revision
}

// Get implements workspace.Store.
func (s *Store) Get(ctx context.Context, tenantID, path string) (workspace.Document, error) {
	if err := workspace.ValidateTenant(tenantID); err != nil {
		return workspace.Document{}, err
	}
	if err := workspace.ValidatePath(path); err != nil {
		return workspace.Document{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.ready(ctx); err != nil {
		return workspace.Document{}, err
	}
	t := s.tenant(tenantID, false)
	if t == nil || t.docs[path].liveRevision() == 0 {
		return workspace.Document{}, fmt.Errorf("%s: %w", path, workspace.ErrNotFound)
	}
	e := t.docs[path]
	return workspace.Document{Meta: e.meta(path), Body: append([]byte{}, e.body...)}, nil
}

// Put implements workspace.Store.
func (s *Store) Put(ctx context.Context, tenantID, path string, body []byte, exp workspace.Expect, by string) (workspace.Meta, error) {
	if err := workspace.CheckPut(tenantID, path, body, exp, by); err != nil {
		return workspace.Meta{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.ready(ctx); err != nil {
		return workspace.Meta{}, err
	}
	t := s.tenant(tenantID, true)
	e := t.docs[path]
	if actual := e.liveRevision(); !exp.Holds(actual) {
		return workspace.Meta{}, &workspace.ConflictError{Path: path, Expected: exp, Actual: actual}
	}
	if e == nil {
		e = &entry{}
		t.docs[path] = e
	}
	e.revision++
	e.live = true
	e.body = append([]byte{}, body...)
	e.updatedAt = s.now().UTC()
	e.updatedBy = by
	return e.meta(path), nil
}

// Delete implements workspace.Store.
func (s *Store) Delete(ctx context.Context, tenantID, path string, exp workspace.Expect, by string) (workspace.Tombstone, error) {
	if err := workspace.CheckDelete(tenantID, path, exp, by); err != nil {
		return workspace.Tombstone{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.ready(ctx); err != nil {
		return workspace.Tombstone{}, err
	}
	t := s.tenant(tenantID, true)
	e := t.docs[path]
	if actual := e.liveRevision(); !exp.Holds(actual) {
		return workspace.Tombstone{}, &workspace.ConflictError{Path: path, Expected: exp, Actual: actual}
	}
	// Erase: drop the only reference to the content and zero it, so
	// nothing of it is left in this store.
	clear(e.body)
	e.body, e.live, e.updatedBy, e.updatedAt = nil, false, "", time.Time{}
	ts := workspace.Tombstone{Path: path, Revision: e.revision, DeletedAt: s.now().UTC(), DeletedBy: by}
	t.tombstones = append(t.tombstones, ts)
	return ts, nil
}

// List implements workspace.Store.
func (s *Store) List(ctx context.Context, tenantID, prefix string) ([]workspace.Meta, error) {
	if err := workspace.ValidateTenant(tenantID); err != nil {
		return nil, err
	}
	p, err := workspace.ValidatePrefix(prefix)
	if err != nil {
		return nil, err
	}
	return s.collect(ctx, tenantID, p, nil, 0)
}

// Search implements workspace.Store.
func (s *Store) Search(ctx context.Context, tenantID string, q workspace.Query) ([]workspace.Meta, error) {
	if err := workspace.ValidateTenant(tenantID); err != nil {
		return nil, err
	}
	q, err := workspace.CheckQuery(q)
	if err != nil {
		return nil, err
	}
	return s.collect(ctx, tenantID, q.Prefix, func(path string, body []byte) bool { return workspace.Match(q, path, body) }, q.Limit)
}

func (s *Store) collect(ctx context.Context, tenantID, prefix string, keep func(string, []byte) bool, limit int) ([]workspace.Meta, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.ready(ctx); err != nil {
		return nil, err
	}
	out := []workspace.Meta{}
	t := s.tenant(tenantID, false)
	if t == nil {
		return out, nil
	}
	for path, e := range t.docs {
		if e.live && workspace.InPrefix(prefix, path) && (keep == nil || keep(path, e.body)) {
			out = append(out, e.meta(path))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// Tombstones implements workspace.Store.
func (s *Store) Tombstones(ctx context.Context, tenantID, prefix string) ([]workspace.Tombstone, error) {
	if err := workspace.ValidateTenant(tenantID); err != nil {
		return nil, err
	}
	p, err := workspace.ValidatePrefix(prefix)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.ready(ctx); err != nil {
		return nil, err
	}
	out := []workspace.Tombstone{}
	if t := s.tenant(tenantID, false); t != nil {
		for _, ts := range t.tombstones {
			if workspace.InPrefix(p, ts.Path) {
				out = append(out, ts)
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Path != out[j].Path {
			return out[i].Path < out[j].Path
		}
		return out[i].Revision < out[j].Revision
	})
	return out, nil
}

// RawContains reports whether any content this store holds, live or not,
// contains needle. Erasure tests use it to prove a delete left no bytes.
func (s *Store) RawContains(needle []byte) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range s.tenants {
		for _, e := range t.docs {
			if bytes.Contains(e.body, needle) {
				return true
			}
		}
	}
	return false
}

// Close implements workspace.Store. Later calls fail.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	return nil
}
