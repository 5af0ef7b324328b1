package delegation

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/supervise"
)

// Defaults of Config.
const (
	DefaultConcurrency  = 1
	MaxConcurrency      = 64
	DefaultMaxPending   = 100
	DefaultClaimTTL     = 30 * time.Second
	DefaultScanInterval = 5 * time.Second
	DefaultMaxRunTime   = time.Hour
	// MaxOutBytes bounds the output text kept in a record; the whole
	// output stays in the run dir's blob (Result.OutRef).
	MaxOutBytes = 1 << 20
	// DefaultStoreTimeout bounds each store call (Config.StoreTimeout).
	DefaultStoreTimeout = 10 * time.Second
	// pollInterval is how often a waiting caller reads the store for a
	// change another process made.
	pollInterval = 500 * time.Millisecond
)

// ErrInvalidConfig matches Open's error for a Config it cannot run.
var ErrInvalidConfig = errors.New("delegation: invalid config")

// Config fixes everything that decides what a delegation runs; nothing
// of it comes from a request.
type Config struct {
	// Store holds the delegation records (required).
	Store store.Store
	// Manager is the manager profile every delegation runs (required),
	// Profiles the worker profiles it may spawn, by name (at least one).
	Manager  *profile.Profile
	Profiles map[string]*profile.Profile
	// AuthoredProfiles makes the manager an authoring supervisor (§9
	// delegate: "a default authoring supervisor decomposes the intent
	// and authors worker profiles"): spawn_worker also takes a worker
	// profile the manager writes (supervise.Options.AuthoredProfiles),
	// validated strictly and refused preflight when it would run
	// commands (hooks, local MCP servers) or open connections.
	AuthoredProfiles bool
	// AllowedModels, when not empty, are the only models a worker may
	// run, authored or registered (supervise.Options.AllowedModels); an
	// authored profile must then name one.
	AllowedModels []string
	// Executor runs workers (required).
	Executor supervise.Executor
	// Router returns the manager's model for one task; a cli-base
	// manager needs it. Brain, when set, returns the brain instead (a
	// caller-owned brain; Router is then unused).
	Router func(task string) (contract.ChatModel, error)
	Brain  func(task string) (supervise.Brain, error)
	// Deliverable is the independent completion check (Check required).
	Deliverable supervise.Deliverable
	// Caps are the largest budget a request may ask for, and the budget
	// of a request that names none. Tokens and Iterations are required;
	// USD nil means delegations run without a USD ceiling.
	Caps Budget
	// PerWorker is each worker's default reservation. When its Tokens is
	// nil, a worker reserves a share of the delegation's tokens (a
	// quarter at most) and one iteration.
	PerWorker ledger.Budget
	// MaxLiveWorkers, MaxTurns and SettleGrace are passed to supervise.
	MaxLiveWorkers int
	MaxTurns       int
	SettleGrace    time.Duration
	// RunDir is the directory under which each delegation's supervised
	// run keeps its journal, in RunDir/<taskId> (required).
	RunDir string
	// Concurrency bounds the delegations this queue runs at once
	// (default DefaultConcurrency, at most MaxConcurrency).
	Concurrency int
	// MaxPending bounds the pending delegations a submission may join
	// (default DefaultMaxPending).
	MaxPending int
	// MaxRunTime is each delegation's deadline from its first start
	// (default DefaultMaxRunTime).
	MaxRunTime time.Duration
	// ClaimTTL is how long a claim lasts unless renewed (default
	// DefaultClaimTTL); ScanInterval how often the queue looks for
	// delegations whose claim lapsed (default DefaultScanInterval).
	ClaimTTL     time.Duration
	ScanInterval time.Duration
	// MaxTerminalRecords, when positive, bounds the ended delegations
	// kept (§9 maxTerminalRecords): beyond it, those that ended longest
	// ago are evicted from the store with their run dirs, and read as
	// unknown-delegation after. 0 keeps every one.
	MaxTerminalRecords int
	// StoreTimeout bounds each store call (default
	// DefaultStoreTimeout); a call that outlives it is the queue's store
	// failure (see StoreFailedError).
	StoreTimeout time.Duration
	// Owner names this queue in claims (default a random id).
	Owner string
	// Now replaces time.Now; Logger receives the operational log (never
	// tasks or results). Nil discards it.
	Now    func() time.Time
	Logger *slog.Logger
	// Observer, when set, returns the supervise.Observer of one
	// delegation's supervised run (supervise.Options.Observer; nil:
	// none) — telemetry.Tracing.SuperviseObserver traces it. Each run,
	// a resumed one included, gets its own call.
	Observer func() supervise.Observer
}

