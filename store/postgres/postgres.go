package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/store"
)

//go:embed migrations/*.sql
var migrations embed.FS

// migrationLock is the advisory lock key held while migrating ("agentrt
// run store" in ASCII, truncated to 63 bits).
const migrationLock int64 = 0x6167656e74727400

// Options adjusts Open.
type Options struct {
	// Now replaces time.Now (tests).
	Now func() time.Time
	// MaxConns caps the connection pool; 0 keeps pgx's default
	// (max(4, GOMAXPROCS)) unless the connection string sets
	// pool_max_conns.
	MaxConns int32
}

// Store is a store.Store on PostgreSQL. It is safe for concurrent use by
// many goroutines and many processes.
type Store struct {
	pool *pgxpool.Pool
	now  func() time.Time
}

var _ store.Store = (*Store)(nil)

// Open connects to the database named by connString (a postgres:// URL
// or key=value string) and applies pending migrations.
func Open(ctx context.Context, connString string, opts Options) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(connString)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	if opts.MaxConns > 0 {
		cfg.MaxConns = opts.MaxConns
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	s := &Store{pool: pool, now: opts.Now}
	if s.now == nil {
		s.now = time.Now
	}
	if err := migrate(ctx, pool, "schema_migrations", migrationLock); err != nil {
		pool.Close()
		return nil, err
	}
	return s, nil
}

// migrate applies the embedded migrations not yet recorded in table,
// holding an advisory lock so that concurrent processes migrate once.
func migrate(ctx context.Context, pool *pgxpool.Pool, table string, lock int64) error {
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, lock); err != nil {
			return fmt.Errorf("postgres: migrate: %w", err)
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+table+` (version text PRIMARY KEY, applied_at bigint NOT NULL)`); err != nil {
			return fmt.Errorf("postgres: migrate: %w", err)
		}
		names, err := fs.Glob(migrations, "migrations/*.sql")
		if err != nil {
			return err
		}
		sort.Strings(names)
		for _, name := range names {
			version := strings.TrimSuffix(filepath.Base(name), ".sql")
			var n int
			if err := tx.QueryRow(ctx, `SELECT count(*) FROM `+table+` WHERE version = $1`, version).Scan(&n); err != nil {
				return fmt.Errorf("postgres: migrate: %w", err)
			}
			if n > 0 {
				continue
			}
			body, err := migrations.ReadFile(name)
			if err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, string(body)); err != nil {
				return fmt.Errorf("postgres: migration %s: %w", version, err)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO `+table+` (version, applied_at) VALUES ($1, $2)`, version, time.Now().UnixNano()); err != nil {
				return fmt.Errorf("postgres: migrate: %w", err)
			}
		}
		return nil
	})
}

// Close implements store.Store.
func (s *Store) Close() error {
	s.pool.Close()
	return nil
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

func encode(v canonjson.Value) (*string, error) {
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

func decode(text *string) (canonjson.Value, error) {
	if text == nil {
		return canonjson.Value{}, nil
	}
	return canonjson.Decode([]byte(*text))
}

func isUniqueViolation(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23505"
}

const runColumns = `id, kind, status, created_at, updated_at, revision, owner, lease_until, doc`

func scanRun(row pgx.Row) (store.Run, error) {
	var r store.Run
	var status string
	var created, updated, lease int64
	var doc *string
	if err := row.Scan(&r.ID, &r.Kind, &status, &created, &updated, &r.Revision, &r.Owner, &lease, &doc); err != nil {
		return store.Run{}, err
	}
	r.Status = store.Status(status)
	r.CreatedAt, r.UpdatedAt, r.LeaseUntil = fromNanos(created), fromNanos(updated), fromNanos(lease)
	var err error
	if r.Doc, err = decode(doc); err != nil {
		return store.Run{}, fmt.Errorf("postgres: run %s document: %w", r.ID, err)
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
	_, err = s.pool.Exec(ctx, `INSERT INTO runs (`+runColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
		r.ID, r.Kind, string(r.Status), nanos(r.CreatedAt), nanos(r.UpdatedAt), r.Revision, r.Owner, nanos(r.LeaseUntil), doc)
	if isUniqueViolation(err) {
		return store.Run{}, fmt.Errorf("run %s: %w", r.ID, store.ErrExists)
	}
	if err != nil {
		return store.Run{}, fmt.Errorf("postgres: create run: %w", err)
	}
	r.CreatedAt = fromNanos(nanos(r.CreatedAt))
	return r, nil
}

// GetRun implements store.Store.
func (s *Store) GetRun(ctx context.Context, id string) (store.Run, error) {
	r, err := scanRun(s.pool.QueryRow(ctx, `SELECT `+runColumns+` FROM runs WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Run{}, fmt.Errorf("run %s: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return store.Run{}, fmt.Errorf("postgres: get run: %w", err)
	}
	r.Status = store.Effective(r, s.now())
	return r, nil
}

// UpdateRun implements store.Store: read, apply fn, and write only if the
// revision is still the one read; otherwise read again.
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
		tag, err := s.pool.Exec(ctx, `UPDATE runs SET status = $1, updated_at = $2, revision = $3, owner = $4, lease_until = $5, doc = $6
			WHERE id = $7 AND revision = $8`,
			string(next.Status), nanos(next.UpdatedAt), next.Revision, next.Owner, nanos(next.LeaseUntil), doc, id, cur.Revision)
		if err != nil {
			return store.Run{}, fmt.Errorf("postgres: update run: %w", err)
		}
		if tag.RowsAffected() == 1 {
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
		where = `WHERE status = 'interrupted' OR (status IN ('running', 'pending') AND lease_until > 0 AND lease_until < $1)`
		args = append(args, now)
	case store.StatusRunning, store.StatusPending:
		where = `WHERE status = $1 AND NOT (lease_until > 0 AND lease_until < $2)`
		args = append(args, string(opts.Status), now)
	default:
		where = `WHERE status = $1`
		args = append(args, string(opts.Status))
	}
	q := `SELECT ` + runColumns + ` FROM runs ` + where + ` ORDER BY created_at DESC, id DESC`
	if opts.Limit > 0 {
		q += fmt.Sprintf(" LIMIT %d", opts.Limit)
	}
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("postgres: list runs: %w", err)
	}
	defer rows.Close()
	var out []store.Run
	clock := s.now()
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return nil, fmt.Errorf("postgres: list runs: %w", err)
		}
		r.Status = store.Effective(r, clock)
		out = append(out, r)
	}
	return out, rows.Err()
}

