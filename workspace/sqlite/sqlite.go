package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"time"

	"github.com/agentrt/agentrt/internal/sqlitedb"
	"github.com/agentrt/agentrt/workspace"
	"github.com/agentrt/agentrt/workspace/internal/sqlrows"
)

//go:embed migrations/*.sql
var migrations embed.FS

// migrationsTable records applied migrations; it is not the run store's
// schema_migrations, so both stores can migrate one file independently.
const migrationsTable = "workspace_schema_migrations"

// Options adjusts Open.
type Options struct {
	// Now replaces time.Now (tests).
	Now func() time.Time
	// BusyTimeout bounds how long a writer waits for another process's
	// write lock; 0 means 10 seconds.
	BusyTimeout time.Duration
}

// Store is a workspace.Store on one SQLite file. It is safe for
// concurrent use; several processes may open the same file.
type Store struct {
	w, r *sql.DB
	now  func() time.Time
	path string
	// Prepared hot statements: reads on r, the compare-and-set on w.
	get, revision, revisionW, upsert *sql.Stmt
}

const (
	getQuery      = `SELECT revision, size, updated_at, updated_by, body FROM workspace_documents WHERE tenant = ? AND path = ? AND live = 1`
	revisionQuery = `SELECT revision, live FROM workspace_documents WHERE tenant = ? AND path = ?`
	upsertQuery   = `INSERT INTO workspace_documents (tenant, path, revision, live, body, size, updated_at, updated_by)
		VALUES (?, ?, ?, 1, ?, ?, ?, ?)
		ON CONFLICT (tenant, path) DO UPDATE SET revision = excluded.revision, live = 1, body = excluded.body,
			size = excluded.size, updated_at = excluded.updated_at, updated_by = excluded.updated_by`
)

var _ workspace.Store = (*Store)(nil)

// Open opens (creating if needed) the workspace tables in the SQLite file
// at path, which may also hold the run store, and applies pending
// migrations.
func Open(ctx context.Context, path string, opts Options) (*Store, error) {
	w, r, err := sqlitedb.Open(ctx, path, opts.BusyTimeout, "secure_delete(ON)")
	if err != nil {
		return nil, fmt.Errorf("workspace sqlite: %w", err)
	}
	s := &Store{w: w, r: r, now: opts.Now, path: path}
	if s.now == nil {
		s.now = time.Now
	}
	if err := sqlitedb.Migrate(ctx, s.w, migrations, migrationsTable, s.now()); err != nil {
		err = fmt.Errorf("workspace sqlite: %w", err)
		s.Close()
		return nil, err
	}
	for _, p := range []struct {
		db   *sql.DB
		dst  **sql.Stmt
		text string
	}{{r, &s.get, getQuery}, {r, &s.revision, revisionQuery}, {w, &s.revisionW, revisionQuery}, {w, &s.upsert, upsertQuery}} {
		if *p.dst, err = p.db.PrepareContext(ctx, p.text); err != nil {
			s.Close()
			return nil, fmt.Errorf("workspace sqlite: %w", err)
		}
	}
	return s, nil
}

// Path returns the database file.
func (s *Store) Path() string { return s.path }

// Close implements workspace.Store.
func (s *Store) Close() error {
	var errs []error
	for _, st := range []*sql.Stmt{s.get, s.revision, s.revisionW, s.upsert} {
		if st != nil {
			errs = append(errs, st.Close())
		}
	}
	return errors.Join(append(errs, s.r.Close(), s.w.Close())...)
}