func (c *Config) check() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalidConfig, fmt.Sprintf(format, args...))
	}
	switch {
	case c.Store == nil:
		return bad("Store is required")
	case c.Manager == nil:
		return bad("Manager is required")
	case len(c.Profiles) == 0:
		return bad("at least one worker profile is required")
	case c.Executor == nil:
		return bad("Executor is required")
	case c.Router == nil && c.Brain == nil:
		return bad("Router (or Brain) is required")
	case c.Deliverable.Check == nil:
		return bad("Deliverable.Check is required")
	case c.Caps.Tokens <= 0 || c.Caps.Iterations <= 0:
		return bad("Caps.Tokens and Caps.Iterations must be positive")
	case c.Caps.USD != nil && !(*c.Caps.USD > 0 && *c.Caps.USD < 1e9):
		return bad("Caps.USD must be positive and below 1e9")
	case c.RunDir == "":
		return bad("RunDir is required")
	case c.Concurrency < 0 || c.Concurrency > MaxConcurrency:
		return bad("Concurrency must be between 1 and %d", MaxConcurrency)
	case c.MaxPending < 0 || c.MaxRunTime < 0 || c.ClaimTTL < 0 || c.ScanInterval < 0 || c.StoreTimeout < 0 || c.MaxTerminalRecords < 0:
		return bad("MaxPending, MaxRunTime, ClaimTTL, ScanInterval, StoreTimeout and MaxTerminalRecords cannot be negative")
	}
	if c.ClaimTTL != 0 && c.ClaimTTL < 300*time.Millisecond {
		return bad("ClaimTTL must be at least 300ms")
	}
	for name, p := range c.Profiles {
		if p == nil {
			return bad("worker profile %q is nil", name)
		}
	}
	if c.Concurrency == 0 {
		c.Concurrency = DefaultConcurrency
	}
	if c.MaxPending == 0 {
		c.MaxPending = DefaultMaxPending
	}
	if c.MaxRunTime == 0 {
		c.MaxRunTime = DefaultMaxRunTime
	}
	if c.ClaimTTL == 0 {
		c.ClaimTTL = DefaultClaimTTL
	}
	if c.ScanInterval == 0 {
		c.ScanInterval = DefaultScanInterval
	}
	if c.StoreTimeout == 0 {
		c.StoreTimeout = DefaultStoreTimeout
	}
	if c.Owner == "" {
		var b [8]byte
		rand.Read(b[:])
		c.Owner = "dlgq-" + hex.EncodeToString(b[:])
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}

// Why a run's context ended (context.Cause).
var (
	errShutdown  = errors.New("delegation: the queue is closing")
	errCancelled = errors.New("delegation: cancelled")
	// errLost matches contract.ErrLeaseLost: the supervised run it ends
	// is no longer this queue's, so supervise journals nothing more for
	// it (its end included) and the new holder resumes it.
	errLost = fmt.Errorf("delegation: the claim was lost to another holder: %w", contract.ErrLeaseLost)
	// errLapsed matches contract.ErrLeaseLost too: the claim's time ran
	// out before this queue renewed it (the process was paused, or its
	// store answered too slowly), so another queue may hold it by now.
	// A claim that lapsed unclaimed is claimable again by any queue, this
	// one included, which resumes the run from its journal.
	errLapsed   = fmt.Errorf("delegation: the claim lapsed before it was renewed: %w", contract.ErrLeaseLost)
	errFinished = errors.New("delegation: the run returned")
)

// Queue is a durable delegation queue: it admits delegations, runs them
// (at most Config.Concurrency at once) and answers for them. It is safe
// for concurrent use. Open starts it; Close stops it.
type Queue struct {
	cfg  Config
	base context.Context
	stop context.CancelCauseFunc
	wg   sync.WaitGroup
	kick chan struct{}
	// evictKick wakes the evictor (Config.MaxTerminalRecords).
	evictKick chan struct{}

	mu      sync.Mutex
	live    map[string]context.CancelCauseFunc
	changed chan struct{}
	closed  bool
	// failure is the first store failure (nil while the store answers).
	failure *StoreFailedError
}

