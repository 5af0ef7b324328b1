package fleet

import (
	"context"
	"fmt"
	"log/slog"
	"regexp"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/internal/pgdb"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/postgres"
)

// DefaultRiverSchema is the PostgreSQL schema of River's tables unless
// Options.RiverSchema names another.
const DefaultRiverSchema = "agentrt_river"

// Kind is the store.Run kind of a fleet run.
const Kind = "fleet"

// IdempotencyScope is the store.Idempotency scope of keyed submissions.
const IdempotencyScope = "fleet.submit"

// riverMigrationLock is the advisory lock held while migrating River's
// schema ("agentrt river" in ASCII, truncated to 63 bits).
const riverMigrationLock int64 = 0x6167656e74726976

// Options configures Open.
type Options struct {
	// DatabaseURL names the PostgreSQL database (a postgres:// URL or a
	// key=value string). The run store's tables live in its search_path,
	// or in StoreSchema. Give it or Pool, not both.
	DatabaseURL string
	// Pool, when set, is the caller's connection pool, which the fleet
	// (its run store and River) uses instead of connecting itself: a
	// program that already has a pool on the database shares it. The
	// pool stays the caller's: Close leaves it open, and the caller
	// closes it after the fleet and its workers are done. Its sessions
	// should bound idle transactions as the fleet's own pool does
	// (idle_in_transaction_session_timeout, 8s): a worker paused inside
	// a lease renewal otherwise keeps its run locked from the others.
	Pool *pgxpool.Pool
	// StoreSchema, when set, is the schema of the run store's tables
	// (postgres.Options.Schema): every process of a fleet must name the
	// same one.
	StoreSchema string
	// RiverSchema is the schema of River's tables; "" is
	// DefaultRiverSchema.
	RiverSchema string
	// Logger receives the fleet's logs; nil discards them.
	Logger *slog.Logger
	// Now replaces time.Now (tests).
	Now func() time.Time
}

// Fleet submits runs as jobs and reads their state. It is safe for
// concurrent use.
type Fleet struct {
	store *postgres.Store
	pool  *pgxpool.Pool
	// ownPool: Open made pool, and Close closes it.
	ownPool bool
	river   *river.Client[pgx.Tx]
	schema  string
	log     *slog.Logger
	now     func() time.Time
}

// Open connects to the database (or takes Options.Pool). The run store's
// migrations are applied (as store/postgres always does); River's are
// not — run Migrate first.
func Open(ctx context.Context, opts Options) (*Fleet, error) {
	switch {
	case opts.DatabaseURL == "" && opts.Pool == nil:
		return nil, fmt.Errorf("fleet: %w: a database URL or a pool is required", ErrInvalid)
	case opts.DatabaseURL != "" && opts.Pool != nil:
		return nil, fmt.Errorf("fleet: %w: give a database URL or a pool, not both", ErrInvalid)
	}
	schema := opts.RiverSchema
	if schema == "" {
		schema = DefaultRiverSchema
	}
	if !identifier.MatchString(schema) {
		return nil, fmt.Errorf("fleet: %w: River schema %q is not a plain lower-case identifier", ErrInvalid, schema)
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	pool, own := opts.Pool, opts.Pool == nil
	if own {
		// One pool serves the run store and River, its sessions bounded
		// idle in a transaction (pgdb.IdleInTransactionTimeout): a worker
		// paused mid-renewal must not keep its run locked from the others.
		cfg, err := pgdb.Config(opts.DatabaseURL, 0)
		if err != nil {
			return nil, fmt.Errorf("fleet: %w", err)
		}
		if pool, err = pgxpool.NewWithConfig(ctx, cfg); err != nil {
			return nil, fmt.Errorf("fleet: connecting: %w", err)
		}
	}
	s, err := postgres.OpenPool(ctx, pool, postgres.Options{Now: opts.Now, Schema: opts.StoreSchema})
	if err != nil {
		if own {
			pool.Close()
		}
		return nil, fmt.Errorf("fleet: opening the run store: %w", err)
	}
	f := &Fleet{store: s, pool: pool, ownPool: own, schema: schema, log: logger, now: now}
	// An insert-only client: it runs no queues and no maintenance.
	f.river, err = river.NewClient(riverpgxv5.New(pool), &river.Config{Schema: schema, Logger: logger})
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("fleet: %w", err)
	}
	return f, nil
}

// identifier is what a River schema name may be: it is spliced into SQL.
var identifier = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