// Checkpoint copies the write-ahead log into the database file and
// truncates the log, so content erased by a delete is gone from both
// files. It waits (up to the busy timeout) for readers of older
// snapshots, in this or other processes.
func (s *Store) Checkpoint(ctx context.Context) error {
	var busy, logFrames, checkpointed int
	if err := s.w.QueryRowContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`).Scan(&busy, &logFrames, &checkpointed); err != nil {
		return fmt.Errorf("workspace sqlite: checkpoint: %w", err)
	}
	if busy != 0 {
		return fmt.Errorf("workspace sqlite: checkpoint: the log is still in use by a reader")
	}
	return nil
}

// prefixClause returns the SQL condition (on column col) and arguments
// selecting the paths a normalized prefix selects (workspace.InPrefix):
// the prefix itself and everything in [prefix+"/", prefix+"0"), "0"
// being the byte after "/". BINARY collation compares bytes as Go does.
func prefixClause(col, prefix string) (string, []any) {
	if prefix == "/" {
		return "1", nil
	}
	return "(" + col + " = ? OR (" + col + " >= ? AND " + col + " < ?))", []any{prefix, prefix + "/", prefix + "0"}
}

// liveRevision returns the path's live revision (0 if none) and its last
// revision, live or erased (0 if the path never existed), with the
// prepared statement q.
func liveRevision(ctx context.Context, q *sql.Stmt, tenant, path string) (live, last int64, err error) {
	var isLive int64
	err = q.QueryRowContext(ctx, tenant, path).Scan(&last, &isLive)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return 0, 0, nil
	case err != nil:
		return 0, 0, fmt.Errorf("workspace sqlite: %w", err)
	case isLive == 1:
		return last, last, nil
	}
	return 0, last, nil
}

// Get implements workspace.Store.
func (s *Store) Get(ctx context.Context, tenant, path string) (workspace.Document, error) {
	if err := workspace.ValidateTenant(tenant); err != nil {
		return workspace.Document{}, err
	}
	if err := workspace.ValidatePath(path); err != nil {
		return workspace.Document{}, err
	}
	d := workspace.Document{Meta: workspace.Meta{Path: path}}
	var at int64
	err := s.get.QueryRowContext(ctx, tenant, path).Scan(&d.Revision, &d.Size, &at, &d.UpdatedBy, &d.Body)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return workspace.Document{}, fmt.Errorf("%s: %w", path, workspace.ErrNotFound)
	case err != nil:
		return workspace.Document{}, fmt.Errorf("workspace sqlite: get: %w", err)
	}
	if d.Body == nil {
		d.Body = []byte{}
	}
	d.UpdatedAt = sqlrows.FromNanos(at)
	return d, nil
}

// Put implements workspace.Store. The precondition is checked and the
// write made under the database's write lock, in one transaction that is
// durable when Put returns.
func (s *Store) Put(ctx context.Context, tenant, path string, body []byte, exp workspace.Expect, by string) (workspace.Meta, error) {
	if err := workspace.CheckPut(tenant, path, body, exp, by); err != nil {
		return workspace.Meta{}, err
	}
	if body == nil {
		body = []byte{} // NULL means erased
	}
	// A precondition that already fails on a committed snapshot fails:
	// refuse it without queueing for the write lock.
	if live, _, err := liveRevision(ctx, s.revision, tenant, path); err != nil {
		return workspace.Meta{}, err
	} else if !exp.Holds(live) {
		return workspace.Meta{}, &workspace.ConflictError{Path: path, Expected: exp, Actual: live}
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return workspace.Meta{}, fmt.Errorf("workspace sqlite: put: %w", err)
	}
	defer tx.Rollback()
	live, last, err := liveRevision(ctx, tx.StmtContext(ctx, s.revisionW), tenant, path)
	if err != nil {
		return workspace.Meta{}, err
	}
	if !exp.Holds(live) {
		return workspace.Meta{}, &workspace.ConflictError{Path: path, Expected: exp, Actual: live}
	}
	m := workspace.Meta{Path: path, Revision: last + 1, Size: int64(len(body)), UpdatedAt: s.now().UTC(), UpdatedBy: by}
	if _, err := tx.StmtContext(ctx, s.upsert).ExecContext(ctx, tenant, path, m.Revision, body, m.Size, m.UpdatedAt.UnixNano(), by); err != nil {
		return workspace.Meta{}, fmt.Errorf("workspace sqlite: put: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return workspace.Meta{}, fmt.Errorf("workspace sqlite: put: %w", err)
	}
	return m, nil
}

// Delete implements workspace.Store. Erasing the content and recording
// the tombstone are one transaction.
func (s *Store) Delete(ctx context.Context, tenant, path string, exp workspace.Expect, by string) (workspace.Tombstone, error) {
	if err := workspace.CheckDelete(tenant, path, exp, by); err != nil {
		return workspace.Tombstone{}, err
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return workspace.Tombstone{}, fmt.Errorf("workspace sqlite: delete: %w", err)
	}
	defer tx.Rollback()
	live, _, err := liveRevision(ctx, tx.StmtContext(ctx, s.revisionW), tenant, path)
	if err != nil {
		return workspace.Tombstone{}, err
	}
	if !exp.Holds(live) {
		return workspace.Tombstone{}, &workspace.ConflictError{Path: path, Expected: exp, Actual: live}
	}
	ts := workspace.Tombstone{Path: path, Revision: live, DeletedAt: s.now().UTC(), DeletedBy: by}
	if _, err := tx.ExecContext(ctx, `UPDATE workspace_documents SET live = 0, body = NULL, size = 0, updated_at = ?, updated_by = ?
		WHERE tenant = ? AND path = ?`, ts.DeletedAt.UnixNano(), by, tenant, path); err != nil {
		return workspace.Tombstone{}, fmt.Errorf("workspace sqlite: delete: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO workspace_tombstones (tenant, path, revision, deleted_at, deleted_by) VALUES (?, ?, ?, ?, ?)`,
		tenant, path, ts.Revision, ts.DeletedAt.UnixNano(), by); err != nil {
		return workspace.Tombstone{}, fmt.Errorf("workspace sqlite: delete: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return workspace.Tombstone{}, fmt.Errorf("workspace sqlite: delete: %w", err)
	}
	return ts, nil
}