// Open checks cfg and starts the queue: Config.Concurrency runners that
// take pending delegations in order of submission, and, on the same
// scan, running delegations whose claim lapsed — so a queue opened on a
// store an earlier process left resumes what it had in flight (see the
// package documentation). An invalid cfg matches ErrInvalidConfig.
func Open(cfg Config) (*Queue, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	base, stop := context.WithCancelCause(context.Background())
	q := &Queue{cfg: cfg, base: base, stop: stop, kick: make(chan struct{}, 1), evictKick: make(chan struct{}, 1),
		live: map[string]context.CancelCauseFunc{}, changed: make(chan struct{})}
	q.cfg.Store = watchedStore{Store: cfg.Store, q: q}
	if cfg.MaxTerminalRecords > 0 {
		q.wg.Add(1)
		go q.evictor()
		q.kickEviction() // the cap applies to what an earlier process left
	}
	for range cfg.Concurrency {
		q.wg.Add(1)
		go q.loop()
	}
	return q, nil
}

// Owner is the name this queue's claims carry.
func (q *Queue) Owner() string { return q.cfg.Owner }

// Close stops the queue: no new submissions, no new claims; running
// delegations are cancelled, their supervised runs journal their end,
// and their claims are released so the next queue on the store resumes
// them. It waits for that until ctx ends (then it returns ctx's error
// and the runs finish on their own). When the store failed while the
// queue was open, Close returns that failure too (a *StoreFailedError):
// what the queue meant to record since may be missing from the store.
func (q *Queue) Close(ctx context.Context) error {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.stop(errShutdown)
	done := make(chan struct{})
	go func() { q.wg.Wait(); close(done) }()
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		err = fmt.Errorf("delegation: closing: %w", ctx.Err())
	}
	if f := q.Failure(); f != nil {
		err = errors.Join(f, err)
	}
	return err
}

// Failure returns the queue's first store failure, a
// *StoreFailedError, or nil while the store has answered.
func (q *Queue) Failure() error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.failure == nil {
		return nil
	}
	return q.failure
}

// fail records the first store failure; the queue then refuses new
// delegations and claims none.
func (q *Queue) fail(f *StoreFailedError) {
	q.mu.Lock()
	first := q.failure == nil
	if first {
		q.failure = f
	}
	q.mu.Unlock()
	if first {
		q.cfg.Logger.Error("delegation: the store failed; refusing new delegations until the queue is restarted", "op", f.Op, "err", f.Err)
	}
}

// Request is a delegation request: the only things a caller chooses.
type Request struct {
	// Intent is what the manager is asked to deliver (required, at
	// most MaxIntentBytes).
	Intent string `json:"intent"`
	// RunID, when set, is the caller's correlation id for the
	// delegation (§9 delegate's runId): it is kept with the record and
	// returned with it, and never names anything this queue stores or
	// runs (the delegation's own id is its TaskID). It
	// follows the idempotency key's rule and is not part of the request
	// digest: a retry may carry a new one.
	RunID string `json:"runId,omitempty"`
	// IdempotencyKey, when set, makes the request idempotent.
	IdempotencyKey string `json:"idempotencyKey,omitempty"`
	// Budget, when set, narrows the caps.
	Budget *BudgetRequest `json:"budget,omitempty"`
}

// BudgetRequest asks for a budget within the server's caps; an omitted
// field takes the cap.
type BudgetRequest struct {
	Tokens     *int64   `json:"tokens,omitempty" jsonschema:"token ceiling of the whole delegation, at most the server's cap"`
	Iterations *int64   `json:"iterations,omitempty" jsonschema:"iteration ceiling (worker runs and manager turns), at most the server's cap"`
	USD        *float64 `json:"usd,omitempty" jsonschema:"cost ceiling in USD, at most the server's cap (only when the server has one)"`
}