// Close releases the connections: the run store first (its queued
// appends commit), then the pool it shares with River — unless the pool
// is the caller's (Options.Pool), which stays open.
func (f *Fleet) Close() error {
	err := f.store.Close()
	if f.pool != nil && f.ownPool {
		f.pool.Close()
	}
	return err
}

// Store returns the run store the fleet records in (for reading runs,
// their events and their ledgers).
func (f *Fleet) Store() store.Store { return f.store }

// RiverSchema returns the schema of River's tables.
func (f *Fleet) RiverSchema() string { return f.schema }

// Migrate creates River's schema if needed and applies River's pending
// migrations, holding an advisory lock so that processes migrating
// together migrate once. (The run store migrates itself at Open.) It
// returns the River migration versions it applied.
func (f *Fleet) Migrate(ctx context.Context) ([]int, error) {
	// River's migrations cannot share one transaction (one adds an enum
	// value another uses), so a session lock on a connection of its own
	// serializes migrating processes instead.
	conn, err := f.pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("fleet: migrating: %w", err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, riverMigrationLock); err != nil {
		return nil, fmt.Errorf("fleet: migrating: %w", err)
	}
	defer func() {
		unlock, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if _, err := conn.Exec(unlock, `SELECT pg_advisory_unlock($1)`, riverMigrationLock); err != nil {
			// A lock that cannot be released dies with the connection.
			conn.Conn().Close(unlock)
		}
	}()
	if _, err := conn.Exec(ctx, `CREATE SCHEMA IF NOT EXISTS `+f.schema); err != nil {
		return nil, fmt.Errorf("fleet: migrating: creating schema %s: %w", f.schema, err)
	}
	m, err := rivermigrate.New(riverpgxv5.New(f.pool), &rivermigrate.Config{Schema: f.schema, Logger: f.log})
	if err != nil {
		return nil, fmt.Errorf("fleet: migrating: %w", err)
	}
	res, err := m.Migrate(ctx, rivermigrate.DirectionUp, nil)
	if err != nil {
		return nil, fmt.Errorf("fleet: migrating River's schema %s: %w", f.schema, err)
	}
	var applied []int
	for _, v := range res.Versions {
		applied = append(applied, v.Version)
	}
	return applied, nil
}

// checkMigrated returns a *NotMigratedError when River's schema lacks
// migrations.
func (f *Fleet) checkMigrated(ctx context.Context) error {
	m, err := rivermigrate.New(riverpgxv5.New(f.pool), &rivermigrate.Config{Schema: f.schema, Logger: f.log})
	if err != nil {
		return fmt.Errorf("fleet: %w", err)
	}
	res, err := m.Validate(ctx, nil)
	if err != nil {
		return &NotMigratedError{Schema: f.schema, Err: err}
	}
	if !res.OK {
		return &NotMigratedError{Schema: f.schema, Err: fmt.Errorf("%v", res.Messages)}
	}
	return nil
}

// Spec is the admitted request of a fleet run: what a worker needs to
// execute it, and nothing secret (credentials stay in each worker's
// environment).
type Spec struct {
	// Profile is the AgentProfile document.
	Profile canonjson.Value `json:"profile"`
	// Task is the task given to the agent.
	Task string `json:"task"`
	// Provider names the provider to run on; it is also the River queue
	// of the job, so only workers that serve the provider take it.
	Provider string `json:"provider"`
	// Expect, when set, delivers the result only if it contains this
	// text; otherwise a non-empty result is delivered.
	Expect string `json:"expect,omitzero"`
	// JudgedBy, when set, names who outside the fleet decides the
	// result's delivery instead (a supervised run's completion gate:
	// kernel.Request.JudgedBy): the attempts run with no check of their
	// own, their records name the judge, and Expect must be empty.
	JudgedBy string `json:"judgedBy,omitzero"`
	// Stage is the profile's seat stage to run (0 is the first).
	Stage int `json:"stage,omitzero"`
	// TimeoutMillis bounds each attempt (0: no bound but the worker's).
	TimeoutMillis int64 `json:"timeoutMillis,omitzero"`
}

// queueName is what a provider name must be to serve as a River queue.
var queueName = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)

// maxJudgedBy bounds Spec.JudgedBy.
const maxJudgedBy = 1024

// completionCheck is the check the attempts of s run, and who else
// judges them (kernel.Request.Check, JudgedBy): Expect's, or none when
// s is judged elsewhere.
func (s Spec) completionCheck() (kernel.Check, string) {
	if s.JudgedBy != "" {
		return nil, s.JudgedBy
	}
	return kernel.ExpectCheck(s.Expect), ""
}

