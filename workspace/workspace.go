package workspace

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// Store is one versioned document store per tenant. Implementations are
// safe for concurrent use by many goroutines and, for the database
// adapters, by many processes sharing one database: a write is a
// compare-and-set that exactly one of several racing writers wins.
//
// Every method validates its inputs with this package's rules
// ([ValidateTenant], [ValidatePath], [ValidatePrefix], [CheckPut],
// [CheckDelete]) and refuses bad ones with an error that matches
// [ErrInvalid], before it touches storage.
type Store interface {
	// Get returns the live document at path. A path that never held a
	// document or whose document was deleted is ErrNotFound.
	Get(ctx context.Context, tenant, path string) (Document, error)
	// Put stores body at path if exp holds: ExpectAbsent when the path has
	// no live document (it may hold a tombstone), ExpectRevision(r) when
	// its live revision is r. The new revision is one more than the path's
	// last revision, live or deleted, so revisions strictly increase and
	// are never reused. A failed precondition is a *ConflictError and
	// nothing is written. by names the writer for the audit trail.
	Put(ctx context.Context, tenant, path string, body []byte, exp Expect, by string) (Meta, error)
	// Delete erases the live document at path if exp (an ExpectRevision;
	// ExpectAbsent is invalid here) holds: its content and bytes are gone
	// and a tombstone records the erased revision, when and by whom. A
	// failed precondition is a *ConflictError and nothing changes.
	Delete(ctx context.Context, tenant, path string, exp Expect, by string) (Tombstone, error)
	// List returns the live documents at or below prefix (see
	// ValidatePrefix; "/" lists everything), sorted by path.
	List(ctx context.Context, tenant, prefix string) ([]Meta, error)
	// Search returns the live documents below q.Prefix whose path or
	// content matches q (see Match), sorted by path, at most q.Limit when
	// q.Limit > 0.
	Search(ctx context.Context, tenant string, q Query) ([]Meta, error)
	// Tombstones is the erasure audit listing: every delete ever made at
	// or below prefix, sorted by path then revision. Tombstones carry no
	// content.
	Tombstones(ctx context.Context, tenant, prefix string) ([]Tombstone, error)
	// Close releases the store.
	Close() error
}

// Meta describes one live document revision.
type Meta struct {
	Path string
	// Revision numbers the path's writes 1, 2, 3…; it is never reused,
	// also across a delete.
	Revision int64
	// Size is the length of the content in bytes.
	Size int64
	// UpdatedAt is when this revision was written (UTC).
	UpdatedAt time.Time
	// UpdatedBy names who wrote this revision.
	UpdatedBy string
}

// Document is a live document: its metadata and its content.
type Document struct {
	Meta
	// Body is the content, byte for byte as written (never nil).
	Body []byte
}

// Tombstone records one erasure for audit. It holds no content.
type Tombstone struct {
	Path string
	// Revision is the erased revision; the path's next write gets a
	// higher one.
	Revision  int64
	DeletedAt time.Time
	DeletedBy string
}

// Query selects documents for Search.
type Query struct {
	// Prefix restricts the search to a subtree ("" or "/" is everything).
	Prefix string
	// Text holds one or more terms separated by white space; a document
	// matches when every term occurs in its path or content, ignoring
	// case (see Match).
	Text string
	// Limit caps the number of results; 0 means no cap.
	Limit int
}

// Errors every adapter returns (wrapped) for these conditions. A failed
// precondition is a *ConflictError, which also matches ErrConflict.
var (
	ErrNotFound = errors.New("workspace: not found")
	ErrInvalid  = errors.New("workspace: invalid request")
	ErrConflict = errors.New("workspace: revision conflict")
)

type expectKind uint8

const (
	expectUnset expectKind = iota
	expectAbsent
	expectRevision
)

// Expect is a write's precondition. The zero Expect is no precondition at
// all and every write refuses it: there are no unconditional writes.
type Expect struct {
	kind expectKind
	rev  int64
}

// ExpectAbsent requires that the path has no live document (the seed's
// ifRevision: null). A deleted path is absent.
func ExpectAbsent() Expect { return Expect{kind: expectAbsent} }

// ExpectRevision requires that the path's live revision is r (r ≥ 1).
func ExpectRevision(r int64) Expect { return Expect{kind: expectRevision, rev: r} }

// IsAbsent reports whether e is ExpectAbsent.
func (e Expect) IsAbsent() bool { return e.kind == expectAbsent }

// Revision returns the revision e requires and whether e requires one.
func (e Expect) Revision() (int64, bool) { return e.rev, e.kind == expectRevision }

// Valid reports whether e is a usable precondition: ExpectAbsent, or
// ExpectRevision of a revision ≥ 1.
func (e Expect) Valid() bool {
	return e.kind == expectAbsent || e.kind == expectRevision && e.rev >= 1
}

// Holds reports whether e holds for a path whose live revision is actual
// (0 when the path has no live document). Adapters that compare in Go
// call it; SQL adapters express the same comparison in their statements.
func (e Expect) Holds(actual int64) bool {
	switch e.kind {
	case expectAbsent:
		return actual == 0
	case expectRevision:
		return e.rev >= 1 && actual == e.rev
	}
	return false
}

// String spells e for messages: "absent", "revision 3" or "unset".
func (e Expect) String() string {
	switch e.kind {
	case expectAbsent:
		return "absent"
	case expectRevision:
		return "revision " + strconv.FormatInt(e.rev, 10)
	}
	return "unset"
}

// ConflictError reports a write whose precondition did not hold. Use
// errors.As to read it; it also matches errors.Is(err, ErrConflict).
type ConflictError struct {
	Path string
	// Expected is the precondition the write carried.
	Expected Expect
	// Actual is the path's live revision when the write was refused, 0
	// when it had no live document.
	Actual int64
}

// Error says the path, the precondition and what was found.
func (e *ConflictError) Error() string {
	actual := "no live document"
	if e.Actual > 0 {
		actual = "revision " + strconv.FormatInt(e.Actual, 10)
	}
	return fmt.Sprintf("workspace: conflict at %s: expected %s, found %s", e.Path, e.Expected, actual)
}

// Is makes a *ConflictError match ErrConflict.
func (e *ConflictError) Is(target error) bool { return target == ErrConflict }
