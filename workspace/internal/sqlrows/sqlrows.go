package sqlrows

import (
	"time"

	"github.com/agentrt/agentrt/workspace"
)

// Rows is a result set: *sql.Rows and pgx.Rows both are.
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
}

// FromNanos reads an instant stored as Unix nanoseconds, in UTC.
func FromNanos(n int64) time.Time { return time.Unix(0, n).UTC() }

// Metas reads listed documents from rows of (path, revision, size,
// updated_at nanoseconds, updated_by) — and the body when q is set, which
// then selects the rows workspace.Match accepts — stopping after limit
// documents when limit > 0. A scan error is returned as is, for the
// adapter to wrap.
func Metas(rows Rows, q *workspace.Query, limit int) ([]workspace.Meta, error) {
	out := []workspace.Meta{}
	for rows.Next() {
		var m workspace.Meta
		var at int64
		var body []byte
		dest := []any{&m.Path, &m.Revision, &m.Size, &at, &m.UpdatedBy}
		if q != nil {
			dest = append(dest, &body)
		}
		if err := rows.Scan(dest...); err != nil {
			return nil, err
		}
		if q != nil && !workspace.Match(*q, m.Path, body) {
			continue
		}
		m.UpdatedAt = FromNanos(at)
		out = append(out, m)
		if limit > 0 && len(out) == limit {
			break
		}
	}
	return out, rows.Err()
}

// Tombstones reads tombstones from rows of (path, revision, deleted_at
// nanoseconds, deleted_by).
func Tombstones(rows Rows) ([]workspace.Tombstone, error) {
	out := []workspace.Tombstone{}
	for rows.Next() {
		var ts workspace.Tombstone
		var at int64
		if err := rows.Scan(&ts.Path, &ts.Revision, &at, &ts.DeletedBy); err != nil {
			return nil, err
		}
		ts.DeletedAt = FromNanos(at)
		out = append(out, ts)
	}
	return out, rows.Err()
}