// Submitted is what Submit did.
type Submitted struct {
	TaskID string `json:"taskId"`
	// Reused says the idempotency key had already submitted this
	// delegation; nothing new was recorded.
	Reused     bool       `json:"reused"`
	Delegation Delegation `json:"delegation"`
}

// Check validates req against caps and returns the effective budget and
// the digest of the request as given. A refusal is a *Refusal with the
// JSON pointer of the argument at fault.
func Check(req Request, caps Budget) (Budget, string, error) {
	if strings.TrimSpace(req.Intent) == "" {
		return Budget{}, "", refuse(CodeInvalidArguments, "/intent", "the intent is empty; say what the manager should deliver")
	}
	if len(req.Intent) > MaxIntentBytes {
		return Budget{}, "", refuse(CodeInvalidArguments, "/intent", "the intent is %d bytes; at most %d are accepted", len(req.Intent), MaxIntentBytes)
	}
	if !utf8.ValidString(req.Intent) {
		return Budget{}, "", refuse(CodeInvalidArguments, "/intent", "the intent is not valid UTF-8")
	}
	if err := checkKey(req.IdempotencyKey, "/idempotencyKey", "idempotency key"); err != nil {
		return Budget{}, "", err
	}
	if err := checkKey(req.RunID, "/runId", "runId"); err != nil {
		return Budget{}, "", err
	}
	b := caps
	if r := req.Budget; r != nil {
		for _, f := range []struct {
			name string
			v    *int64
			cap  int64
			dst  *int64
		}{{"tokens", r.Tokens, caps.Tokens, &b.Tokens}, {"iterations", r.Iterations, caps.Iterations, &b.Iterations}} {
			switch {
			case f.v == nil:
			case *f.v <= 0:
				return Budget{}, "", refuse(CodeInvalidArguments, "/budget/"+f.name, "budget.%s must be positive", f.name)
			case *f.v > f.cap:
				return Budget{}, "", refuse(CodeBudgetOverCap, "/budget/"+f.name, "budget.%s %d is over the server's cap of %d; ask for at most %d or omit it", f.name, *f.v, f.cap, f.cap)
			default:
				*f.dst = *f.v
			}
		}
		if r.USD != nil {
			usd := *r.USD
			switch {
			case math.IsNaN(usd) || math.IsInf(usd, 0) || usd <= 0:
				return Budget{}, "", refuse(CodeInvalidArguments, "/budget/usd", "budget.usd must be a positive number")
			case caps.USD == nil:
				return Budget{}, "", refuse(CodeBudgetOverCap, "/budget/usd", "this server runs delegations without a USD ceiling; omit budget.usd")
			case usd > *caps.USD:
				return Budget{}, "", refuse(CodeBudgetOverCap, "/budget/usd", "budget.usd %g is over the server's cap of %g; ask for at most %g or omit it", usd, *caps.USD, *caps.USD)
			}
			b.USD = &usd
		}
	}
	if b.USD != nil {
		usd := *b.USD
		b.USD = &usd // never alias the caps
	}
	// The digest's member is still named task, so digests recorded
	// before the argument was named intent keep matching.
	v, err := canonjson.ToValue(struct {
		Task   string         `json:"task"`
		Budget *BudgetRequest `json:"budget,omitempty"`
	}{req.Intent, req.Budget})
	if err != nil {
		return Budget{}, "", refuse(CodeInvalidArguments, "", "the request cannot be encoded: %v", err)
	}
	digest, err := canonjson.Digest(v)
	if err != nil {
		return Budget{}, "", refuse(CodeInvalidArguments, "", "the request cannot be digested: %v", err)
	}
	return b, digest, nil
}

// checkKey applies the idempotency key rule ("" is no key); what names
// the argument in the refusal.
func checkKey(key, path, what string) error {
	if key == "" {
		return nil
	}
	if len(key) > MaxKeyLen {
		return refuse(CodeInvalidArguments, path, "the %s is longer than %d characters", what, MaxKeyLen)
	}
	for _, r := range key {
		if !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '.' || r == '_' || r == ':' || r == '-') {
			return refuse(CodeInvalidArguments, path, "the %s may contain only A-Z, a-z, 0-9, '.', '_', ':' and '-', not %q", what, r)
		}
	}
	return nil
}

