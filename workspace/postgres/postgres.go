package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentrt/agentrt/internal/pgdb"
	"github.com/agentrt/agentrt/workspace"
	"github.com/agentrt/agentrt/workspace/internal/sqlrows"
)

//go:embed migrations/*.sql
var migrations embed.FS

const (
	// migrationsTable records applied migrations, apart from the run
	// store's schema_migrations.
	migrationsTable = "workspace_schema_migrations"
	// migrationLock is the advisory lock key held while migrating
	// ("agentrt workspace" in ASCII, truncated to 63 bits).
	migrationLock int64 = 0x6167656e74777300
)

// Options adjusts Open.
type Options struct {
	// Now replaces time.Now (tests).
	Now func() time.Time
	// MaxConns caps the connection pool; 0 keeps pgx's default
	// (max(4, GOMAXPROCS)) unless the connection string sets
	// pool_max_conns.
	MaxConns int32
}

// Store is a workspace.Store on PostgreSQL. It is safe for concurrent use
// by many goroutines and many processes.
type Store struct {
	pool *pgxpool.Pool
	now  func() time.Time
}

var _ workspace.Store = (*Store)(nil)

// Open connects to the database named by connString (a postgres:// URL
// or key=value string) and applies pending migrations.
func Open(ctx context.Context, connString string, opts Options) (*Store, error) {
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	pool, err := pgdb.Open(ctx, connString, opts.MaxConns, migrations, migrationsTable, migrationLock, now())
	if err != nil {
		return nil, fmt.Errorf("workspace postgres: %w", err)
	}
	return &Store{pool: pool, now: now}, nil
}

// Close implements workspace.Store.
func (s *Store) Close() error {
	s.pool.Close()
	return nil
}

// liveRevision returns the path's live revision, 0 when it has none.
func (s *Store) liveRevision(ctx context.Context, tenant, path string) (int64, error) {
	var live int64
	err := s.pool.QueryRow(ctx, `SELECT CASE WHEN live THEN revision ELSE 0 END FROM workspace_documents WHERE tenant = $1 AND path = $2`,
		tenant, path).Scan(&live)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("workspace postgres: %w", err)
	}
	return live, nil
}

// conflictOr decides a compare-and-set whose statement changed no row:
// it reads the path's live revision and returns the conflict. If the
// precondition holds by the time of that read (the state moved on between
// the two statements, say a revision the caller expected was written in
// between), the caller must try again: ok is false.
func (s *Store) conflictOr(ctx context.Context, tenant, path string, exp workspace.Expect) (conflict error, ok bool) {
	actual, err := s.liveRevision(ctx, tenant, path)
	if err != nil {
		return err, true
	}
	if exp.Holds(actual) {
		return nil, false
	}
	return &workspace.ConflictError{Path: path, Expected: exp, Actual: actual}, true
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
	err := s.pool.QueryRow(ctx, `SELECT revision, size, updated_at, updated_by, body FROM workspace_documents
		WHERE tenant = $1 AND path = $2 AND live`, tenant, path).Scan(&d.Revision, &d.Size, &at, &d.UpdatedBy, &d.Body)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return workspace.Document{}, fmt.Errorf("%s: %w", path, workspace.ErrNotFound)
	case err != nil:
		return workspace.Document{}, fmt.Errorf("workspace postgres: get: %w", err)
	}
	if d.Body == nil {
		d.Body = []byte{}
	}
	d.UpdatedAt = sqlrows.FromNanos(at)
	return d, nil
}