// List implements workspace.Store.
func (s *Store) List(ctx context.Context, tenant, prefix string) ([]workspace.Meta, error) {
	if err := workspace.ValidateTenant(tenant); err != nil {
		return nil, err
	}
	p, err := workspace.ValidatePrefix(prefix)
	if err != nil {
		return nil, err
	}
	return s.scan(ctx, tenant, p, nil, 0)
}

// Search implements workspace.Store. Candidates under the prefix are read
// in path order and matched with workspace.Match.
func (s *Store) Search(ctx context.Context, tenant string, q workspace.Query) ([]workspace.Meta, error) {
	if err := workspace.ValidateTenant(tenant); err != nil {
		return nil, err
	}
	q, err := workspace.CheckQuery(q)
	if err != nil {
		return nil, err
	}
	return s.scan(ctx, tenant, q.Prefix, &q, q.Limit)
}

func (s *Store) scan(ctx context.Context, tenant, prefix string, q *workspace.Query, limit int) ([]workspace.Meta, error) {
	cond, args := prefixClause("path", prefix)
	cols := `path, revision, size, updated_at, updated_by`
	if q != nil {
		cols += `, body`
	}
	rows, err := s.r.QueryContext(ctx, `SELECT `+cols+` FROM workspace_documents WHERE tenant = ? AND live = 1 AND `+cond+` ORDER BY path`,
		append([]any{tenant}, args...)...)
	if err != nil {
		return nil, fmt.Errorf("workspace sqlite: list: %w", err)
	}
	defer rows.Close()
	out, err := sqlrows.Metas(rows, q, limit)
	if err != nil {
		return nil, fmt.Errorf("workspace sqlite: list: %w", err)
	}
	return out, nil
}

// Tombstones implements workspace.Store.
func (s *Store) Tombstones(ctx context.Context, tenant, prefix string) ([]workspace.Tombstone, error) {
	if err := workspace.ValidateTenant(tenant); err != nil {
		return nil, err
	}
	p, err := workspace.ValidatePrefix(prefix)
	if err != nil {
		return nil, err
	}
	cond, args := prefixClause("path", p)
	rows, err := s.r.QueryContext(ctx, `SELECT path, revision, deleted_at, deleted_by FROM workspace_tombstones
		WHERE tenant = ? AND `+cond+` ORDER BY path, revision`, append([]any{tenant}, args...)...)
	if err != nil {
		return nil, fmt.Errorf("workspace sqlite: tombstones: %w", err)
	}
	defer rows.Close()
	out, err := sqlrows.Tombstones(rows)
	if err != nil {
		return nil, fmt.Errorf("workspace sqlite: tombstones: %w", err)
	}
	return out, nil
}
