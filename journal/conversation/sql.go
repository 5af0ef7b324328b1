package conversation

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"hash/fnv"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/agentrt/agentrt/internal/pgdb"
	"github.com/agentrt/agentrt/internal/sqlitedb"
)

// DefaultPrefix names the SQL journal's tables unless SQLOptions.Prefix
// does: agent_runtime_journal_runs and agent_runtime_journal_turns, as in
// the reference.
const DefaultPrefix = "agent_runtime_journal"

// maxPrefixLen keeps the longest name built from a prefix
// ("idx_<prefix>_turns_run") within PostgreSQL's 63-byte identifiers.
const maxPrefixLen = 48

var prefixPattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// ErrInvalidPrefix matches the error for a table prefix that is not a
// plain SQL identifier (letters, digits, '_', not starting with a digit,
// at most 48 bytes).
var ErrInvalidPrefix = errors.New("conversation journal: invalid table prefix")

// SQLOptions configure OpenSQLite and OpenPostgres.
type SQLOptions struct {
	// Prefix names the tables <Prefix>_runs, <Prefix>_turns and
	// <Prefix>_migrations; empty means DefaultPrefix. Several journals
	// with different prefixes can share a database. The names are not
	// quoted, so both databases compare them without letter case:
	// prefixes that differ only in case ("Chat", "chat") name the same
	// tables, one journal.
	Prefix string
	// Limits bound what the journal accepts and reads.
	Limits Limits
	// BusyTimeout bounds how long a SQLite writer waits for another
	// process's lock; 0 means sqlitedb.DefaultBusyTimeout.
	BusyTimeout time.Duration
	// MaxConns caps the PostgreSQL pool; 0 keeps pgx's default.
	MaxConns int32
	// CallTimeout bounds each call of the journal (Migrate, and so each
	// Open; LoadRun, BeginRun, AppendTurn, RecordHalt), its transaction included, for a caller
	// whose context has no sooner deadline: a database that stops
	// answering (down, black-holed, locked) ends the call with a
	// *TimeoutError instead of hanging it. 0 means DefaultCallTimeout.
	CallTimeout time.Duration
	// Now replaces time.Now for the migrations' applied_at (tests).
	Now func() time.Time
}

// DefaultCallTimeout is SQLOptions.CallTimeout's default, the bound
// retained runs put on their store calls.
const DefaultCallTimeout = 30 * time.Second

// SQL is a Journal in two tables of a SQLite or PostgreSQL database, the
// reference's schema: <prefix>_runs(run_id PRIMARY KEY, started_at,
// halted_kind, halted_payload, ended_at) and <prefix>_turns(run_id,
// turn_index, payload, PRIMARY KEY (run_id, turn_index)), payloads being
// canonical JSON. Each call is one transaction that reads the run's row
// (locked, in PostgreSQL) before it writes, so concurrent calls, from
// this process or others, are decided one at a time per run.
type SQL struct {
	w, r *sql.DB       // writer and reader pools; the same for PostgreSQL
	pool *pgxpool.Pool // nil for a caller's database (OpenSQL)
	// lockFirst, when set, is run first in every write transaction of a
	// caller's SQLite database: a write that takes SQLite's write lock
	// before the transaction reads, as agentrt's own connections do with
	// immediate transactions.
	lockFirst string
	pg        bool
	prefix    string
	lim       Limits
	now       func() time.Time
	timeout   time.Duration // each call's bound (SQLOptions.CallTimeout)
	q         queries
	closed    atomic.Bool
	closers   []func() error
}

var _ Journal = (*SQL)(nil)

type queries struct {
	runRow, runRowLocked, turnStats, turnAt, turns, begin, startedAt, insertTurn, halt string
}

func checkPrefix(prefix string) (string, error) {
	if prefix == "" {
		return DefaultPrefix, nil
	}
	if len(prefix) > maxPrefixLen || !prefixPattern.MatchString(prefix) {
		return "", fmt.Errorf("%w: %q", ErrInvalidPrefix, prefix)
	}
	return prefix, nil
}

