package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	_ "modernc.org/sqlite" // the "sqlite" database/sql driver

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/store"
)

//go:embed migrations/*.sql
var migrations embed.FS

// HomeEnv names the environment variable holding agentrt's state
// directory.
const HomeEnv = "AGENTRT_HOME"

// DefaultPath returns $AGENTRT_HOME/agentrt.db, or ~/.agentrt/agentrt.db.
func DefaultPath() (string, error) {
	if home := os.Getenv(HomeEnv); home != "" {
		return filepath.Join(home, "agentrt.db"), nil
	}
	dir, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("sqlite: no home directory for the default store (set %s): %w", HomeEnv, err)
	}
	return filepath.Join(dir, ".agentrt", "agentrt.db"), nil
}

// Options adjusts Open.
type Options struct {
	// Now replaces time.Now (tests).
	Now func() time.Time
	// BusyTimeout bounds how long a writer waits for another process's
	// lock; 0 means 10 seconds.
	BusyTimeout time.Duration
}

// Store is a store.Store on one SQLite file.
type Store struct {
	w, r *sql.DB
	now  func() time.Time
	path string
}

var _ store.Store = (*Store)(nil)

// Open opens (creating if needed) the store at path and applies pending
// migrations.
func Open(ctx context.Context, path string, opts Options) (*Store, error) {
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("sqlite: creating %s: %w", dir, err)
		}
	}
	busy := opts.BusyTimeout
	if busy <= 0 {
		busy = 10 * time.Second
	}
	dsn := func(txlock string) string {
		q := url.Values{}
		q.Add("_pragma", "journal_mode(WAL)")
		q.Add("_pragma", "synchronous(FULL)")
		q.Add("_pragma", "foreign_keys(ON)")
		q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busy.Milliseconds()))
		q.Set("_txlock", txlock)
		return "file:" + path + "?" + q.Encode()
	}
	w, err := sql.Open("sqlite", dsn("immediate"))
	if err != nil {
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	// One writer connection: SQLite serializes writers anyway, and this
	// keeps this process's writers queued in Go instead of retrying busy.
	w.SetMaxOpenConns(1)
	r, err := sql.Open("sqlite", dsn("deferred"))
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	r.SetMaxOpenConns(4)
	s := &Store{w: w, r: r, now: opts.Now, path: path}
	if s.now == nil {
		s.now = time.Now
	}
	if err := s.migrate(ctx); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// Path returns the database file.
func (s *Store) Path() string { return s.path }

func (s *Store) migrate(ctx context.Context) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqlite: migrate: %w", err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (version TEXT PRIMARY KEY, applied_at INTEGER NOT NULL) STRICT`); err != nil {
		return fmt.Errorf("sqlite: migrate: %w", err)
	}
	names, err := fs.Glob(migrations, "migrations/*.sql")
	if err != nil {
		return err
	}
	sort.Strings(names)
	for _, name := range names {
		version := strings.TrimSuffix(filepath.Base(name), ".sql")
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM schema_migrations WHERE version = ?`, version).Scan(&n); err != nil {
			return fmt.Errorf("sqlite: migrate: %w", err)
		}
		if n > 0 {
			continue
		}
		body, err := migrations.ReadFile(name)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, string(body)); err != nil {
			return fmt.Errorf("sqlite: migration %s: %w", version, err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)`, version, s.now().UnixNano()); err != nil {
			return fmt.Errorf("sqlite: migrate: %w", err)
		}
	}
	return tx.Commit()
}

// Close implements store.Store.
func (s *Store) Close() error {
	return errors.Join(s.r.Close(), s.w.Close())
}

func nanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func fromNanos(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

func encode(v canonjson.Value) (sql.NullString, error) {
	if !v.IsValid() {
		return sql.NullString{}, nil
	}
	b, err := canonjson.Canonical(v)
	if err != nil {
		return sql.NullString{}, fmt.Errorf("%w: %w", store.ErrInvalid, err)
	}
	return sql.NullString{String: string(b), Valid: true}, nil
}

func decode(ns sql.NullString) (canonjson.Value, error) {
	if !ns.Valid {
		return canonjson.Value{}, nil
	}
	return canonjson.Decode([]byte(ns.String))
}

const runColumns = `id, kind, status, created_at, updated_at, revision, owner, lease_until, doc`

type scanner interface{ Scan(dest ...any) error }

func scanRun(row scanner) (store.Run, error) {
	var r store.Run
	var status string
	var created, updated, lease int64
	var doc sql.NullString
	if err := row.Scan(&r.ID, &r.Kind, &status, &created, &updated, &r.Revision, &r.Owner, &lease, &doc); err != nil {
		return store.Run{}, err
	}
	r.Status = store.Status(status)
	r.CreatedAt, r.UpdatedAt, r.LeaseUntil = fromNanos(created), fromNanos(updated), fromNanos(lease)
	var err error
	if r.Doc, err = decode(doc); err != nil {
		return store.Run{}, fmt.Errorf("sqlite: run %s document: %w", r.ID, err)
	}
	return r, nil
}

// CreateRun implements store.Store.
func (s *Store) CreateRun(ctx context.Context, r store.Run) (store.Run, error) {
	if err := store.CheckNew(r); err != nil {
		return store.Run{}, err
	}
	doc, err := encode(r.Doc)
	if err != nil {
		return store.Run{}, err
	}
	now := s.now().UTC()
	if r.CreatedAt.IsZero() {
		r.CreatedAt = now
	}
	r.UpdatedAt, r.Revision = now, 1
	_, err = s.w.ExecContext(ctx, `INSERT INTO runs (`+runColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		r.ID, r.Kind, string(r.Status), nanos(r.CreatedAt), nanos(r.UpdatedAt), r.Revision, r.Owner, nanos(r.LeaseUntil), doc)
	if err != nil {
		if isConstraint(err) {
			return store.Run{}, fmt.Errorf("run %s: %w", r.ID, store.ErrExists)
		}
		return store.Run{}, fmt.Errorf("sqlite: create run: %w", err)
	}
	return r, nil
}

func isConstraint(err error) bool {
	return err != nil && strings.Contains(err.Error(), "constraint failed")
}

// GetRun implements store.Store.
func (s *Store) GetRun(ctx context.Context, id string) (store.Run, error) {
	r, err := scanRun(s.r.QueryRowContext(ctx, `SELECT `+runColumns+` FROM runs WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return store.Run{}, fmt.Errorf("run %s: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return store.Run{}, fmt.Errorf("sqlite: get run: %w", err)
	}
	r.Status = store.Effective(r, s.now())
	return r, nil
}

// UpdateRun implements store.Store.
func (s *Store) UpdateRun(ctx context.Context, id string, fn func(*store.Run) error) (store.Run, error) {
	for attempt := 0; ; attempt++ {
		cur, err := s.GetRun(ctx, id)
		if err != nil {
			return store.Run{}, err
		}
		next := cur
		if err := fn(&next); err != nil {
			return store.Run{}, err
		}
		if err := store.CheckUpdate(cur, next); err != nil {
			return store.Run{}, err
		}
		doc, err := encode(next.Doc)
		if err != nil {
			return store.Run{}, err
		}
		next.Revision = cur.Revision + 1
		next.UpdatedAt = s.now().UTC()
		res, err := s.w.ExecContext(ctx, `UPDATE runs SET status = ?, updated_at = ?, revision = ?, owner = ?, lease_until = ?, doc = ?
			WHERE id = ? AND revision = ?`,
			string(next.Status), nanos(next.UpdatedAt), next.Revision, next.Owner, nanos(next.LeaseUntil), doc, id, cur.Revision)
		if err != nil {
			return store.Run{}, fmt.Errorf("sqlite: update run: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 1 {
			return next, nil
		}
		if attempt >= 1000 {
			return store.Run{}, fmt.Errorf("run %s: %w", id, store.ErrConflict)
		}
		if err := ctx.Err(); err != nil {
			return store.Run{}, err
		}
	}
}

// ListRuns implements store.Store.
func (s *Store) ListRuns(ctx context.Context, opts store.ListOptions) ([]store.Run, error) {
	now := s.now().UnixNano()
	where, args := "", []any{}
	switch opts.Status {
	case "":
	case store.StatusInterrupted:
		where = `WHERE status = 'interrupted' OR (status IN ('running', 'pending') AND lease_until > 0 AND lease_until < ?)`
		args = append(args, now)
	case store.StatusRunning, store.StatusPending:
		where = `WHERE status = ? AND NOT (lease_until > 0 AND lease_until < ?)`
		args = append(args, string(opts.Status), now)
	default:
		where = `WHERE status = ?`
		args = append(args, string(opts.Status))
	}
	q := `SELECT ` + runColumns + ` FROM runs ` + where + ` ORDER BY created_at DESC, id DESC`
	if opts.Limit > 0 {
		q += fmt.Sprintf(" LIMIT %d", opts.Limit)
	}
	rows, err := s.r.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list runs: %w", err)
	}
	defer rows.Close()
	var out []store.Run
	clock := s.now()
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return nil, err
		}
		r.Status = store.Effective(r, clock)
		out = append(out, r)
	}
	return out, rows.Err()
}

func (s *Store) runExists(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, runID string) error {
	var n int
	if err := q.QueryRowContext(ctx, `SELECT count(*) FROM runs WHERE id = ?`, runID).Scan(&n); err != nil {
		return fmt.Errorf("sqlite: %w", err)
	}
	if n == 0 {
		return fmt.Errorf("run %s: %w", runID, store.ErrNotFound)
	}
	return nil
}

// AppendEvents implements store.Store. The batch commits in one
// transaction with a full fsync before it returns.
func (s *Store) AppendEvents(ctx context.Context, runID string, events []store.NewEvent) ([]store.Event, error) {
	if err := store.CheckEvents(events); err != nil {
		return nil, err
	}
	bodies := make([]string, len(events))
	for i, e := range events {
		b, err := canonjson.Canonical(e.Body)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", store.ErrInvalid, err)
		}
		bodies[i] = string(b)
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("sqlite: append events: %w", err)
	}
	defer tx.Rollback()
	if err := s.runExists(ctx, tx, runID); err != nil {
		return nil, err
	}
	var last int64
	if err := tx.QueryRowContext(ctx, `SELECT coalesce(max(seq), 0) FROM events WHERE run_id = ?`, runID).Scan(&last); err != nil {
		return nil, fmt.Errorf("sqlite: append events: %w", err)
	}
	stmt, err := tx.PrepareContext(ctx, `INSERT INTO events (run_id, seq, id, type, time, body) VALUES (?, ?, ?, ?, ?, ?)`)
	if err != nil {
		return nil, fmt.Errorf("sqlite: append events: %w", err)
	}
	defer stmt.Close()
	out := make([]store.Event, len(events))
	for i, e := range events {
		seq := last + int64(i) + 1
		if _, err := stmt.ExecContext(ctx, runID, seq, e.ID, e.Type, e.Time.UnixNano(), bodies[i]); err != nil {
			if isConstraint(err) {
				return nil, fmt.Errorf("event %s of run %s: %w", e.ID, runID, store.ErrExists)
			}
			return nil, fmt.Errorf("sqlite: append events: %w", err)
		}
		out[i] = store.Event{RunID: runID, Sequence: seq, Cursor: store.CursorFor(seq), ID: e.ID, Type: e.Type, Time: time.Unix(0, e.Time.UnixNano()).UTC(), Body: e.Body}
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("sqlite: append events: %w", err)
	}
	return out, nil
}

// Events implements store.Store.
func (s *Store) Events(ctx context.Context, runID, after string, limit int) ([]store.Event, error) {
	from, err := store.ParseCursor(after)
	if err != nil {
		return nil, err
	}
	if err := s.runExists(ctx, s.r, runID); err != nil {
		return nil, err
	}
	q := `SELECT seq, id, type, time, body FROM events WHERE run_id = ? AND seq > ? ORDER BY seq`
	if limit > 0 {
		q += fmt.Sprintf(" LIMIT %d", limit)
	}
	rows, err := s.r.QueryContext(ctx, q, runID, from)
	if err != nil {
		return nil, fmt.Errorf("sqlite: events: %w", err)
	}
	defer rows.Close()
	var out []store.Event
	for rows.Next() {
		e := store.Event{RunID: runID}
		var t int64
		var body string
		if err := rows.Scan(&e.Sequence, &e.ID, &e.Type, &t, &body); err != nil {
			return nil, fmt.Errorf("sqlite: events: %w", err)
		}
		e.Cursor, e.Time = store.CursorFor(e.Sequence), time.Unix(0, t).UTC()
		if e.Body, err = canonjson.Decode([]byte(body)); err != nil {
			return nil, fmt.Errorf("sqlite: event %d body: %w", e.Sequence, err)
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

// AppendLedger implements store.Store.
func (s *Store) AppendLedger(ctx context.Context, runID string, bodies []canonjson.Value, at time.Time) ([]store.LedgerEntry, error) {
	texts := make([]string, len(bodies))
	for i, b := range bodies {
		c, err := canonjson.Canonical(b)
		if err != nil {
			return nil, fmt.Errorf("%w: ledger entry %d: %w", store.ErrInvalid, i, err)
		}
		texts[i] = string(c)
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("sqlite: append ledger: %w", err)
	}
	defer tx.Rollback()
	if err := s.runExists(ctx, tx, runID); err != nil {
		return nil, err
	}
	var last int64
	if err := tx.QueryRowContext(ctx, `SELECT coalesce(max(seq), 0) FROM ledger WHERE run_id = ?`, runID).Scan(&last); err != nil {
		return nil, fmt.Errorf("sqlite: append ledger: %w", err)
	}
	out := make([]store.LedgerEntry, len(bodies))
	for i := range bodies {
		seq := last + int64(i) + 1
		if _, err := tx.ExecContext(ctx, `INSERT INTO ledger (run_id, seq, time, body) VALUES (?, ?, ?, ?)`, runID, seq, at.UnixNano(), texts[i]); err != nil {
			return nil, fmt.Errorf("sqlite: append ledger: %w", err)
		}
		out[i] = store.LedgerEntry{RunID: runID, Sequence: seq, Time: time.Unix(0, at.UnixNano()).UTC(), Body: bodies[i]}
	}
	return out, tx.Commit()
}

// Ledger implements store.Store.
func (s *Store) Ledger(ctx context.Context, runID string) ([]store.LedgerEntry, error) {
	if err := s.runExists(ctx, s.r, runID); err != nil {
		return nil, err
	}
	rows, err := s.r.QueryContext(ctx, `SELECT seq, time, body FROM ledger WHERE run_id = ? ORDER BY seq`, runID)
	if err != nil {
		return nil, fmt.Errorf("sqlite: ledger: %w", err)
	}
	defer rows.Close()
	var out []store.LedgerEntry
	for rows.Next() {
		e := store.LedgerEntry{RunID: runID}
		var t int64
		var body string
		if err := rows.Scan(&e.Sequence, &t, &body); err != nil {
			return nil, fmt.Errorf("sqlite: ledger: %w", err)
		}
		e.Time = time.Unix(0, t).UTC()
		if e.Body, err = canonjson.Decode([]byte(body)); err != nil {
			return nil, fmt.Errorf("sqlite: ledger entry %d: %w", e.Sequence, err)
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

// ClaimIdempotency implements store.Store.
func (s *Store) ClaimIdempotency(ctx context.Context, rec store.Idempotency) (store.Idempotency, bool, error) {
	if err := store.CheckIdempotency(rec); err != nil {
		return store.Idempotency{}, false, err
	}
	result, err := encode(rec.Result)
	if err != nil {
		return store.Idempotency{}, false, err
	}
	if rec.CreatedAt.IsZero() {
		rec.CreatedAt = s.now().UTC()
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return store.Idempotency{}, false, fmt.Errorf("sqlite: idempotency: %w", err)
	}
	defer tx.Rollback()
	var existing store.Idempotency
	var res sql.NullString
	var created int64
	err = tx.QueryRowContext(ctx, `SELECT scope, key, request_digest, result, created_at FROM idempotency WHERE scope = ? AND key = ?`, rec.Scope, rec.Key).
		Scan(&existing.Scope, &existing.Key, &existing.RequestDigest, &res, &created)
	switch {
	case err == nil:
		existing.CreatedAt = fromNanos(created)
		if existing.Result, err = decode(res); err != nil {
			return store.Idempotency{}, false, err
		}
		return existing, false, nil
	case !errors.Is(err, sql.ErrNoRows):
		return store.Idempotency{}, false, fmt.Errorf("sqlite: idempotency: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO idempotency (scope, key, request_digest, result, created_at) VALUES (?, ?, ?, ?, ?)`,
		rec.Scope, rec.Key, rec.RequestDigest, result, nanos(rec.CreatedAt)); err != nil {
		return store.Idempotency{}, false, fmt.Errorf("sqlite: idempotency: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return store.Idempotency{}, false, fmt.Errorf("sqlite: idempotency: %w", err)
	}
	rec.CreatedAt = fromNanos(nanos(rec.CreatedAt))
	return rec, true, nil
}
