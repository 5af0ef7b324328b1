package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/internal/sqlitedb"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/internal/groupcommit"
	"github.com/agentrt/agentrt/store/internal/sqlrow"
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
	// MustExist refuses to create the store: Open fails with an error
	// wrapping fs.ErrNotExist when nothing is at path, and creates
	// neither the file nor its directory. Readers use it so that a
	// mistyped path is reported rather than answered from a new, empty
	// store.
	MustExist bool
}

// Store is a store.Store on one SQLite file.
type Store struct {
	w, r    *sql.DB
	now     func() time.Time
	path    string
	appends *groupcommit.Committer[appendReq, []store.Event]
}

var _ store.Store = (*Store)(nil)

// Open opens (creating if needed, unless opts.MustExist) the store at path
// and applies pending migrations.
func Open(ctx context.Context, path string, opts Options) (*Store, error) {
	if opts.MustExist {
		fi, err := os.Stat(path)
		if err != nil {
			return nil, fmt.Errorf("sqlite: no store at %s: %w", path, err)
		}
		if !fi.Mode().IsRegular() {
			return nil, fmt.Errorf("sqlite: %s is not a store file (%s)", path, fi.Mode().Type())
		}
	}
	busy := opts.BusyTimeout
	if busy <= 0 {
		busy = sqlitedb.DefaultBusyTimeout
	}
	w, r, err := sqlitedb.Open(ctx, path, busy, "foreign_keys(ON)")
	if err != nil {
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	s := &Store{w: w, r: r, now: opts.Now, path: path}
	if s.now == nil {
		s.now = time.Now
	}
	// A batch may first wait out another process's write lock.
	s.appends = groupcommit.New(groupcommit.Options{Timeout: busy + commitTimeout}, s.commitAppends)
	if err := sqlitedb.Migrate(ctx, s.w, migrations, "schema_migrations", s.now()); err != nil {
		err = fmt.Errorf("sqlite: %w", err)
		s.Close()
		return nil, err
	}
	return s, nil
}

// Path returns the database file.
func (s *Store) Path() string { return s.path }

// commitTimeout bounds one group-commit transaction once it holds the
// write lock.
const commitTimeout = 30 * time.Second

// Close implements store.Store. Appends already queued commit first;
// later ones fail with store.ErrClosed.
func (s *Store) Close() error {
	s.appends.Close()
	return errors.Join(s.r.Close(), s.w.Close())
}

// CreateRun implements store.Store.
func (s *Store) CreateRun(ctx context.Context, r store.Run) (store.Run, error) {
	if err := store.CheckNew(r); err != nil {
		return store.Run{}, err
	}
	doc, err := sqlrow.Encode(r.Doc)
	if err != nil {
		return store.Run{}, err
	}
	now := s.now().UTC()
	if r.CreatedAt.IsZero() {
		r.CreatedAt = now
	}
	r.UpdatedAt, r.Revision = now, 1
	if r.Generation == 0 {
		r.Generation = 1
	}
	_, err = s.w.ExecContext(ctx, `INSERT INTO runs (`+sqlrow.RunColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		r.ID, r.Kind, string(r.Status), sqlrow.Nanos(r.CreatedAt), sqlrow.Nanos(r.UpdatedAt), r.Revision, r.Owner, sqlrow.Nanos(r.LeaseUntil), doc, r.Generation)
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
	r, err := sqlrow.ScanRun(s.r.QueryRowContext(ctx, `SELECT `+sqlrow.RunColumns+` FROM runs WHERE id = ?`, id), "sqlite")
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
	return sqlrow.UpdateRun(ctx, id, nil, s.now, s.GetRun, fn, s.write(ctx))
}

// UpdateFenced implements store.Store.
func (s *Store) UpdateFenced(ctx context.Context, f store.Fence, fn func(*store.Run) error) (store.Run, error) {
	return sqlrow.UpdateRun(ctx, f.RunID, &f, s.now, s.GetRun, fn, s.write(ctx))
}

func (s *Store) write(ctx context.Context) sqlrow.Write {
	return func(cur, next store.Run, doc *string, fenced bool, now time.Time) (bool, error) {
		q := `UPDATE runs SET status = ?, updated_at = ?, revision = ?, owner = ?, lease_until = ?, doc = ?, generation = ?
			WHERE id = ? AND revision = ?`
		args := []any{string(next.Status), sqlrow.Nanos(next.UpdatedAt), next.Revision, next.Owner, sqlrow.Nanos(next.LeaseUntil), doc, next.Generation,
			cur.ID, cur.Revision}
		if fenced {
			q += ` AND ` + sqlrow.LeaseHolds("?")
			args = append(args, now.UnixNano())
		}
		res, err := s.w.ExecContext(ctx, q, args...)
		if err != nil {
			return false, fmt.Errorf("sqlite: update run: %w", err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return false, fmt.Errorf("sqlite: update run: %w", err)
		}
		return n == 1, nil
	}
}

// DeleteRun implements store.Store: the run, its events and its ledger
// go in one write transaction.
func (s *Store) DeleteRun(ctx context.Context, id string) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqlite: delete run: %w", err)
	}
	defer tx.Rollback()
	var status string
	var lease int64
	err = tx.QueryRowContext(ctx, `SELECT status, lease_until FROM runs WHERE id = ?`, id).Scan(&status, &lease)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("run %s: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("sqlite: delete run: %w", err)
	}
	if err := store.CheckDelete(store.Run{ID: id, Status: store.Status(status), LeaseUntil: sqlrow.FromNanos(lease)}, s.now()); err != nil {
		return err
	}
	for _, q := range []string{`DELETE FROM events WHERE run_id = ?`, `DELETE FROM ledger WHERE run_id = ?`, `DELETE FROM runs WHERE id = ?`} {
		if _, err := tx.ExecContext(ctx, q, id); err != nil {
			return fmt.Errorf("sqlite: delete run: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlite: delete run: %w", err)
	}
	return nil
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
	if opts.Kind != "" {
		where = sqlrow.AndWhere(where, `kind = ?`)
		args = append(args, opts.Kind)
	}
	q := `SELECT ` + sqlrow.RunColumns + ` FROM runs ` + where + ` ORDER BY created_at DESC, id DESC`
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
		r, err := sqlrow.ScanRun(rows, "sqlite")
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

// checkFence checks f inside tx, a write transaction (BEGIN IMMEDIATE:
// no other writer can change the run before it commits).
func (s *Store) checkFence(ctx context.Context, tx *sql.Tx, f store.Fence) error {
	row := tx.QueryRowContext(ctx, `SELECT status, generation, lease_until FROM runs WHERE id = ?`, f.RunID)
	return sqlrow.CheckFenced(row, f, s.now(), "sqlite", sql.ErrNoRows)
}

// appendReq is one AppendEvents call waiting for the committer: the
// fence, the events and their canonical bodies.
type appendReq struct {
	f      store.Fence
	events []store.NewEvent
	bodies []string
}

type appendCall = groupcommit.Request[appendReq, []store.Event]

// AppendEvents implements store.Store. The events commit with a full
// fsync before it returns, in one transaction with whatever other
// appends (of any run) were waiting at that moment: one fsync serves
// them all.
func (s *Store) AppendEvents(ctx context.Context, f store.Fence, events []store.NewEvent) ([]store.Event, error) {
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
	return s.appends.Do(ctx, appendReq{f: f, events: events, bodies: bodies}, len(events))
}

// commitAppends writes a batch of appends in one write transaction and
// commits it. Each append is checked and written on its own: one whose
// fence no longer holds, whose run is missing or whose event id already
// exists fails alone, and the rest of the batch commits.
func (s *Store) commitAppends(ctx context.Context, batch []*appendCall) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqlite: append events: %w", err)
	}
	defer tx.Rollback()
	head, err := tx.PrepareContext(ctx, `SELECT status, generation, lease_until, (SELECT coalesce(max(seq), 0) FROM events WHERE run_id = runs.id) FROM runs WHERE id = ?`)
	if err != nil {
		return fmt.Errorf("sqlite: append events: %w", err)
	}
	defer head.Close()
	insert, err := tx.PrepareContext(ctx, `INSERT INTO events (run_id, seq, id, type, time, body) VALUES (?, ?, ?, ?, ?, ?)`)
	if err != nil {
		return fmt.Errorf("sqlite: append events: %w", err)
	}
	defer insert.Close()
	for _, c := range batch {
		out, err := s.appendOne(ctx, tx, head, insert, c.In)
		switch {
		case err == nil:
			c.Succeed(out)
		case errors.Is(err, store.ErrFenced), errors.Is(err, store.ErrNotFound), errors.Is(err, store.ErrExists):
			c.Fail(err)
		default:
			return err
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlite: append events: %w", err)
	}
	return nil
}

// appendOne writes one append inside tx. It leaves nothing of the append
// behind when it fails: a single insert is undone by SQLite on its own
// when it breaks a constraint; several are wrapped in a savepoint.
func (s *Store) appendOne(ctx context.Context, tx *sql.Tx, head, insert *sql.Stmt, a appendReq) (out []store.Event, err error) {
	runID := a.f.RunID
	var status string
	var gen, lease, last int64
	if err := head.QueryRowContext(ctx, runID).Scan(&status, &gen, &lease, &last); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return nil, fmt.Errorf("run %s: %w", runID, store.ErrNotFound)
		}
		return nil, fmt.Errorf("sqlite: append events: %w", err)
	}
	if err := sqlrow.Fenced(a.f, status, gen, lease, s.now()); err != nil {
		return nil, err
	}
	if len(a.events) > 1 {
		if _, err := tx.ExecContext(ctx, `SAVEPOINT append_events`); err != nil {
			return nil, fmt.Errorf("sqlite: append events: %w", err)
		}
		defer func() {
			if err != nil {
				if _, rerr := tx.ExecContext(ctx, `ROLLBACK TO append_events`); rerr != nil {
					// The append may be half written: the batch cannot commit.
					err = fmt.Errorf("sqlite: append events: undoing a failed append (%v): %w", err, rerr)
					return
				}
			}
			if _, rerr := tx.ExecContext(ctx, `RELEASE append_events`); rerr != nil {
				out, err = nil, fmt.Errorf("sqlite: append events: %w", rerr)
			}
		}()
	}
	out = make([]store.Event, len(a.events))
	for i, e := range a.events {
		seq := last + int64(i) + 1
		if _, err := insert.ExecContext(ctx, runID, seq, e.ID, e.Type, e.Time.UnixNano(), a.bodies[i]); err != nil {
			if isConstraint(err) {
				return nil, fmt.Errorf("event %s of run %s: %w", e.ID, runID, store.ErrExists)
			}
			return nil, fmt.Errorf("sqlite: append events: %w", err)
		}
		out[i] = store.Event{RunID: runID, Sequence: seq, Cursor: store.CursorFor(seq), ID: e.ID, Type: e.Type, Time: time.Unix(0, e.Time.UnixNano()).UTC(), Body: e.Body}
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
	return sqlrow.ScanEvents(rows, runID, "sqlite")
}