func newSQL(prefix string, pg bool, opts SQLOptions) *SQL {
	s := &SQL{pg: pg, prefix: prefix, lim: opts.Limits.withDefaults(), now: opts.Now, timeout: opts.CallTimeout}
	if s.now == nil {
		s.now = time.Now
	}
	if s.timeout <= 0 {
		s.timeout = DefaultCallTimeout
	}
	runs, turns := prefix+"_runs", prefix+"_turns"
	octets, lock := "length(CAST(payload AS BLOB))", ""
	haltOctets := "length(CAST(halted_payload AS BLOB))"
	if pg {
		octets, lock, haltOctets = "octet_length(payload)", " FOR UPDATE", "octet_length(halted_payload)"
	}
	s.q = queries{
		runRow:     `SELECT started_at, halted_kind, ` + haltOctets + `, CASE WHEN ` + haltOctets + ` <= ? THEN halted_payload END, ended_at FROM ` + runs + ` WHERE run_id = ?`,
		turnStats:  `SELECT count(*), coalesce(max(turn_index), -1), coalesce(sum(` + octets + `), 0) FROM ` + turns + ` WHERE run_id = ?`,
		turnAt:     `SELECT ` + octets + `, CASE WHEN ` + octets + ` <= ? THEN payload END FROM ` + turns + ` WHERE run_id = ? AND turn_index = ?`,
		turns:      `SELECT turn_index, ` + octets + `, CASE WHEN ` + octets + ` <= ? THEN payload END FROM ` + turns + ` WHERE run_id = ? ORDER BY turn_index`,
		begin:      `INSERT INTO ` + runs + ` (run_id, started_at) VALUES (?, ?) ON CONFLICT (run_id) DO NOTHING`,
		startedAt:  `SELECT started_at FROM ` + runs + ` WHERE run_id = ?`,
		insertTurn: `INSERT INTO ` + turns + ` (run_id, turn_index, payload) VALUES (?, ?, ?)`,
		halt:       `UPDATE ` + runs + ` SET halted_kind = ?, halted_payload = ?, ended_at = ? WHERE run_id = ?`,
	}
	// The run's row is read first in every write, locked in PostgreSQL
	// (SQLite's writer transactions take the database lock up front).
	s.q.runRowLocked = s.q.runRow + lock
	if pg {
		for _, q := range []*string{&s.q.runRow, &s.q.runRowLocked, &s.q.turnStats, &s.q.turnAt, &s.q.turns, &s.q.begin, &s.q.startedAt, &s.q.insertTurn, &s.q.halt} {
			*q = rebind(*q)
		}
	}
	return s
}

// rebind turns ? placeholders into PostgreSQL's $1, $2, … (the queries
// hold no other '?').
func rebind(q string) string {
	var b strings.Builder
	n := 0
	for _, c := range q {
		if c == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(c)
	}
	return b.String()
}