// check validates s and returns its parsed profile and digest.
func (s Spec) check() (*profile.Profile, string, error) {
	if !s.Profile.IsValid() {
		return nil, "", fmt.Errorf("%w: the spec has no profile", ErrInvalid)
	}
	p, err := profile.FromValue(s.Profile)
	if err != nil {
		return nil, "", fmt.Errorf("%w: profile: %w", ErrInvalid, err)
	}
	if s.Task == "" {
		return nil, "", fmt.Errorf("%w: the spec has no task", ErrInvalid)
	}
	if !queueName.MatchString(s.Provider) {
		return nil, "", fmt.Errorf("%w: provider name %q is not a lower-case name", ErrInvalid, s.Provider)
	}
	if s.Stage < 0 || s.TimeoutMillis < 0 {
		return nil, "", fmt.Errorf("%w: stage and timeout cannot be negative", ErrInvalid)
	}
	switch {
	case s.JudgedBy != "" && s.Expect != "":
		return nil, "", fmt.Errorf("%w: a spec judged elsewhere (judgedBy) has no expect of its own", ErrInvalid)
	case len(s.JudgedBy) > maxJudgedBy || !utf8.ValidString(s.JudgedBy):
		return nil, "", fmt.Errorf("%w: judgedBy must be valid UTF-8 of at most %d bytes", ErrInvalid, maxJudgedBy)
	}
	v, err := canonjson.ToValue(s)
	if err != nil {
		return nil, "", fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	digest, err := canonjson.Digest(v)
	if err != nil {
		return nil, "", fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return p, digest, nil
}

// Attempt is one execution of a fleet run: a kernel run of its own.
type Attempt struct {
	// Generation is the fleet run's lease generation the attempt ran
	// under.
	Generation int64 `json:"generation"`
	// RunID is the attempt's kernel run.
	RunID string `json:"runId"`
	// Worker identifies the worker process.
	Worker string `json:"worker"`
	// StartedAt is when the worker claimed the run (RFC 3339).
	StartedAt string `json:"startedAt"`
	// Status is how the attempt ended, as far as the fleet knows: a
	// store.Status, "released" (the worker stopped and handed the run
	// back), or "" while it runs or after its worker died until another
	// worker takes the run over and records how it ended (interrupted,
	// or cancelled by its worker's shutdown).
	Status string `json:"status,omitzero"`
	// Note says why, when the status alone does not.
	Note string `json:"note,omitzero"`
}

// Outcome is what the attempt that finished a fleet run delivered.
type Outcome struct {
	// Status is the attempt's terminal status.
	Status string `json:"status"`
	// RunID is the attempt's kernel run.
	RunID string `json:"runId"`
	// Delivered reports whether the completion check passed; false when
	// the spec is judged elsewhere (JudgedBy).
	Delivered bool `json:"delivered"`
	// JudgedBy is the spec's JudgedBy: who decides delivery instead.
	JudgedBy string `json:"judgedBy,omitzero"`
	// Text is the result's text.
	Text string `json:"text,omitzero"`
	// Error is why the attempt failed, if it did.
	Error string `json:"error,omitzero"`
}

// Run is a fleet run as read from the store.
type Run struct {
	ID string
	// Status is the fleet run's status: pending until a worker claims
	// it, running while an attempt runs (or its worker died and no other
	// worker took it over yet: see ClaimUntil), then terminal.
	Status store.Status
	// ClaimUntil is when the holder's claim lapses unless renewed; zero
	// when no worker holds the run.
	ClaimUntil time.Time
	Generation int64
	Owner      string
	Spec       Spec
	SpecDigest string
	Attempts   []Attempt
	// Outcome is set once an attempt finished the run; nil before.
	Outcome *Outcome
	// CancelRequested reports whether Cancel asked for the run to end.
	CancelRequested bool
	// TraceParent is the W3C traceparent the run was submitted with
	// (Submission.TraceParent), "" when none.
	TraceParent string
	// InDoubt names the environment an attempt kept when its turn became
	// in doubt (the run ended interrupted); nil otherwise.
	InDoubt *InDoubt
	// Recovery is what the last Recover found; nil before any. Once it
	// settled the run, Status is the settled turn's (the store keeps the
	// run interrupted: a terminal run keeps its status there).
	Recovery *Recovery
}

// Doc member names of a fleet run.
const (
	docSpec       = "spec"
	docSpecDigest = "specDigest"
	docAttempts   = "attempts"
	docOutcome    = "outcome"
	docKey        = "idempotencyKey"
	// docClaim is when the holder's claim lapses unless renewed (RFC
	// 3339). It lives in the document, not in store.Run.LeaseUntil: a
	// run whose store lease lapsed reads interrupted for good, while a
	// fleet run whose worker died is taken over and goes on.
	docClaim = "claimUntil"
	// docCancel is the member kernel.RequestCancel records.
	docCancel = "cancelRequested"
)

// Get reads a fleet run.
func (f *Fleet) Get(ctx context.Context, runID string) (*Run, error) {
	r, err := f.store.GetRun(ctx, runID)
	if err != nil {
		return nil, fmt.Errorf("fleet: %w", err)
	}
	return DecodeRun(r)
}

// DecodeRun reads a fleet run from its store record (as ListRuns or
// GetRun return it); a run of another kind is ErrNotFleetRun.
func DecodeRun(r store.Run) (*Run, error) {
	if r.Kind != Kind {
		return nil, fmt.Errorf("fleet: run %s is a %q run, not a fleet run: %w", r.ID, r.Kind, ErrNotFleetRun)
	}
	out := &Run{ID: r.ID, Status: r.Status, Generation: r.Generation, Owner: r.Owner, ClaimUntil: claimUntilOf(r.Doc)}
	if v, ok := r.Doc.Get(docSpec); ok {
		if err := canonjson.FromValue(v, &out.Spec); err != nil {
			return nil, fmt.Errorf("fleet: run %s: spec: %w", r.ID, err)
		}
	}
	if v, ok := r.Doc.Get(docSpecDigest); ok {
		out.SpecDigest = v.Str()
	}
	attempts, err := attemptsOf(r)
	if err != nil {
		return nil, err
	}
	out.Attempts = attempts
	if v, ok := r.Doc.Get(docOutcome); ok {
		out.Outcome = new(Outcome)
		if err := canonjson.FromValue(v, out.Outcome); err != nil {
			return nil, fmt.Errorf("fleet: run %s: outcome: %w", r.ID, err)
		}
	}
	if v, ok := r.Doc.Get(docInDoubt); ok {
		out.InDoubt = new(InDoubt)
		if err := canonjson.FromValue(v, out.InDoubt); err != nil {
			return nil, fmt.Errorf("fleet: run %s: inDoubt: %w", r.ID, err)
		}
	}
	if v, ok := r.Doc.Get(docRecovery); ok {
		out.Recovery = new(Recovery)
		if err := canonjson.FromValue(v, out.Recovery); err != nil {
			return nil, fmt.Errorf("fleet: run %s: recovery: %w", r.ID, err)
		}
		switch out.Recovery.State {
		case RecoverySettled, RecoveryRunning, RecoveryLost:
		default:
			return nil, fmt.Errorf("fleet: run %s: recovery: unknown state %q", r.ID, out.Recovery.State)
		}
		if s := store.Status(out.Outcome.statusOr("")); out.Recovery.State == RecoverySettled && s.Terminal() {
			out.Status = s
		}
	}
	_, out.CancelRequested = r.Doc.Get(docCancel)
	out.TraceParent = traceParentOf(r.Doc)
	return out, nil
}

func attemptsOf(r store.Run) ([]Attempt, error) {
	v, ok := r.Doc.Get(docAttempts)
	if !ok {
		return nil, nil
	}
	var out []Attempt
	if err := canonjson.FromValue(v, &out); err != nil {
		return nil, fmt.Errorf("fleet: run %s: attempts: %w", r.ID, err)
	}
	return out, nil
}

func withAttempts(doc canonjson.Value, attempts []Attempt) (canonjson.Value, error) {
	if attempts == nil {
		attempts = []Attempt{} // a run that ended before any attempt: [], not absent
	}
	v, err := canonjson.ToValue(attempts)
	if err != nil {
		return canonjson.Value{}, err
	}
	return doc.With(docAttempts, v), nil
}

func claimUntilOf(doc canonjson.Value) time.Time {
	v, ok := doc.Get(docClaim)
	if !ok {
		return time.Time{}
	}
	t, err := time.Parse(time.RFC3339Nano, v.Str())
	if err != nil {
		// An unreadable claim holds nothing: the run may be taken over.
		return time.Time{}
	}
	return t
}

func withClaim(doc canonjson.Value, until time.Time) canonjson.Value {
	return doc.With(docClaim, canonjson.StringValue(until.UTC().Format(time.RFC3339Nano)))
}

// attemptID names the kernel run of a fleet run's attempt.
func attemptID(runID string, generation int64) string {
	return runID + ".g" + strconv.FormatInt(generation, 10)
}