// checkTaskID refuses what cannot be a delegation's id before the store
// is asked.
func checkTaskID(id, path string) error {
	if id == "" {
		return refuse(CodeInvalidArguments, path, "the taskId is empty; use the taskId delegate returned")
	}
	if err := checkKey(id, path, "taskId"); err != nil {
		return refuse(CodeUnknownDelegation, path, "no delegation has the taskId %q", clip(id, 80))
	}
	return nil
}

// Submit admits a delegation and returns at once with its id; a runner
// takes it in order. With an idempotency key, the same request returns
// the delegation the key first submitted (Reused) and another request is
// refused (idempotency-conflict). A refusal is a *Refusal.
func (q *Queue) Submit(ctx context.Context, req Request) (Submitted, error) {
	if q.isClosed() {
		return Submitted{}, refuse(CodeClosed, "", "the delegation server is stopping; retry on its next start")
	}
	if f := q.Failure(); f != nil {
		return Submitted{}, refuse(CodeStoreFailed, "", "the delegation store failed (%v); restart the delegation server once its store answers again, then retry", clip(f.(*StoreFailedError).Err.Error(), 200))
	}
	budget, digest, err := Check(req, q.cfg.Caps)
	if err != nil {
		return Submitted{}, err
	}
	id := kernel.NewID("dlg")
	if req.IdempotencyKey != "" {
		rec := store.Idempotency{Scope: IdempotencyScope, Key: req.IdempotencyKey, RequestDigest: digest,
			Result: canonjson.ObjectValue([]canonjson.Member{{Name: "taskId", Value: canonjson.StringValue(id)}}), CreatedAt: q.cfg.Now()}
		got, created, err := q.cfg.Store.ClaimIdempotency(ctx, rec)
		if err != nil {
			return Submitted{}, fmt.Errorf("delegation: submit: %w", err)
		}
		if !created {
			prior, _ := got.Result.Get("taskId")
			if got.RequestDigest != digest {
				return Submitted{}, refuse(CodeIdempotencyConflict, "/idempotencyKey",
					"the idempotency key %q already submitted delegation %s with another request; use a new key for a new request", req.IdempotencyKey, prior.Str())
			}
			id = prior.Str()
			if r, err := q.cfg.Store.GetRun(ctx, id); err == nil {
				d, err := decodeRun(r)
				if err != nil {
					return Submitted{}, err
				}
				return Submitted{TaskID: id, Reused: true, Delegation: d}, nil
			} else if !errors.Is(err, store.ErrNotFound) {
				return Submitted{}, fmt.Errorf("delegation: submit: %w", err)
			}
			// No delegation holds the key's id: the first try claimed
			// the key but died before it recorded the delegation, or the
			// delegation ended and was evicted (MaxTerminalRecords).
			// Either way nothing of it is left: record it now, anew,
			// under the key's id.
		}
	}
	pending, err := q.cfg.Store.ListRuns(ctx, store.ListOptions{Kind: Kind, Status: store.StatusPending, Limit: q.cfg.MaxPending})
	if err != nil {
		return Submitted{}, fmt.Errorf("delegation: submit: %w", err)
	}
	if len(pending) >= q.cfg.MaxPending {
		return Submitted{}, refuse(CodeQueueFull, "", "%d delegations are already waiting; retry once some have started", len(pending))
	}
	d := Delegation{Intent: req.Intent, RunID: req.RunID, IdempotencyKey: req.IdempotencyKey, RequestDigest: digest, Budget: budget,
		RunDir: filepath.Join(q.cfg.RunDir, id), Feedback: []Feedback{}}
	doc, err := encodeDoc(d)
	if err != nil {
		return Submitted{}, fmt.Errorf("delegation: submit: %w", err)
	}
	r, err := q.cfg.Store.CreateRun(ctx, store.Run{ID: id, Kind: Kind, Status: store.StatusPending, Doc: doc})
	reused := false
	if errors.Is(err, store.ErrExists) && req.IdempotencyKey != "" {
		// A concurrent submission under the same key (which found the key
		// claimed but the delegation not yet recorded) recorded it first.
		r, err = q.cfg.Store.GetRun(ctx, id)
		reused = true
	}
	if err != nil {
		return Submitted{}, fmt.Errorf("delegation: submit: %w", err)
	}
	out, err := decodeRun(r)
	if err != nil {
		return Submitted{}, err
	}
	q.cfg.Logger.Info("delegation submitted", "task_id", id, "reused", reused)
	q.notify()
	select {
	case q.kick <- struct{}{}:
	default:
	}
	return Submitted{TaskID: id, Reused: reused, Delegation: out}, nil
}