// Put implements workspace.Store. The precondition is the WHERE clause of
// the one statement that writes, so PostgreSQL's row locking decides
// races; the write is committed (synchronously) when Put returns.
func (s *Store) Put(ctx context.Context, tenant, path string, body []byte, exp workspace.Expect, by string) (workspace.Meta, error) {
	if err := workspace.CheckPut(tenant, path, body, exp, by); err != nil {
		return workspace.Meta{}, err
	}
	if body == nil {
		body = []byte{} // NULL means erased
	}
	m := workspace.Meta{Path: path, Size: int64(len(body)), UpdatedBy: by}
	for {
		m.UpdatedAt = s.now().UTC()
		var err error
		if r, ok := exp.Revision(); ok {
			err = s.pool.QueryRow(ctx, `UPDATE workspace_documents SET revision = revision + 1, body = $3, size = $4, updated_at = $5, updated_by = $6
				WHERE tenant = $1 AND path = $2 AND live AND revision = $7 RETURNING revision`,
				tenant, path, body, m.Size, m.UpdatedAt.UnixNano(), by, r).Scan(&m.Revision)
		} else {
			err = s.pool.QueryRow(ctx, `INSERT INTO workspace_documents AS d (tenant, path, revision, live, body, size, updated_at, updated_by)
				VALUES ($1, $2, 1, true, $3, $4, $5, $6)
				ON CONFLICT (tenant, path) DO UPDATE SET revision = d.revision + 1, live = true, body = excluded.body,
					size = excluded.size, updated_at = excluded.updated_at, updated_by = excluded.updated_by
				WHERE NOT d.live
				RETURNING revision`,
				tenant, path, body, m.Size, m.UpdatedAt.UnixNano(), by).Scan(&m.Revision)
		}
		if err == nil {
			return m, nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return workspace.Meta{}, fmt.Errorf("workspace postgres: put: %w", err)
		}
		if conflict, ok := s.conflictOr(ctx, tenant, path, exp); ok {
			return workspace.Meta{}, conflict
		}
	}
}

// Delete implements workspace.Store: erasing the content and recording
// the tombstone are one statement.
func (s *Store) Delete(ctx context.Context, tenant, path string, exp workspace.Expect, by string) (workspace.Tombstone, error) {
	if err := workspace.CheckDelete(tenant, path, exp, by); err != nil {
		return workspace.Tombstone{}, err
	}
	r, _ := exp.Revision()
	for {
		ts := workspace.Tombstone{Path: path, DeletedAt: s.now().UTC(), DeletedBy: by}
		err := s.pool.QueryRow(ctx, `WITH erased AS (
				UPDATE workspace_documents SET live = false, body = NULL, size = 0, updated_at = $4, updated_by = $5
				WHERE tenant = $1 AND path = $2 AND live AND revision = $3
				RETURNING tenant, path, revision)
			INSERT INTO workspace_tombstones (tenant, path, revision, deleted_at, deleted_by)
			SELECT tenant, path, revision, $4, $5 FROM erased
			RETURNING revision`,
			tenant, path, r, ts.DeletedAt.UnixNano(), by).Scan(&ts.Revision)
		if err == nil {
			return ts, nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return workspace.Tombstone{}, fmt.Errorf("workspace postgres: delete: %w", err)
		}
		if conflict, ok := s.conflictOr(ctx, tenant, path, exp); ok {
			return workspace.Tombstone{}, conflict
		}
	}
}

// prefixClause returns the SQL condition (on column col, parameters from
// $first) and arguments selecting the paths a normalized prefix selects
// (workspace.InPrefix): the prefix and everything in [prefix+"/",
// prefix+"0"), "0" being the byte after "/". The "C" collation compares
// bytes as Go does.
func prefixClause(col, prefix string, first int) (string, []any) {
	if prefix == "/" {
		return "true", nil
	}
	return fmt.Sprintf("(%[1]s = $%[2]d OR (%[1]s >= $%[3]d AND %[1]s < $%[4]d))", col, first, first+1, first+2),
		[]any{prefix, prefix + "/", prefix + "0"}
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
	cond, args := prefixClause("path", prefix, 2)
	cols := `path, revision, size, updated_at, updated_by`
	if q != nil {
		cols += `, body`
	}
	rows, err := s.pool.Query(ctx, `SELECT `+cols+` FROM workspace_documents WHERE tenant = $1 AND live AND `+cond+` ORDER BY path`,
		append([]any{tenant}, args...)...)
	if err != nil {
		return nil, fmt.Errorf("workspace postgres: list: %w", err)
	}
	defer rows.Close()
	out, err := sqlrows.Metas(rows, q, limit)
	if err != nil {
		return nil, fmt.Errorf("workspace postgres: list: %w", err)
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
	cond, args := prefixClause("path", p, 2)
	rows, err := s.pool.Query(ctx, `SELECT path, revision, deleted_at, deleted_by FROM workspace_tombstones
		WHERE tenant = $1 AND `+cond+` ORDER BY path, revision`, append([]any{tenant}, args...)...)
	if err != nil {
		return nil, fmt.Errorf("workspace postgres: tombstones: %w", err)
	}
	defer rows.Close()
	out, err := sqlrows.Tombstones(rows)
	if err != nil {
		return nil, fmt.Errorf("workspace postgres: tombstones: %w", err)
	}
	return out, nil
}
