package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/internal/pgdb"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/internal/groupcommit"
	"github.com/agentrt/agentrt/store/internal/sqlrow"
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
	// MaxConns caps the connection pool Open makes; 0 keeps pgx's
	// default (max(4, GOMAXPROCS)) unless the connection string sets
	// pool_max_conns. OpenPool ignores it: the pool is the caller's.
	MaxConns int32
	// Schema, when set, is the PostgreSQL schema holding the store's
	// tables (runs, events, ledger, idempotency, schema_migrations):
	// created if missing, and named in every statement, so the store
	// shares a database with other tables of those names, or with
	// another store in another schema. Empty keeps the tables where the
	// connection's search_path puts them (public, by default). A plain
	// identifier only: a letter or underscore, then letters, digits or
	// underscores, at most 63 bytes.
	Schema string
}

// Store is a store.Store on PostgreSQL. It is safe for concurrent use by
// many goroutines and many processes.
type Store struct {
	pool    *pgxpool.Pool
	owned   bool // Close closes pool: Open made it
	now     func() time.Time
	appends *groupcommit.Committer[sqlrow.Append, []store.Event]
	t       tables
	// tries bounds the calls Store.again makes of a read: one more than
	// the pool's connections.
	tries int
}

// tables are the names statements use for the store's tables: bare, or
// qualified with Options.Schema.
type tables struct{ runs, events, ledger, idempotency string }

func tablesIn(schema string) tables {
	if schema == "" {
		return tables{"runs", "events", "ledger", "idempotency"}
	}
	return tables{schema + ".runs", schema + ".events", schema + ".ledger", schema + ".idempotency"}
}

var _ store.Store = (*Store)(nil)

// Open connects to the database named by connString (a postgres:// URL
// or key=value string) and applies pending migrations.
func Open(ctx context.Context, connString string, opts Options) (*Store, error) {
	schema, err := checkSchema(opts.Schema)
	if err != nil {
		return nil, err
	}
	cfg, err := pgdb.Config(connString, opts.MaxConns)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	s, err := open(ctx, pool, schema, opts)
	if err != nil {
		pool.Close()
		return nil, err
	}
	s.owned = true
	return s, nil
}

// OpenPool is Open on the caller's pool (one it shares with River, say):
// it applies pending migrations through it, and Close leaves it open.
func OpenPool(ctx context.Context, pool *pgxpool.Pool, opts Options) (*Store, error) {
	if pool == nil {
		return nil, errors.New("postgres: OpenPool needs a pool")
	}
	schema, err := checkSchema(opts.Schema)
	if err != nil {
		return nil, err
	}
	return open(ctx, pool, schema, opts)
}

func checkSchema(name string) (string, error) {
	if name == "" {
		return "", nil
	}
	q, err := pgdb.QuoteIdent(name)
	if err != nil {
		return "", fmt.Errorf("postgres: schema: %w", err)
	}
	return q, nil
}

func open(ctx context.Context, pool *pgxpool.Pool, schema string, opts Options) (*Store, error) {
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	if err := pgdb.MigrateIn(ctx, pool, schema, migrations, "schema_migrations", migrationLock, now()); err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	s := &Store{pool: pool, now: now, t: tablesIn(schema), tries: int(pool.Config().MaxConns) + 1}
	// Two committers: one builds and writes the next batch while the
	// other waits for its commit to flush.
	s.appends = groupcommit.New(groupcommit.Options{Committers: 2}, s.commitAppends)
	return s, nil
}

// PoolCloseWait is how long Close waits for the pool Open made to
// close its connections. A connection a cancelled call left broken is
// closed by pgx in the background, after a cancel request it waits up
// to 15 s for: against a server that stopped answering, Close returns
// after PoolCloseWait and the connections finish closing on their own.
const PoolCloseWait = time.Second

// Close implements store.Store. Appends already queued commit first;
// later ones fail with store.ErrClosed. A pool given to OpenPool stays
// open; one Open made is closed, waiting at most PoolCloseWait for it.
func (s *Store) Close() error {
	s.appends.Close()
	if s.owned {
		done := make(chan struct{})
		go func() {
			defer close(done)
			s.pool.Close()
		}()
		t := time.NewTimer(PoolCloseWait)
		defer t.Stop()
		select {
		case <-done:
		case <-t.C:
		}
	}
	return nil
}