// OpenSQLite opens (creating if needed) the SQLite database at path, with
// agentrt's durability settings (WAL, synchronous FULL), and migrates the
// journal's tables.
func OpenSQLite(ctx context.Context, path string, opts SQLOptions) (*SQL, error) {
	prefix, err := checkPrefix(opts.Prefix)
	if err != nil {
		return nil, err
	}
	w, r, err := sqlitedb.Open(ctx, path, opts.BusyTimeout)
	if err != nil {
		return nil, fmt.Errorf("conversation journal: %w", err)
	}
	s := newSQL(prefix, false, opts)
	s.w, s.r = w, r
	s.closers = []func() error{r.Close, w.Close}
	if err := s.Migrate(ctx); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// OpenPostgres connects to the PostgreSQL database named by connString (a
// postgres:// URL or key=value string) and migrates the journal's tables.
func OpenPostgres(ctx context.Context, connString string, opts SQLOptions) (*SQL, error) {
	prefix, err := checkPrefix(opts.Prefix)
	if err != nil {
		return nil, err
	}
	cfg, err := pgdb.Config(connString, opts.MaxConns)
	if err != nil {
		return nil, fmt.Errorf("conversation journal: %w", err)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("conversation journal: %w", err)
	}
	s := newSQL(prefix, true, opts)
	db := stdlib.OpenDBFromPool(pool)
	s.w, s.r, s.pool = db, db, pool
	s.closers = []func() error{db.Close, func() error { pool.Close(); return nil }}
	if err := s.Migrate(ctx); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// Dialect is the SQL a database given to OpenSQL speaks.
type Dialect string

// Dialects of OpenSQL.
const (
	// DialectSQLite: a database/sql handle of a SQLite driver
	// (modernc.org/sqlite, as agentrt uses, or another).
	DialectSQLite Dialect = "sqlite"
	// DialectPostgres: a database/sql handle of a PostgreSQL driver
	// (pgx's stdlib, or another that takes $1 placeholders).
	DialectPostgres Dialect = "postgres"
)

// ErrInvalidDialect matches OpenSQL's refusal of an unknown dialect.
var ErrInvalidDialect = errors.New("conversation journal: unknown SQL dialect")

// OpenSQL returns a journal in db, a database the caller opened and
// owns, speaking dialect d, and migrates the journal's tables in it
// (opts.Prefix names them; BusyTimeout and MaxConns are unused: the
// connections are the caller's). Close does not close db. The
// database's settings are the caller's too — agentrt's own SQLite
// connections use WAL and synchronous FULL, so that a recorded turn
// survives power loss; a caller's SQLite database should as well. In
// SQLite every write transaction takes the write lock before it reads,
// so that writers of several processes queue on the busy timeout
// instead of failing.
func OpenSQL(ctx context.Context, db *sql.DB, d Dialect, opts SQLOptions) (*SQL, error) {
	if db == nil {
		return nil, errors.New("conversation journal: OpenSQL needs a database")
	}
	prefix, err := checkPrefix(opts.Prefix)
	if err != nil {
		return nil, err
	}
	var s *SQL
	switch d {
	case DialectSQLite:
		s = newSQL(prefix, false, opts)
		s.lockFirst = `UPDATE ` + prefix + `_runs SET run_id = run_id WHERE 0 = 1`
	case DialectPostgres:
		s = newSQL(prefix, true, opts)
	default:
		return nil, fmt.Errorf("%w: %q (DialectSQLite or DialectPostgres)", ErrInvalidDialect, d)
	}
	s.w, s.r = db, db
	if err := s.Migrate(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// Migrate creates the journal's tables and index if they are missing,
// recording the schema version in <prefix>_migrations. It is idempotent,
// and safe to run from several processes at once. Like every call of
// the journal it is bounded by the CallTimeout: a database that does not
// answer (down, black-holed, locked by another writer) ends it with a
// *TimeoutError (Op "migrate"), and it may be retried as it was.
func (s *SQL) Migrate(ctx context.Context) error {
	if err := s.enter(ctx); err != nil {
		return err
	}
	return s.bounded(ctx, "migrate", "", s.migrate)
}

// migrate is Migrate's database work, under ctx's bound.
func (s *SQL) migrate(ctx context.Context) error {
	p, table := s.prefix, s.prefix+"_migrations"
	text, integer, strict := "TEXT", "INTEGER", " STRICT"
	if s.pg {
		text, integer, strict = "text", "bigint", ""
	}
	steps := []sqlitedb.Migration{{Version: "0001_conversation_journal", SQL: `
CREATE TABLE IF NOT EXISTS ` + p + `_runs (
	run_id ` + text + ` PRIMARY KEY,
	started_at ` + text + ` NOT NULL,
	halted_kind ` + text + `,
	halted_payload ` + text + `,
	ended_at ` + text + `
)` + strict + `;
CREATE TABLE IF NOT EXISTS ` + p + `_turns (
	run_id ` + text + ` NOT NULL,
	turn_index ` + integer + ` NOT NULL,
	payload ` + text + ` NOT NULL,
	PRIMARY KEY (run_id, turn_index)
)` + strict + `;
CREATE INDEX IF NOT EXISTS idx_` + p + `_turns_run ON ` + p + `_turns (run_id, turn_index);
`}}
	var err error
	if s.pg {
		pgSteps := make([]pgdb.Migration, len(steps))
		for i, st := range steps {
			pgSteps[i] = pgdb.Migration{Version: st.Version, SQL: st.SQL}
		}
		h := fnv.New64a()
		h.Write([]byte("agentrt conversation journal " + p))
		if s.pool != nil {
			err = pgdb.MigrateSteps(ctx, s.pool, pgSteps, table, int64(h.Sum64()>>1), s.now())
		} else {
			err = migratePostgresDB(ctx, s.w, pgSteps, table, int64(h.Sum64()>>1), s.now())
		}
	} else {
		err = sqlitedb.MigrateSteps(ctx, s.w, steps, table, s.now())
	}
	if err != nil && ctx.Err() != nil {
		// A driver that stopped on the bound says so in its own words
		// (SQLite: "interrupted"); the bound is what ended it.
		return fmt.Errorf("conversation journal: migrate: %w", context.Cause(ctx))
	}
	if err != nil {
		return fmt.Errorf("conversation journal: %w", err)
	}
	return nil
}

// migratePostgresDB applies steps to a caller's PostgreSQL database in
// one transaction under the advisory lock, as pgdb.MigrateSteps does
// through a pool.
func migratePostgresDB(ctx context.Context, db *sql.DB, steps []pgdb.Migration, table string, lock int64, now time.Time) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1)`, lock); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS `+table+` (version text PRIMARY KEY, applied_at bigint NOT NULL)`); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	for _, step := range steps {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM `+table+` WHERE version = $1`, step.Version).Scan(&n); err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
		if n > 0 {
			continue
		}
		if _, err := tx.ExecContext(ctx, step.SQL); err != nil {
			return fmt.Errorf("migration %s: %w", step.Version, err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO `+table+` (version, applied_at) VALUES ($1, $2)`, step.Version, now.UnixNano()); err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	return nil
}

// Close closes the database connections it opened (none of a database
// given to OpenSQL). Later calls fail with ErrClosed.
func (s *SQL) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	var errs []error
	for _, c := range s.closers {
		errs = append(errs, c())
	}
	return errors.Join(errs...)
}