// Get returns a delegation; an unknown id is a *Refusal
// (unknown-delegation).
func (q *Queue) Get(ctx context.Context, taskID string) (Delegation, error) {
	if err := checkTaskID(taskID, "/taskId"); err != nil {
		return Delegation{}, err
	}
	r, err := q.cfg.Store.GetRun(ctx, taskID)
	if errors.Is(err, store.ErrNotFound) || err == nil && r.Kind != Kind {
		return Delegation{}, refuse(CodeUnknownDelegation, "/taskId", "no delegation has the taskId %q", taskID)
	}
	if err != nil {
		return Delegation{}, fmt.Errorf("delegation: %s: %w", taskID, err)
	}
	return decodeRun(r)
}

// Wait returns the delegation once it ended, or as it is when wait
// elapsed or ctx ended (wait is capped at MaxWaitSeconds).
func (q *Queue) Wait(ctx context.Context, taskID string, wait time.Duration) (Delegation, error) {
	wait = min(wait, MaxWaitSeconds*time.Second)
	deadline := time.Now().Add(wait)
	for {
		q.mu.Lock()
		changed := q.changed
		q.mu.Unlock()
		d, err := q.Get(ctx, taskID)
		if err != nil || d.State.Terminal() {
			return d, err
		}
		left := time.Until(deadline)
		if left <= 0 {
			return d, nil
		}
		t := time.NewTimer(min(left, pollInterval))
		select {
		case <-ctx.Done():
			t.Stop()
			return d, nil
		case <-changed:
		case <-t.C:
		}
		t.Stop()
	}
}

// HistoryOptions page the history: the newest Limit delegations
// (default DefaultHistory, at most MaxHistory) created at or after Since
// (zero: any time).
type HistoryOptions struct {
	Limit int
	Since time.Time
}