// unknownIfSent is err, a failed write's error, matching
// store.ErrUnknownOutcome when the write may have committed all the same:
// its statement (or its transaction's COMMIT) was sent, and no answer of
// the server says it failed — the connection died (the server was
// restarted, its backend terminated, the network cut) or ctx ended
// while the reply was awaited. An error the server reported and survived
// (a constraint, a rolled-back COMMIT) and a write never sent are
// definite failures, returned as they are.
func unknownIfSent(err error) error {
	if err == nil || errors.Is(err, store.ErrUnknownOutcome) || errors.Is(err, pgx.ErrTxCommitRollback) || pgconn.SafeToRetry(err) {
		return err
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) && !sessionEnding(pe) {
		return err
	}
	return fmt.Errorf("%w: %w", store.ErrUnknownOutcome, err)
}

// sessionEnding is whether the server ended the session with pe (FATAL
// or PANIC): the connection is gone, unlike after an error of the
// statement alone.
func sessionEnding(pe *pgconn.PgError) bool {
	severity := pe.SeverityUnlocalized
	if severity == "" {
		severity = pe.Severity
	}
	return severity == "FATAL" || severity == "PANIC"
}

// connLost is whether err, a failed call's error, says its connection
// was unusable or died under it — pgx reports it failed before sending
// anything (pgconn.SafeToRetry), the server ended the session (FATAL:
// a backend terminated while the connection sat idle in the pool reads
// as that), or the socket failed or reached its end — rather than an
// answer of the server to the statement, or the caller's context
// ending.
func connLost(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || pgconn.Timeout(err) {
		return false
	}
	if pgconn.SafeToRetry(err) {
		return true
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return sessionEnding(pe)
	}
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// again calls op, and again while it fails with its connection
// (connLost) and ctx has not ended, at most s.tries times in all. The
// pool drops each connection that failed so, and hands the next call
// another: when the server cut every idle connection of the pool at
// once (a terminated backend of each, a restart), each meets one dead
// connection, and the last try gets a fresh one. op must be safe to
// repeat whether or not its call reached the server: a read, or a
// BEGIN.
func (s *Store) again(ctx context.Context, op func() error) error {
	err := op()
	for try := 1; try < s.tries && err != nil && ctx.Err() == nil && connLost(err); try++ {
		err = op()
	}
	return err
}

// begin starts a transaction, again on another connection while BEGIN
// meets a dead one (Store.again): a failed BEGIN wrote nothing.
func (s *Store) begin(ctx context.Context) (pgx.Tx, error) {
	var tx pgx.Tx
	err := s.again(ctx, func() error {
		var err error
		tx, err = s.pool.Begin(ctx)
		return err
	})
	return tx, err
}

// inTx runs fn in a transaction and commits it, as pgx.BeginFunc does,
// except that a COMMIT whose outcome is unknown (unknownIfSent) says so:
// a failure before it leaves nothing written.
func (s *Store) inTx(ctx context.Context, fn func(pgx.Tx) error) error {
	tx, err := s.begin(ctx)
	if err != nil {
		return fmt.Errorf("postgres: begin: %w", err)
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback(ctx)
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return unknownIfSent(fmt.Errorf("postgres: commit: %w", err))
	}
	return nil
}

func isUniqueViolation(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23505"
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
	_, err = s.pool.Exec(ctx, `INSERT INTO `+s.t.runs+` (`+sqlrow.RunColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
		r.ID, r.Kind, string(r.Status), sqlrow.Nanos(r.CreatedAt), sqlrow.Nanos(r.UpdatedAt), r.Revision, r.Owner, sqlrow.Nanos(r.LeaseUntil), doc, r.Generation)
	if isUniqueViolation(err) {
		return store.Run{}, fmt.Errorf("run %s: %w", r.ID, store.ErrExists)
	}
	if err != nil {
		return store.Run{}, unknownIfSent(fmt.Errorf("postgres: create run: %w", err))
	}
	r.CreatedAt = sqlrow.FromNanos(sqlrow.Nanos(r.CreatedAt))
	return r, nil
}

// GetRun implements store.Store.
func (s *Store) GetRun(ctx context.Context, id string) (store.Run, error) {
	var r store.Run
	err := s.again(ctx, func() error {
		var err error
		r, err = sqlrow.ScanRun(s.pool.QueryRow(ctx, `SELECT `+sqlrow.RunColumns+` FROM `+s.t.runs+` WHERE id = $1`, id), "postgres")
		return err
	})
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
	return sqlrow.UpdateRun(ctx, id, nil, s.now, s.GetRun, fn, s.write(ctx))
}

// UpdateFenced implements store.Store.
func (s *Store) UpdateFenced(ctx context.Context, f store.Fence, fn func(*store.Run) error) (store.Run, error) {
	return sqlrow.UpdateRun(ctx, f.RunID, &f, s.now, s.GetRun, fn, s.write(ctx))
}

func (s *Store) write(ctx context.Context) sqlrow.Write {
	return func(cur, next store.Run, doc *string, fenced bool, now time.Time) (bool, error) {
		q := `UPDATE ` + s.t.runs + ` SET status = $1, updated_at = $2, revision = $3, owner = $4, lease_until = $5, doc = $6, generation = $7
			WHERE id = $8 AND revision = $9`
		args := []any{string(next.Status), sqlrow.Nanos(next.UpdatedAt), next.Revision, next.Owner, sqlrow.Nanos(next.LeaseUntil), doc, next.Generation,
			cur.ID, cur.Revision}
		if fenced {
			q += ` AND ` + sqlrow.LeaseHolds("$10")
			args = append(args, now.UnixNano())
		}
		tag, err := s.pool.Exec(ctx, q, args...)
		if err != nil {
			return false, unknownIfSent(fmt.Errorf("postgres: update run: %w", err))
		}
		return tag.RowsAffected() == 1, nil
	}
}

// DeleteRun implements store.Store: the run is locked, checked, and
// removed with its events and ledger in one transaction.
func (s *Store) DeleteRun(ctx context.Context, id string) error {
	tx, err := s.begin(ctx)
	if err != nil {
		return fmt.Errorf("postgres: delete run: %w", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	var status string
	var lease int64
	err = tx.QueryRow(ctx, `SELECT status, lease_until FROM `+s.t.runs+` WHERE id = $1 FOR UPDATE`, id).Scan(&status, &lease)
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("run %s: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("postgres: delete run: %w", err)
	}
	if err := store.CheckDelete(store.Run{ID: id, Status: store.Status(status), LeaseUntil: sqlrow.FromNanos(lease)}, s.now()); err != nil {
		return err
	}
	for _, q := range []string{`DELETE FROM ` + s.t.events + ` WHERE run_id = $1`, `DELETE FROM ` + s.t.ledger + ` WHERE run_id = $1`, `DELETE FROM ` + s.t.runs + ` WHERE id = $1`} {
		if _, err := tx.Exec(ctx, q, id); err != nil {
			return fmt.Errorf("postgres: delete run: %w", err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return unknownIfSent(fmt.Errorf("postgres: delete run: %w", err))
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
		where = `WHERE status = 'interrupted' OR (status IN ('running', 'pending') AND lease_until > 0 AND lease_until < $1)`
		args = append(args, now)
	case store.StatusRunning, store.StatusPending:
		where = `WHERE status = $1 AND NOT (lease_until > 0 AND lease_until < $2)`
		args = append(args, string(opts.Status), now)
	default:
		where = `WHERE status = $1`
		args = append(args, string(opts.Status))
	}
	if opts.Kind != "" {
		where = sqlrow.AndWhere(where, fmt.Sprintf("kind = $%d", len(args)+1))
		args = append(args, opts.Kind)
	}
	q := `SELECT ` + sqlrow.RunColumns + ` FROM ` + s.t.runs + ` ` + where + ` ORDER BY created_at DESC, id DESC`
	if opts.Limit > 0 {
		q += fmt.Sprintf(" LIMIT %d", opts.Limit)
	}
	clock := s.now()
	out, err := readRows(ctx, s, q, args, func(rows pgx.Rows) ([]store.Run, error) {
		var out []store.Run
		for rows.Next() {
			r, err := sqlrow.ScanRun(rows, "postgres")
			if err != nil {
				return nil, err
			}
			r.Status = store.Effective(r, clock)
			out = append(out, r)
		}
		return out, rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: list runs: %w", err)
	}
	return out, nil
}

// readRows runs the query q and reads its rows with scan, once more on
// another connection when the first try died with its connection
// (Store.again): reading twice is harmless.
func readRows[T any](ctx context.Context, s *Store, q string, args []any, scan func(pgx.Rows) (T, error)) (T, error) {
	var out T
	err := s.again(ctx, func() error {
		rows, err := s.pool.Query(ctx, q, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		out, err = scan(rows)
		return err
	})
	return out, err
}

func scanEventsOf(runID string) func(pgx.Rows) ([]store.Event, error) {
	return func(rows pgx.Rows) ([]store.Event, error) { return sqlrow.ScanEvents(rows, runID, "postgres") }
}

// lockRun locks the run's row for the rest of tx, so that appends to one
// run are serialized across connections and processes (gapless
// sequences), or reports ErrNotFound.
// lockFenced locks the run's row against other writers until tx ends and
// checks f on it.
func (s *Store) lockFenced(ctx context.Context, tx pgx.Tx, f store.Fence) error {
	row := tx.QueryRow(ctx, `SELECT status, generation, lease_until FROM `+s.t.runs+` WHERE id = $1 FOR NO KEY UPDATE`, f.RunID)
	return sqlrow.CheckFenced(row, f, s.now(), "postgres", pgx.ErrNoRows)
}

func (s *Store) runExists(ctx context.Context, runID string) error {
	var exists bool
	if err := s.again(ctx, func() error {
		return s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM `+s.t.runs+` WHERE id = $1)`, runID).Scan(&exists)
	}); err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	if !exists {
		return fmt.Errorf("run %s: %w", runID, store.ErrNotFound)
	}
	return nil
}

type appendCall = groupcommit.Request[sqlrow.Append, []store.Event]

// AppendEvents implements store.Store. The events commit (synchronous
// commit) before it returns, in one transaction with whatever other
// appends (of any run) were waiting at that moment in this process: one
// WAL flush serves them all.
func (s *Store) AppendEvents(ctx context.Context, f store.Fence, events []store.NewEvent) ([]store.Event, error) {
	a, err := sqlrow.NewAppend(f, events)
	if err != nil {
		return nil, err
	}
	// PostgreSQL text holds neither NUL nor invalid UTF-8: refuse them
	// here, alone, rather than fail the batch that would carry them.
	if !storable(f.RunID) {
		return nil, fmt.Errorf("run %q: %w", f.RunID, store.ErrNotFound)
	}
	for _, e := range events {
		if !storable(e.ID) || !storable(e.Type) {
			return nil, fmt.Errorf("%w: event %q: PostgreSQL text cannot hold its id or type", store.ErrInvalid, e.ID)
		}
	}
	return s.appends.Do(ctx, a, len(events))
}

func storable(text string) bool { return utf8.ValidString(text) && !strings.ContainsRune(text, 0) }

// commitAppends writes a batch of appends in one transaction. It locks
// the batch's runs (in id order, so that committers in other processes
// cannot deadlock with it), reads their fences, last sequences and which
// of the batch's event ids they already hold, and decides each append
// (sqlrow.PlanAppends): one whose fence no longer holds, whose run is
// missing or whose event id exists fails alone, before anything is
// written. The rest go in one insert, and the transaction commits.
func (s *Store) commitAppends(ctx context.Context, batch []*appendCall) error {
	if len(batch) == 1 {
		return s.commitAlone(ctx, batch[0])
	}
	var runIDs, keyRuns, keyIDs []string
	seen := map[string]bool{}
	appends := make([]sqlrow.Append, len(batch))
	for i, c := range batch {
		a := c.In
		appends[i] = a
		if !seen[a.Fence.RunID] {
			seen[a.Fence.RunID] = true
			runIDs = append(runIDs, a.Fence.RunID)
		}
		for _, e := range a.Events {
			keyRuns, keyIDs = append(keyRuns, a.Fence.RunID), append(keyIDs, e.ID)
		}
	}
	slices.Sort(runIDs)
	return s.inTx(ctx, func(tx pgx.Tx) error {
		// One round trip: the statements run in order, each later one
		// with a snapshot taken after the locks were granted.
		b := &pgx.Batch{}
		b.Queue(`SELECT id, status, generation, lease_until FROM `+s.t.runs+` WHERE id = ANY($1) ORDER BY id FOR NO KEY UPDATE`, runIDs)
		b.Queue(`SELECT r, coalesce((SELECT max(seq) FROM `+s.t.events+` WHERE run_id = r), 0) FROM unnest($1::text[]) AS r`, runIDs)
		b.Queue(`SELECT e.run_id, e.id FROM `+s.t.events+` e JOIN unnest($1::text[], $2::text[]) AS k (run_id, id) ON e.run_id = k.run_id AND e.id = k.id`, keyRuns, keyIDs)
		br := tx.SendBatch(ctx, b)
		heads, stored, err := readHeads(br)
		if cerr := br.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("postgres: append events: %w", err)
		}
		first, errs := sqlrow.PlanAppends(appends, heads, stored, s.now())
		var rows struct {
			runs, ids, types, bodies []string
			seqs, times              []int64
		}
		for i, a := range appends {
			if errs[i] != nil {
				batch[i].Fail(errs[i])
				continue
			}
			for j, e := range a.Events {
				rows.runs, rows.ids, rows.types, rows.bodies = append(rows.runs, a.Fence.RunID), append(rows.ids, e.ID), append(rows.types, e.Type), append(rows.bodies, a.Bodies[j])
				rows.seqs, rows.times = append(rows.seqs, first[i]+int64(j)), append(rows.times, e.Time.UnixNano())
			}
			batch[i].Succeed(sqlrow.Appended(a, first[i]))
		}
		if len(rows.runs) == 0 {
			return nil
		}
		if _, err := tx.Exec(ctx, `INSERT INTO `+s.t.events+` (run_id, seq, id, type, time, body)
			SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[], $5::bigint[], $6::text[])`,
			rows.runs, rows.seqs, rows.ids, rows.types, rows.times, rows.bodies); err != nil {
			return fmt.Errorf("postgres: append events: %w", err)
		}
		return nil
	})
}

// commitAlone writes an append that has its transaction to itself: it
// has no neighbour to spare, so a duplicate id may simply abort it,
// which saves the batch's look-ups.
func (s *Store) commitAlone(ctx context.Context, c *appendCall) error {
	a := c.In
	var last int64
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		if err := s.lockFenced(ctx, tx, a.Fence); err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, `SELECT coalesce(max(seq), 0) FROM `+s.t.events+` WHERE run_id = $1`, a.Fence.RunID).Scan(&last); err != nil {
			return fmt.Errorf("postgres: append events: %w", err)
		}
		n := len(a.Events)
		seqs, ids, types, times := make([]int64, n), make([]string, n), make([]string, n), make([]int64, n)
		for i, e := range a.Events {
			seqs[i], ids[i], types[i], times[i] = last+int64(i)+1, e.ID, e.Type, e.Time.UnixNano()
		}
		_, err := tx.Exec(ctx, `INSERT INTO `+s.t.events+` (run_id, seq, id, type, time, body)
			SELECT $1, * FROM unnest($2::bigint[], $3::text[], $4::text[], $5::bigint[], $6::text[])`,
			a.Fence.RunID, seqs, ids, types, times, a.Bodies)
		if isUniqueViolation(err) {
			return fmt.Errorf("an event id of this batch is already in run %s: %w", a.Fence.RunID, store.ErrExists)
		}
		if err != nil {
			return fmt.Errorf("postgres: append events: %w", err)
		}
		return nil
	})
	if err != nil {
		if errors.Is(err, store.ErrFenced) || errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrExists) {
			c.Fail(err)
			return nil
		}
		return err
	}
	c.Succeed(sqlrow.Appended(a, last+1))
	return nil
}

// readHeads reads the results of commitAppends' three queries.
func readHeads(br pgx.BatchResults) (map[string]*sqlrow.Head, map[sqlrow.EventKey]bool, error) {
	heads := map[string]*sqlrow.Head{}
	rows, _ := br.Query()
	var id string
	var h sqlrow.Head
	if _, err := pgx.ForEachRow(rows, []any{&id, &h.Status, &h.Generation, &h.LeaseUntil}, func() error {
		heads[id] = &sqlrow.Head{Status: h.Status, Generation: h.Generation, LeaseUntil: h.LeaseUntil}
		return nil
	}); err != nil {
		return nil, nil, err
	}
	rows, _ = br.Query()
	var last int64
	if _, err := pgx.ForEachRow(rows, []any{&id, &last}, func() error {
		if h, ok := heads[id]; ok {
			h.Last = last
		}
		return nil
	}); err != nil {
		return nil, nil, err
	}
	stored := map[sqlrow.EventKey]bool{}
	rows, _ = br.Query()
	var k sqlrow.EventKey
	if _, err := pgx.ForEachRow(rows, []any{&k.RunID, &k.ID}, func() error {
		stored[k] = true
		return nil
	}); err != nil {
		return nil, nil, err
	}
	return heads, stored, nil
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
	if limit <= 0 || from > math.MaxInt64-int64(limit) {
		return s.events(ctx, runID, from, limit)
	}
	// A page is read as the range of sequences it covers, not as "after
	// the cursor, first limit": a run's sequences are dense (1, 2, …), so
	// the range holds exactly the page, and the page costs the page
	// whatever plan PostgreSQL picks. (Without statistics for a long run,
	// its plan for the open-ended query fetched every row after the
	// cursor and sorted them for each page: quadratic for a follower.) A
	// short page is completed by the open-ended query, which at the end
	// of the log finds nothing, so a gap can never end a reader early.
	page, err := readRows(ctx, s, `SELECT seq, id, type, time, body FROM `+s.t.events+
		` WHERE run_id = $1 AND seq > $2 AND seq <= $3 ORDER BY seq`, []any{runID, from, from + int64(limit)}, scanEventsOf(runID))
	if err != nil {
		return nil, fmt.Errorf("postgres: events: %w", err)
	}
	if len(page) == limit {
		return page, nil
	}
	next := from
	if len(page) > 0 {
		next = page[len(page)-1].Sequence
	}
	rest, err := s.events(ctx, runID, next, limit-len(page))
	if err != nil {
		return nil, err
	}
	return append(page, rest...), nil
}

// events reads up to limit (0: all) events of runID after sequence
// from, open-ended.
func (s *Store) events(ctx context.Context, runID string, from int64, limit int) ([]store.Event, error) {
	q := `SELECT seq, id, type, time, body FROM ` + s.t.events + ` WHERE run_id = $1 AND seq > $2 ORDER BY seq`
	if limit > 0 {
		q += fmt.Sprintf(" LIMIT %d", limit)
	}
	out, err := readRows(ctx, s, q, []any{runID, from}, scanEventsOf(runID))
	if err != nil {
		return nil, fmt.Errorf("postgres: events: %w", err)
	}
	return out, nil
}

// AppendLedger implements store.Store.
func (s *Store) AppendLedger(ctx context.Context, f store.Fence, bodies []canonjson.Value, at time.Time) ([]store.LedgerEntry, error) {
	runID := f.RunID
	texts, err := sqlrow.CanonicalTexts(bodies)
	if err != nil {
		return nil, err
	}
	seqs := make([]int64, len(bodies))
	err = s.inTx(ctx, func(tx pgx.Tx) error {
		if err := s.lockFenced(ctx, tx, f); err != nil {
			return err
		}
		var last int64
		if err := tx.QueryRow(ctx, `SELECT coalesce(max(seq), 0) FROM `+s.t.ledger+` WHERE run_id = $1`, runID).Scan(&last); err != nil {
			return fmt.Errorf("postgres: append ledger: %w", err)
		}
		for i := range seqs {
			seqs[i] = last + int64(i) + 1
		}
		if _, err := tx.Exec(ctx, `INSERT INTO `+s.t.ledger+` (run_id, seq, time, body) SELECT $1, s, $2, b FROM unnest($3::bigint[], $4::text[]) AS x (s, b)`,
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
	out, err := readRows(ctx, s, `SELECT seq, time, body FROM `+s.t.ledger+` WHERE run_id = $1 ORDER BY seq`, []any{runID},
		func(rows pgx.Rows) ([]store.LedgerEntry, error) { return sqlrow.ScanLedger(rows, runID, "postgres") })
	if err != nil {
		return nil, fmt.Errorf("postgres: ledger: %w", err)
	}
	return out, nil
}

// ListIdempotency implements store.Store. A key prefix is a range of
// the primary key (scope, key; collation "C"), an age the
// idempotency_by_age index (migration 0004).
func (s *Store) ListIdempotency(ctx context.Context, q store.IdempotencyQuery) ([]store.Idempotency, error) {
	if err := store.CheckIdempotencyQuery(q); err != nil {
		return nil, err
	}
	where, args := idempotencyWhere(q)
	args = append(args, q.Limit)
	out, err := readRows(ctx, s, `SELECT scope, key, request_digest, result, created_at FROM `+s.t.idempotency+` WHERE `+where+
		` ORDER BY created_at, key LIMIT $`+strconv.Itoa(len(args)), args,
		func(rows pgx.Rows) ([]store.Idempotency, error) { return sqlrow.ScanIdempotency(rows, "postgres") })
	if err != nil {
		return nil, fmt.Errorf("postgres: idempotency: %w", err)
	}
	return out, nil
}

// idempotencyWhere is the condition selecting q's records and its
// arguments ($1…).
func idempotencyWhere(q store.IdempotencyQuery) (string, []any) {
	where, args := `scope = $1`, []any{q.Scope}
	param := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	if q.KeyPrefix != "" {
		if upper, ok := sqlrow.PrefixRange(q.KeyPrefix); ok {
			where += ` AND key >= ` + param(q.KeyPrefix) + ` AND key < ` + param(upper)
		} else {
			p := param(q.KeyPrefix)
			where += ` AND key >= ` + p + ` AND starts_with(key, ` + p + `)`
		}
	}
	if !q.Before.IsZero() {
		where += ` AND created_at < ` + param(sqlrow.Nanos(q.Before))
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
	if err := s.again(ctx, func() error {
		return s.pool.QueryRow(ctx, `SELECT count(*) FROM `+s.t.idempotency+` WHERE `+where, args...).Scan(&n)
	}); err != nil {
		return 0, fmt.Errorf("postgres: count idempotency: %w", err)
	}
	return n, nil
}

// DeleteIdempotency implements store.Store: one statement, so all or
// none.
func (s *Store) DeleteIdempotency(ctx context.Context, keys []store.IdempotencyKey) (int, error) {
	if err := store.CheckIdempotencyKeys(keys); err != nil {
		return 0, err
	}
	if len(keys) == 0 {
		return 0, nil
	}
	scopes, names := make([]string, len(keys)), make([]string, len(keys))
	for i, k := range keys {
		scopes[i], names[i] = k.Scope, k.Key
	}
	tag, err := s.pool.Exec(ctx, `DELETE FROM `+s.t.idempotency+` WHERE (scope, key) IN (SELECT * FROM unnest($1::text[], $2::text[]))`, scopes, names)
	if err != nil {
		return 0, unknownIfSent(fmt.Errorf("postgres: delete idempotency: %w", err))
	}
	return int(tag.RowsAffected()), nil
}

// ClaimIdempotency implements store.Store. INSERT … ON CONFLICT DO
// NOTHING decides the race: exactly one claimant inserts; the others read
// the winner's record.
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
	for {
		tag, err := s.pool.Exec(ctx, `INSERT INTO `+s.t.idempotency+` (scope, key, request_digest, result, created_at) VALUES ($1, $2, $3, $4, $5)
			ON CONFLICT (scope, key) DO NOTHING`, rec.Scope, rec.Key, rec.RequestDigest, result, sqlrow.Nanos(rec.CreatedAt))
		if err != nil {
			return store.Idempotency{}, false, unknownIfSent(fmt.Errorf("postgres: idempotency: %w", err))
		}
		if tag.RowsAffected() == 1 {
			rec.CreatedAt = sqlrow.FromNanos(sqlrow.Nanos(rec.CreatedAt))
			return rec, true, nil
		}
		var existing store.Idempotency
		var res *string
		var created int64
		err = s.pool.QueryRow(ctx, `SELECT scope, key, request_digest, result, created_at FROM `+s.t.idempotency+` WHERE scope = $1 AND key = $2`,
			rec.Scope, rec.Key).Scan(&existing.Scope, &existing.Key, &existing.RequestDigest, &res, &created)
		if errors.Is(err, pgx.ErrNoRows) {
			continue // the conflicting claim was rolled back; claim again
		}
		if err != nil {
			return store.Idempotency{}, false, fmt.Errorf("postgres: idempotency: %w", err)
		}
		existing.CreatedAt = sqlrow.FromNanos(created)
		if existing.Result, err = sqlrow.Decode(res); err != nil {
			return store.Idempotency{}, false, err
		}
		return existing, false, nil
	}
}