func (s *SQL) enter(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return context.Cause(ctx)
	}
	if s.closed.Load() {
		return ErrClosed
	}
	return nil
}

// bounded runs fn, the database work of call op on runID, with ctx
// bounded by the journal's CallTimeout; that bound passing while ctx
// lives is a *TimeoutError.
func (s *SQL) bounded(ctx context.Context, op, runID string, fn func(context.Context) error) error {
	bctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	err := fn(bctx)
	if err != nil && ctx.Err() == nil && bctx.Err() != nil && errors.Is(err, context.DeadlineExceeded) {
		return &TimeoutError{Op: op, RunID: runID, After: s.timeout}
	}
	return err
}

func (s *SQL) source() string { return s.prefix + "_runs/" + s.prefix + "_turns" }

// inTx runs fn in a writer transaction of call op on runID, committing
// when it returns nil, all within the journal's CallTimeout (bounded).
func (s *SQL) inTx(ctx context.Context, op, runID string, fn func(context.Context, *sql.Tx) error) error {
	return s.bounded(ctx, op, runID, func(ctx context.Context) error { return s.tx(ctx, op, fn) })
}

// tx runs fn in a writer transaction, committing when it returns nil.
func (s *SQL) tx(ctx context.Context, op string, fn func(context.Context, *sql.Tx) error) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return s.dbError(ctx, op, err)
	}
	defer tx.Rollback()
	if s.lockFirst != "" {
		if _, err := tx.ExecContext(ctx, s.lockFirst); err != nil {
			return s.dbError(ctx, op, err)
		}
	}
	if err := fn(ctx, tx); err != nil {
		return s.dbError(ctx, op, err)
	}
	if err := tx.Commit(); err != nil {
		return s.dbError(ctx, op, err)
	}
	return nil
}

// dbError wraps a database error; the journal's own errors and a done
// context pass through.
func (s *SQL) dbError(ctx context.Context, op string, err error) error {
	var re *RunError
	var te *TooLargeError
	var ce *CorruptError
	switch {
	case errors.As(err, &re), errors.As(err, &te), errors.As(err, &ce):
		return err
	case ctx.Err() != nil:
		return context.Cause(ctx)
	case s.closed.Load():
		return ErrClosed
	}
	return fmt.Errorf("conversation journal: %s: %w", op, err)
}

// runRow is a run's row.
type runRow struct {
	startedAt time.Time
	halt      []byte // nil while not halted
	haltKind  string // the halted_kind column
	endedAt   time.Time
}