// AppendLedger implements store.Store.
func (s *Store) AppendLedger(ctx context.Context, f store.Fence, bodies []canonjson.Value, at time.Time) ([]store.LedgerEntry, error) {
	runID := f.RunID
	texts, err := sqlrow.CanonicalTexts(bodies)
	if err != nil {
		return nil, err
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("sqlite: append ledger: %w", err)
	}
	defer tx.Rollback()
	if err := s.checkFence(ctx, tx, f); err != nil {
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
	return sqlrow.ScanLedger(rows, runID, "sqlite")
}

// ListIdempotency implements store.Store. A key prefix is a range of
// the primary key (scope, key), an age the idempotency_by_age index
// (migration 0004).
func (s *Store) ListIdempotency(ctx context.Context, q store.IdempotencyQuery) ([]store.Idempotency, error) {
	if err := store.CheckIdempotencyQuery(q); err != nil {
		return nil, err
	}
	where, args := idempotencyWhere(q)
	rows, err := s.r.QueryContext(ctx, `SELECT scope, key, request_digest, result, created_at FROM idempotency WHERE `+where+
		` ORDER BY created_at, key LIMIT ?`, append(args, q.Limit)...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: idempotency: %w", err)
	}
	defer rows.Close()
	return sqlrow.ScanIdempotency(rows, "sqlite")
}

// idempotencyWhere is the condition selecting q's records and its
// arguments.
func idempotencyWhere(q store.IdempotencyQuery) (string, []any) {
	where, args := `scope = ?`, []any{q.Scope}
	if q.KeyPrefix != "" {
		if upper, ok := sqlrow.PrefixRange(q.KeyPrefix); ok {
			where += ` AND key >= ? AND key < ?`
			args = append(args, q.KeyPrefix, upper)
		} else {
			where += ` AND key >= ? AND substr(key, 1, length(?)) = ?`
			args = append(args, q.KeyPrefix, q.KeyPrefix, q.KeyPrefix)
		}
	}
	if !q.Before.IsZero() {
		where += ` AND created_at < ?`
		args = append(args, sqlrow.Nanos(q.Before))
	}
	return where, args
}

// CountIdempotency implements store.IdempotencyCounter.
func (s *Store) CountIdempotency(ctx context.Context, q store.IdempotencyQuery) (int64, error) {
	if q.Scope == "" {
		return 0, fmt.Errorf("%w: an idempotency count needs a scope", store.ErrInvalid)
	}
	where, args := idempotencyWhere(q)
	var n int64
	if err := s.r.QueryRowContext(ctx, `SELECT count(*) FROM idempotency WHERE `+where, args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("sqlite: count idempotency: %w", err)
	}
	return n, nil
}

// DeleteIdempotency implements store.Store.
func (s *Store) DeleteIdempotency(ctx context.Context, keys []store.IdempotencyKey) (int, error) {
	if err := store.CheckIdempotencyKeys(keys); err != nil {
		return 0, err
	}
	if len(keys) == 0 {
		return 0, nil
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("sqlite: delete idempotency: %w", err)
	}
	defer tx.Rollback()
	// One statement for all the names, not one per name: a statement
	// costs SQLite a prepare and the driver a bind whatever it deletes,
	// and each bound value a Go allocation. The names travel as one JSON
	// array of [scope, key] pairs; a name given twice matches its row
	// once, as two deletes would.
	pairs := make([][2]string, len(keys))
	for i, k := range keys {
		pairs[i] = [2]string{k.Scope, k.Key}
	}
	names, err := json.Marshal(pairs)
	if err != nil {
		return 0, fmt.Errorf("sqlite: delete idempotency: %w", err)
	}
	// The primary key (scope, key) finds each pair.
	res, err := tx.ExecContext(ctx, `DELETE FROM idempotency WHERE (scope, key) IN
		(SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]') FROM json_each(?))`, string(names))
	if err != nil {
		return 0, fmt.Errorf("sqlite: delete idempotency: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("sqlite: delete idempotency: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("sqlite: delete idempotency: %w", err)
	}
	return int(n), nil
}

// ClaimIdempotency implements store.Store.
func (s *Store) ClaimIdempotency(ctx context.Context, rec store.Idempotency) (store.Idempotency, bool, error) {
	if err := store.CheckIdempotency(rec); err != nil {
		return store.Idempotency{}, false, err
	}
	result, err := sqlrow.Encode(rec.Result)
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
	var res *string
	var created int64
	err = tx.QueryRowContext(ctx, `SELECT scope, key, request_digest, result, created_at FROM idempotency WHERE scope = ? AND key = ?`, rec.Scope, rec.Key).
		Scan(&existing.Scope, &existing.Key, &existing.RequestDigest, &res, &created)
	switch {
	case err == nil:
		existing.CreatedAt = sqlrow.FromNanos(created)
		if existing.Result, err = sqlrow.Decode(res); err != nil {
			return store.Idempotency{}, false, err
		}
		return existing, false, nil
	case !errors.Is(err, sql.ErrNoRows):
		return store.Idempotency{}, false, fmt.Errorf("sqlite: idempotency: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO idempotency (scope, key, request_digest, result, created_at) VALUES (?, ?, ?, ?, ?)`,
		rec.Scope, rec.Key, rec.RequestDigest, result, sqlrow.Nanos(rec.CreatedAt)); err != nil {
		return store.Idempotency{}, false, fmt.Errorf("sqlite: idempotency: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return store.Idempotency{}, false, fmt.Errorf("sqlite: idempotency: %w", err)
	}
	rec.CreatedAt = sqlrow.FromNanos(sqlrow.Nanos(rec.CreatedAt))
	return rec, true, nil
}