// History returns delegations newest first.
func (q *Queue) History(ctx context.Context, o HistoryOptions) ([]Delegation, error) {
	if o.Limit < 0 || o.Limit > MaxHistory {
		return nil, refuse(CodeInvalidArguments, "/limit", "limit must be between 1 and %d", MaxHistory)
	}
	if o.Limit == 0 {
		o.Limit = DefaultHistory
	}
	runs, err := q.cfg.Store.ListRuns(ctx, store.ListOptions{Kind: Kind, Limit: o.Limit})
	if err != nil {
		return nil, fmt.Errorf("delegation: history: %w", err)
	}
	out := make([]Delegation, 0, len(runs))
	for _, r := range runs {
		if !o.Since.IsZero() && r.CreatedAt.Before(o.Since) {
			break // newest first: the rest are older still
		}
		d, err := decodeRun(r)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

// Cancel ends a delegation cancelled. A pending one is cancelled at
// once (effect cancelled); a running one is recorded cancelled at once,
// even before its run stops (effect cancel_requested): its holder, here
// or in another process, cancels the run on its next renewal, and the
// run's result is still recorded when it returns. An ended delegation
// is left as it is (effect not_live).
func (q *Queue) Cancel(ctx context.Context, taskID, reason string) (Delegation, kernel.Effect, error) {
	if err := checkTaskID(taskID, "/taskId"); err != nil {
		return Delegation{}, kernel.EffectUnknown, err
	}
	if len(reason) > MaxReasonBytes {
		return Delegation{}, kernel.EffectUnknown, refuse(CodeInvalidArguments, "/reason", "the reason is longer than %d bytes", MaxReasonBytes)
	}
	var effect kernel.Effect
	r, err := q.update(ctx, taskID, func(r *store.Run, d *Delegation) error {
		switch r.Status {
		case store.StatusPending:
			effect = kernel.EffectCancelled
		case store.StatusRunning:
			effect = kernel.EffectCancelRequested
		default:
			effect = kernel.EffectNotLive
			return errUnchanged
		}
		now := q.cfg.Now()
		d.Cancellation = &Cancellation{At: now, Reason: reason, From: r.Status}
		d.EndedAt = &now
		r.Status = store.StatusCancelled
		return nil
	})
	if err != nil {
		return Delegation{}, kernel.EffectUnknown, err
	}
	q.kickEviction()
	if effect == kernel.EffectCancelRequested {
		q.mu.Lock()
		if cancel := q.live[taskID]; cancel != nil {
			cancel(errCancelled)
		}
		q.mu.Unlock()
	}
	q.notify()
	d, err := decodeRun(r)
	return d, effect, err
}

// AddFeedback records a rating of a delegation (at most MaxFeedback per
// delegation).
func (q *Queue) AddFeedback(ctx context.Context, taskID string, f Feedback) (Delegation, error) {
	if err := checkTaskID(taskID, "/taskId"); err != nil {
		return Delegation{}, err
	}
	if err := checkFeedback(f); err != nil {
		return Delegation{}, err
	}
	if f.At.IsZero() {
		f.At = q.cfg.Now()
	}
	r, err := q.update(ctx, taskID, func(_ *store.Run, d *Delegation) error {
		if len(d.Feedback) >= MaxFeedback {
			return refuse(CodeFeedbackFull, "", "delegation %s already has %d ratings, the most it keeps", taskID, MaxFeedback)
		}
		d.Feedback = append(d.Feedback, f)
		return nil
	})
	if err != nil {
		return Delegation{}, err
	}
	return decodeRun(r)
}

// Feedback raters and labels.
var (
	raters = []string{"agent", "user", "downstream-judge"}
	labels = []string{"good", "bad", "neutral", "mixed"}
)

func checkFeedback(f Feedback) error {
	switch {
	case math.IsNaN(f.Score) || f.Score < 0 || f.Score > 1:
		return refuse(CodeInvalidArguments, "/rating/score", "the score must be between 0 and 1")
	case f.Label != "" && !slices.Contains(labels, f.Label):
		return refuse(CodeInvalidArguments, "/rating/label", "the label must be one of %s", strings.Join(labels, ", "))
	case len(f.Notes) > MaxNotesBytes:
		return refuse(CodeInvalidArguments, "/rating/notes", "the notes are longer than %d bytes", MaxNotesBytes)
	case !utf8.ValidString(f.Notes):
		return refuse(CodeInvalidArguments, "/rating/notes", "the notes are not valid UTF-8")
	case !slices.Contains(raters, f.By):
		return refuse(CodeInvalidArguments, "/by", "by must be one of %s", strings.Join(raters, ", "))
	}
	return nil
}

// errUnchanged makes update leave the record as it is.
var errUnchanged = errors.New("delegation: unchanged")

// update applies fn to a delegation by compare-and-set and returns the
// run as stored. fn returning errUnchanged stores nothing and is not an
// error.
func (q *Queue) update(ctx context.Context, taskID string, fn func(r *store.Run, d *Delegation) error) (store.Run, error) {
	unchanged := false
	r, err := q.cfg.Store.UpdateRun(ctx, taskID, func(r *store.Run) error {
		unchanged = false
		if r.Kind != Kind {
			return store.ErrNotFound
		}
		d, err := decodeRun(*r)
		if err != nil {
			return err
		}
		if err := fn(r, &d); err != nil {
			if errors.Is(err, errUnchanged) {
				unchanged = true
			}
			return err
		}
		doc, err := encodeDoc(d)
		if err != nil {
			return err
		}
		r.Doc = doc
		return nil
	})
	if unchanged {
		r, err = q.cfg.Store.GetRun(ctx, taskID)
	}
	if errors.Is(err, store.ErrNotFound) {
		return store.Run{}, refuse(CodeUnknownDelegation, "/taskId", "no delegation has the taskId %q", taskID)
	}
	var refusal *Refusal
	if err != nil && !errors.As(err, &refusal) {
		return store.Run{}, fmt.Errorf("delegation: %s: %w", taskID, err)
	}
	return r, err
}

func (q *Queue) isClosed() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.closed
}

// notify wakes every waiter.
func (q *Queue) notify() {
	q.mu.Lock()
	close(q.changed)
	q.changed = make(chan struct{})
	q.mu.Unlock()
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