type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// readRun reads runID's row, locking it for the transaction when lock
// is set; nil when there is none.
func (s *SQL) readRun(ctx context.Context, q querier, runID string, lock bool) (*runRow, error) {
	query := s.q.runRow
	if lock {
		query = s.q.runRowLocked
	}
	var started string
	var kind, payload, ended sql.NullString
	var size sql.NullInt64
	err := q.QueryRowContext(ctx, query, s.lim.MaxTurnBytes, runID).Scan(&started, &kind, &size, &payload, &ended)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	where := fmt.Sprintf("run %q", runID)
	corrupt := func(err error) error { return &CorruptError{Source: s.source(), Where: where, Err: err} }
	row := &runRow{}
	if row.startedAt, err = parseTime(started, "/startedAt"); err != nil {
		return nil, corrupt(err)
	}
	if !kind.Valid && !size.Valid && !ended.Valid {
		return row, nil
	}
	if size.Valid && size.Int64 > int64(s.lim.MaxTurnBytes) {
		return nil, &TooLargeError{What: "halt", RunID: runID, Size: size.Int64, Limit: int64(s.lim.MaxTurnBytes)}
	}
	if !kind.Valid || !payload.Valid || !ended.Valid {
		return nil, corrupt(errors.New("halted_kind, halted_payload and ended_at are not all set"))
	}
	h, err := decodeHalt([]byte(payload.String))
	if err != nil {
		return nil, corrupt(err)
	}
	if string(h.Kind) != kind.String {
		return nil, corrupt(fmt.Errorf("halted_kind %q is not the payload's %q", kind.String, h.Kind))
	}
	if row.endedAt, err = parseTime(ended.String, "/endedAt"); err != nil {
		return nil, corrupt(err)
	}
	// Kept canonical, so that a retried halt compares equal to a row
	// another writer (the reference) serialized differently.
	if row.halt, err = encodeHalt(h); err != nil {
		return nil, corrupt(err)
	}
	row.haltKind = kind.String
	return row, nil
}