// lockRun locks the run's row for the rest of tx, so that appends to one
// run are serialized across connections and processes (gapless
// sequences), or reports ErrNotFound.
func lockRun(ctx context.Context, tx pgx.Tx, runID string) error {
	var one int
	err := tx.QueryRow(ctx, `SELECT 1 FROM runs WHERE id = $1 FOR NO KEY UPDATE`, runID).Scan(&one)
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("run %s: %w", runID, store.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	return nil
}

func (s *Store) runExists(ctx context.Context, runID string) error {
	var exists bool
	if err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM runs WHERE id = $1)`, runID).Scan(&exists); err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	if !exists {
		return fmt.Errorf("run %s: %w", runID, store.ErrNotFound)
	}
	return nil
}

// AppendEvents implements store.Store. The batch commits in one
// transaction (synchronous commit) before it returns.
func (s *Store) AppendEvents(ctx context.Context, runID string, events []store.NewEvent) ([]store.Event, error) {
	if err := store.CheckEvents(events); err != nil {
		return nil, err
	}
	n := len(events)
	seqs, ids, types, times, bodies := make([]int64, n), make([]string, n), make([]string, n), make([]int64, n), make([]string, n)
	for i, e := range events {
		b, err := canonjson.Canonical(e.Body)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", store.ErrInvalid, err)
		}
		ids[i], types[i], times[i], bodies[i] = e.ID, e.Type, e.Time.UnixNano(), string(b)
	}
	out := make([]store.Event, n)
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := lockRun(ctx, tx, runID); err != nil {
			return err
		}
		var last int64
		if err := tx.QueryRow(ctx, `SELECT coalesce(max(seq), 0) FROM events WHERE run_id = $1`, runID).Scan(&last); err != nil {
			return fmt.Errorf("postgres: append events: %w", err)
		}
		for i := range events {
			seqs[i] = last + int64(i) + 1
		}
		_, err := tx.Exec(ctx, `INSERT INTO events (run_id, seq, id, type, time, body)
			SELECT $1, * FROM unnest($2::bigint[], $3::text[], $4::text[], $5::bigint[], $6::text[])`,
			runID, seqs, ids, types, times, bodies)
		if isUniqueViolation(err) {
			return fmt.Errorf("an event id of this batch is already in run %s: %w", runID, store.ErrExists)
		}
		if err != nil {
			return fmt.Errorf("postgres: append events: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for i, e := range events {
		out[i] = store.Event{RunID: runID, Sequence: seqs[i], Cursor: store.CursorFor(seqs[i]), ID: e.ID, Type: e.Type,
			Time: time.Unix(0, times[i]).UTC(), Body: e.Body}
	}
	return out, nil
}

// Events implements store.Store.
func (s *Store) Events(ctx context.Context, runID, after string, limit int) ([]store.Event, error) {
	from, err := store.ParseCursor(after)
	if err != nil {
		return nil, err
	}
	if err := s.runExists(ctx, runID); err != nil {
		return nil, err
	}
	q := `SELECT seq, id, type, time, body FROM events WHERE run_id = $1 AND seq > $2 ORDER BY seq`
	if limit > 0 {
		q += fmt.Sprintf(" LIMIT %d", limit)
	}
	rows, err := s.pool.Query(ctx, q, runID, from)
	if err != nil {
		return nil, fmt.Errorf("postgres: events: %w", err)
	}
	defer rows.Close()
	var out []store.Event
	for rows.Next() {
		e := store.Event{RunID: runID}
		var t int64
		var body string
		if err := rows.Scan(&e.Sequence, &e.ID, &e.Type, &t, &body); err != nil {
			return nil, fmt.Errorf("postgres: events: %w", err)
		}
		e.Cursor, e.Time = store.CursorFor(e.Sequence), time.Unix(0, t).UTC()
		if e.Body, err = canonjson.Decode([]byte(body)); err != nil {
			return nil, fmt.Errorf("postgres: event %d body: %w", e.Sequence, err)
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
	seqs := make([]int64, len(bodies))
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := lockRun(ctx, tx, runID); err != nil {
			return err
		}
		var last int64
		if err := tx.QueryRow(ctx, `SELECT coalesce(max(seq), 0) FROM ledger WHERE run_id = $1`, runID).Scan(&last); err != nil {
			return fmt.Errorf("postgres: append ledger: %w", err)
		}
		for i := range seqs {
			seqs[i] = last + int64(i) + 1
		}
		if _, err := tx.Exec(ctx, `INSERT INTO ledger (run_id, seq, time, body) SELECT $1, s, $2, b FROM unnest($3::bigint[], $4::text[]) AS x (s, b)`,
			runID, at.UnixNano(), seqs, texts); err != nil {
			return fmt.Errorf("postgres: append ledger: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := make([]store.LedgerEntry, len(bodies))
	for i := range bodies {
		out[i] = store.LedgerEntry{RunID: runID, Sequence: seqs[i], Time: time.Unix(0, at.UnixNano()).UTC(), Body: bodies[i]}
	}
	return out, nil
}

// Ledger implements store.Store.
func (s *Store) Ledger(ctx context.Context, runID string) ([]store.LedgerEntry, error) {
	if err := s.runExists(ctx, runID); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, `SELECT seq, time, body FROM ledger WHERE run_id = $1 ORDER BY seq`, runID)
	if err != nil {
		return nil, fmt.Errorf("postgres: ledger: %w", err)
	}
	defer rows.Close()
	var out []store.LedgerEntry
	for rows.Next() {
		e := store.LedgerEntry{RunID: runID}
		var t int64
		var body string
		if err := rows.Scan(&e.Sequence, &t, &body); err != nil {
			return nil, fmt.Errorf("postgres: ledger: %w", err)
		}
		e.Time = time.Unix(0, t).UTC()
		if e.Body, err = canonjson.Decode([]byte(body)); err != nil {
			return nil, fmt.Errorf("postgres: ledger entry %d: %w", e.Sequence, err)
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

// ClaimIdempotency implements store.Store. INSERT … ON CONFLICT DO
// NOTHING decides the race: exactly one claimant inserts; the others read
// the winner's record.
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
	for {
		tag, err := s.pool.Exec(ctx, `INSERT INTO idempotency (scope, key, request_digest, result, created_at) VALUES ($1, $2, $3, $4, $5)
			ON CONFLICT (scope, key) DO NOTHING`, rec.Scope, rec.Key, rec.RequestDigest, result, nanos(rec.CreatedAt))
		if err != nil {
			return store.Idempotency{}, false, fmt.Errorf("postgres: idempotency: %w", err)
		}
		if tag.RowsAffected() == 1 {
			rec.CreatedAt = fromNanos(nanos(rec.CreatedAt))
			return rec, true, nil
		}
		var existing store.Idempotency
		var res *string
		var created int64
		err = s.pool.QueryRow(ctx, `SELECT scope, key, request_digest, result, created_at FROM idempotency WHERE scope = $1 AND key = $2`,
			rec.Scope, rec.Key).Scan(&existing.Scope, &existing.Key, &existing.RequestDigest, &res, &created)
		if errors.Is(err, pgx.ErrNoRows) {
			continue // the conflicting claim was rolled back; claim again
		}
		if err != nil {
			return store.Idempotency{}, false, fmt.Errorf("postgres: idempotency: %w", err)
		}
		existing.CreatedAt = fromNanos(created)
		if existing.Result, err = decode(res); err != nil {
			return store.Idempotency{}, false, err
		}
		return existing, false, nil
	}
}