// LoadRun implements Journal. It reads the run in one read-only
// transaction, so it sees the run as one commit left it.
func (s *SQL) LoadRun(ctx context.Context, runID string) (*Entry, error) {
	if err := checkRunID(runID, s.lim); err != nil {
		return nil, err
	}
	if err := s.enter(ctx); err != nil {
		return nil, err
	}
	opts := &sql.TxOptions{ReadOnly: true}
	if s.pg {
		opts.Isolation = sql.LevelRepeatableRead
	}
	var e *Entry
	err := s.bounded(ctx, "load", runID, func(ctx context.Context) error {
		tx, err := s.r.BeginTx(ctx, opts)
		if err != nil {
			return s.dbError(ctx, "load", err)
		}
		defer tx.Rollback()
		if e, err = s.load(ctx, tx, runID); err != nil {
			return s.dbError(ctx, "load", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return e, nil
}

func (s *SQL) load(ctx context.Context, tx *sql.Tx, runID string) (*Entry, error) {
	row, err := s.readRun(ctx, tx, runID, false)
	if err != nil || row == nil {
		return nil, err
	}
	e := &Entry{RunID: runID, StartedAt: row.startedAt, EndedAt: row.endedAt, Turns: []Turn{}}
	if row.halt != nil {
		h, _ := decodeHalt(row.halt) // readRun decoded it
		e.Halt = &h
	}
	rows, err := tx.QueryContext(ctx, s.q.turns, s.lim.MaxTurnBytes, runID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var total int64
	for rows.Next() {
		var index, size int64
		var payload sql.NullString
		if err := rows.Scan(&index, &size, &payload); err != nil {
			return nil, err
		}
		where := fmt.Sprintf("run %q turn %d", runID, index)
		if size > int64(s.lim.MaxTurnBytes) {
			return nil, &TooLargeError{What: "turn", RunID: runID, Size: size, Limit: int64(s.lim.MaxTurnBytes)}
		}
		if total += size; total > s.lim.MaxRunBytes {
			return nil, &TooLargeError{What: "run", RunID: runID, Size: total, Limit: s.lim.MaxRunBytes}
		}
		if index != int64(len(e.Turns)) {
			return nil, &CorruptError{Source: s.source(), Where: where, Err: fmt.Errorf("turn %d is missing", len(e.Turns))}
		}
		t, err := decodeTurn([]byte(payload.String))
		if err == nil && int64(t.Index) != index {
			err = fmt.Errorf("payload index %d is not turn_index %d", t.Index, index)
		}
		if err != nil {
			return nil, &CorruptError{Source: s.source(), Where: where, Err: err}
		}
		e.Turns = append(e.Turns, t)
	}
	return e, rows.Err()
}

// BeginRun implements Journal.
func (s *SQL) BeginRun(ctx context.Context, runID string, startedAt time.Time) error {
	if err := checkBegin(runID, startedAt, s.lim); err != nil {
		return err
	}
	if err := s.enter(ctx); err != nil {
		return err
	}
	return s.inTx(ctx, "begin", runID, func(ctx context.Context, tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, s.q.begin, runID, formatTime(startedAt))
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 1 {
			return err
		}
		var recorded string
		if err := tx.QueryRowContext(ctx, s.q.startedAt, runID).Scan(&recorded); err != nil {
			return err
		}
		if recorded != formatTime(startedAt) {
			return &RunError{Op: "begin", RunID: runID, Err: ErrConflict, Detail: fmt.Sprintf("started at %s, not %s", recorded, formatTime(startedAt))}
		}
		return nil
	})
}

// AppendTurn implements Journal.
func (s *SQL) AppendTurn(ctx context.Context, runID string, t Turn) error {
	t, enc, err := prepareTurn(runID, t, s.lim)
	if err != nil {
		return err
	}
	if len(enc) > s.lim.MaxTurnBytes {
		return &TooLargeError{What: "turn", RunID: runID, Size: int64(len(enc)), Limit: int64(s.lim.MaxTurnBytes)}
	}
	if err := s.enter(ctx); err != nil {
		return err
	}
	return s.inTx(ctx, "append", runID, func(ctx context.Context, tx *sql.Tx) error {
		row, err := s.readRun(ctx, tx, runID, true)
		switch {
		case err != nil:
			return err
		case row == nil:
			return &RunError{Op: "append", RunID: runID, Err: ErrUnknownRun, Detail: "begin the run first"}
		case row.halt != nil:
			return &RunError{Op: "append", RunID: runID, Err: ErrHalted, Detail: "halt: " + string(row.halt)}
		}
		var count, last, total int64
		if err := tx.QueryRowContext(ctx, s.q.turnStats, runID).Scan(&count, &last, &total); err != nil {
			return err
		}
		if last != count-1 {
			return &CorruptError{Source: s.source(), Where: fmt.Sprintf("run %q", runID), Err: fmt.Errorf("%d turns, the last at index %d", count, last)}
		}
		switch index := int64(t.Index); {
		case index < count:
			var size int64
			var payload sql.NullString
			if err := tx.QueryRowContext(ctx, s.q.turnAt, s.lim.MaxTurnBytes, runID, index).Scan(&size, &payload); err != nil {
				return err
			}
			same := false
			if payload.Valid {
				// Compared canonically: another writer (the reference)
				// may have serialized the same turn differently.
				recorded, err := decodeTurn([]byte(payload.String))
				if err != nil {
					return &CorruptError{Source: s.source(), Where: fmt.Sprintf("run %q turn %d", runID, index), Err: err}
				}
				_, renc, err := encodeTurn(recorded)
				same = err == nil && bytes.Equal(renc, enc)
			}
			if !same {
				return &RunError{Op: "append", RunID: runID, Err: ErrConflict, Detail: fmt.Sprintf("another turn %d is recorded", index)}
			}
			return nil
		case index > count:
			return &RunError{Op: "append", RunID: runID, Err: ErrOutOfOrder, Detail: fmt.Sprintf("turn %d, next is %d", index, count)}
		}
		if total += int64(len(enc)); total > s.lim.MaxRunBytes {
			return &TooLargeError{What: "run", RunID: runID, Size: total, Limit: s.lim.MaxRunBytes}
		}
		_, err = tx.ExecContext(ctx, s.q.insertTurn, runID, t.Index, string(enc))
		return err
	})
}

// RecordHalt implements Journal.
func (s *SQL) RecordHalt(ctx context.Context, runID string, h Halt, endedAt time.Time) error {
	enc, err := prepareHalt(runID, h, endedAt, s.lim)
	if err != nil {
		return err
	}
	if len(enc) > s.lim.MaxTurnBytes {
		return &TooLargeError{What: "halt", RunID: runID, Size: int64(len(enc)), Limit: int64(s.lim.MaxTurnBytes)}
	}
	if err := s.enter(ctx); err != nil {
		return err
	}
	return s.inTx(ctx, "halt", runID, func(ctx context.Context, tx *sql.Tx) error {
		row, err := s.readRun(ctx, tx, runID, true)
		switch {
		case err != nil:
			return err
		case row == nil:
			return &RunError{Op: "halt", RunID: runID, Err: ErrUnknownRun, Detail: "begin the run first"}
		case row.halt != nil:
			if !bytes.Equal(row.halt, enc) || !sameInstant(row.endedAt, endedAt) {
				return &RunError{Op: "halt", RunID: runID, Err: ErrConflict, Detail: fmt.Sprintf("halted %s at %s", row.halt, formatTime(row.endedAt))}
			}
			return nil
		}
		res, err := tx.ExecContext(ctx, s.q.halt, string(h.Kind), string(enc), formatTime(endedAt), runID)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n != 1 {
			return errors.Join(err, &RunError{Op: "halt", RunID: runID, Err: ErrUnknownRun, Detail: "no row updated"})
		}
		return nil
	})
}
