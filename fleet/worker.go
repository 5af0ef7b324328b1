package fleet

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertype"
	"go.opentelemetry.io/otel/metric"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/store"
)

// Worker defaults.
const (
	DefaultConcurrency     = 4
	DefaultRescueAfter     = time.Minute
	DefaultShutdownTimeout = 30 * time.Second
	// DefaultBackoff is the first delay after a provider's server was
	// found unreachable; each further refusal doubles it, up to
	// DefaultMaxBackoff (or half of RescueAfter, if less).
	DefaultBackoff    = 500 * time.Millisecond
	DefaultMaxBackoff = 30 * time.Second
)

// WorkerOptions configures a worker.
type WorkerOptions struct {
	// Providers are the providers this worker runs on, by the name jobs
	// give (Spec.Provider). The worker takes jobs from their queues only.
	Providers map[string]contract.Provider
	// Concurrency is how many runs of each queue the worker executes at
	// once; 0 is DefaultConcurrency.
	Concurrency int
	// LeaseTTL is the lease of the fleet runs and attempts this worker
	// holds: once its process dies, another worker takes a run over
	// after at most this long (plus RescueAfter). 0 is
	// kernel.DefaultLeaseTTL.
	LeaseTTL time.Duration
	// RescueAfter is how long after a job started River may hand it to
	// another worker when it has not finished (River's stuck-job rescue,
	// whose maintenance looks about every 30 seconds): the recovery delay
	// after a worker's death. The run store's lease, not this, decides who
	// runs a run: a job rescued from a live worker is snoozed by the
	// worker that receives it until that run's lease lapses. 0 is
	// DefaultRescueAfter.
	RescueAfter time.Duration
	// ShutdownTimeout is how long Run waits, once its context ends, for
	// running attempts to finish before it cancels them and hands their
	// runs back; 0 is DefaultShutdownTimeout.
	ShutdownTimeout time.Duration
	// PollInterval is how often the worker looks for jobs when no
	// notification arrives; 0 keeps River's default (1s).
	PollInterval time.Duration
	// Backoff and MaxBackoff pace a worker whose provider's server
	// refuses connections (it is down): the run is handed back, its job
	// waits before another try, and the worker waits before its next
	// attempt on that provider, each wait doubling from Backoff up to
	// MaxBackoff per consecutive refusal, jittered (half of it, at
	// random) so that workers do not retry in step. 0 is DefaultBackoff
	// and DefaultMaxBackoff; MaxBackoff is at most half of RescueAfter,
	// so that River never rescues a job while its worker waits.
	Backoff, MaxBackoff time.Duration
	// ID identifies the worker in run records; "" is host/pid/random.
	ID string
	// Meter receives the worker's metrics (MetricRuns,
	// MetricQueueDepth, MetricAppendLatency); nil records none.
	Meter metric.Meter
	// Observe, when set, returns the kernel.Observer of one attempt of
	// fleet run runID (kernel.Request.Observer; nil: none) —
	// telemetry.Tracing.AttemptObserver traces every attempt of a run in
	// the run's one trace, whichever worker executes it. Each attempt
	// gets its own call. An attempt of a run submitted with a
	// TraceParent runs under that span context (its remote parent),
	// traced or not: its provider carries it on.
	Observe func(runID string) kernel.Observer
}

// Stats counts what a worker did since it started.
type Stats struct {
	// Started counts attempts started; Completed, Failed and Cancelled
	// fleet runs this worker ended so; Released runs it handed back;
	// Adopted runs it ended with an earlier attempt that had finished
	// (its worker died, or its end went unrecorded);
	// Snoozed jobs it put back because another worker holds the run.
	Started, Completed, Failed, Cancelled, Released, Adopted, Snoozed int64
}

// Worker executes fleet runs. Create it with Fleet.NewWorker and start it
// with Run.
type Worker struct {
	f      *Fleet
	o      WorkerOptions
	id     string
	client *river.Client[pgx.Tx]
	log    *slog.Logger
	// stopping is set once Run's context ended: attempts cancelled from
	// then on are handed back, not ended.
	stopping atomic.Bool
	// hard is the parent of every attempt's context: River's own job
	// context ends at its job timeout (which only paces River's rescue
	// of a dead worker's jobs), so attempts hang from this instead,
	// cancelled when the worker gives up waiting for them.
	hard       context.Context
	hardCancel context.CancelFunc
	metrics    *metrics
	stats      struct{ started, completed, failed, cancelled, released, adopted, snoozed atomic.Int64 }
	// stop is closed once Run's context ended: waits in progress end.
	stop     chan struct{}
	stopOnce sync.Once
	// down paces attempts on each provider whose server refused the
	// last ones (fixed at NewWorker; each gate guards itself).
	down map[string]*gate
	// afterRead, when set (tests only), is called between a claim's read
	// of the run and its compare-and-set: where another delivery of the
	// same job may claim first.
	afterRead func(runID string)
	// kernelStore, when set (tests only), wraps the store attempts'
	// kernel runs record in: where a test makes the store fail.
	kernelStore func(store.Store) store.Store
}

// NewWorker prepares a worker. It refuses a database whose River schema
// was not migrated (*NotMigratedError).
func (f *Fleet) NewWorker(ctx context.Context, o WorkerOptions) (*Worker, error) {
	if len(o.Providers) == 0 {
		return nil, fmt.Errorf("fleet: %w: a worker needs at least one provider", ErrInvalid)
	}
	if o.Concurrency == 0 {
		o.Concurrency = DefaultConcurrency
	}
	if o.LeaseTTL == 0 {
		o.LeaseTTL = kernel.DefaultLeaseTTL
	}
	if o.RescueAfter == 0 {
		o.RescueAfter = DefaultRescueAfter
	}
	if o.ShutdownTimeout == 0 {
		o.ShutdownTimeout = DefaultShutdownTimeout
	}
	if o.Backoff == 0 {
		o.Backoff = DefaultBackoff
	}
	if o.MaxBackoff == 0 {
		o.MaxBackoff = min(DefaultMaxBackoff, o.RescueAfter/2)
	}
	switch {
	case o.Concurrency < 0:
		return nil, fmt.Errorf("fleet: %w: concurrency %d", ErrInvalid, o.Concurrency)
	case o.LeaseTTL < kernel.MinLeaseTTL:
		return nil, fmt.Errorf("fleet: %w: lease %s is shorter than %s", ErrInvalid, o.LeaseTTL, kernel.MinLeaseTTL)
	case o.RescueAfter < time.Second || o.ShutdownTimeout < 0 || o.PollInterval < 0:
		return nil, fmt.Errorf("fleet: %w: rescue after %s (at least 1s), shutdown timeout %s, poll interval %s", ErrInvalid, o.RescueAfter, o.ShutdownTimeout, o.PollInterval)
	case o.Backoff < 0 || o.MaxBackoff < o.Backoff || o.MaxBackoff > o.RescueAfter/2:
		return nil, fmt.Errorf("fleet: %w: backoff %s up to %s: want 0 < backoff <= max backoff <= half of rescue after (%s)", ErrInvalid, o.Backoff, o.MaxBackoff, o.RescueAfter)
	}
	if err := f.checkMigrated(ctx); err != nil {
		return nil, err
	}
	w := &Worker{f: f, o: o, id: o.ID, log: f.log, stop: make(chan struct{}), down: map[string]*gate{}}
	for name := range o.Providers {
		w.down[name] = new(gate)
	}
	w.hard, w.hardCancel = context.WithCancel(context.WithoutCancel(ctx))
	if w.id == "" {
		w.id = workerID()
	}
	w.log = f.log.With("worker", w.id)
	m, err := newMetrics(o.Meter, f, queueNames(o.Providers))
	if err != nil {
		return nil, fmt.Errorf("fleet: metrics: %w", err)
	}
	w.metrics = m
	workers := river.NewWorkers()
	if err := river.AddWorkerSafely(workers, &jobWorker{w: w}); err != nil {
		m.depth.Unregister()
		return nil, fmt.Errorf("fleet: %w", err)
	}
	queues := map[string]river.QueueConfig{}
	for name := range o.Providers {
		if !queueName.MatchString(name) {
			return nil, fmt.Errorf("fleet: %w: provider name %q is not a lower-case name", ErrInvalid, name)
		}
		queues[name] = river.QueueConfig{MaxWorkers: o.Concurrency}
	}
	cfg := &river.Config{
		Schema:  f.schema,
		Logger:  w.log,
		ID:      strings.NewReplacer("/", "_", ":", "_").Replace(w.id),
		Queues:  queues,
		Workers: workers,
		// River rescues only jobs past their timeout, so the timeout is
		// the rescue delay; it does not bound the run (the kernel does,
		// with Spec.TimeoutMillis): attempts ignore River's job context.
		JobTimeout:           o.RescueAfter,
		RescueStuckJobsAfter: o.RescueAfter,
		FetchPollInterval:    o.PollInterval,
		RetryPolicy:          retryPolicy{},
	}
	if o.PollInterval > 0 && o.PollInterval < river.FetchCooldownDefault {
		cfg.FetchCooldown = o.PollInterval
	}
	client, err := river.NewClient(riverpgxv5.New(f.pool), cfg)
	if err != nil {
		m.depth.Unregister()
		return nil, fmt.Errorf("fleet: %w", err)
	}
	w.client = client
	return w, nil
}

// ID returns the worker's identity as run records show it.
func (w *Worker) ID() string { return w.id }

// Stats returns what the worker did so far.
func (w *Worker) Stats() Stats {
	s := &w.stats
	return Stats{Started: s.started.Load(), Completed: s.completed.Load(), Failed: s.failed.Load(), Cancelled: s.cancelled.Load(),
		Released: s.released.Load(), Adopted: s.adopted.Load(), Snoozed: s.snoozed.Load()}
}

// Run works jobs until ctx ends, then stops gracefully: it takes no new
// jobs, waits up to the shutdown timeout for running attempts, then
// cancels them and hands their runs back for another worker. It returns
// nil after a graceful stop.
func (w *Worker) Run(ctx context.Context) error {
	if err := w.client.Start(context.WithoutCancel(ctx)); err != nil {
		return fmt.Errorf("fleet: starting worker: %w", err)
	}
	w.log.Info("worker started", "queues", queueNames(w.o.Providers), "concurrency", w.o.Concurrency, "lease", w.o.LeaseTTL.String())
	<-ctx.Done()
	w.stopping.Store(true)
	w.stopOnce.Do(func() { close(w.stop) })
	defer w.hardCancel()
	defer w.metrics.depth.Unregister()
	w.log.Info("worker stopping", "shutdown_timeout", w.o.ShutdownTimeout.String())
	soft, cancel := context.WithTimeout(context.Background(), w.o.ShutdownTimeout)
	defer cancel()
	err := w.client.Stop(soft)
	if err == nil {
		w.log.Info("worker stopped")
		return nil
	}
	// Attempts still running are cancelled; they hand their runs back.
	w.hardCancel()
	hard, cancelHard := context.WithTimeout(context.Background(), w.o.LeaseTTL+kernel.DefaultCleanupTimeout)
	defer cancelHard()
	if err := w.client.StopAndCancel(hard); err != nil {
		return fmt.Errorf("fleet: stopping worker: %w", err)
	}
	w.log.Info("worker stopped after cancelling its running attempts")
	return nil
}

func queueNames(p map[string]contract.Provider) []string {
	var out []string
	for name := range p {
		out = append(out, name)
	}
	return out
}

func workerID() string {
	host, err := os.Hostname()
	if err != nil {
		host = "unknown-host"
	}
	return fmt.Sprintf("%s/%d/%s", host, os.Getpid(), strings.TrimPrefix(kernel.NewID("w"), "w-")[:8])
}

// jobWorker is the River worker of RunArgs jobs.
type jobWorker struct {
	river.WorkerDefaults[RunArgs]
	w *Worker
}

// Work implements river.Worker.
func (j *jobWorker) Work(ctx context.Context, job *river.Job[RunArgs]) error {
	if job.JobRow != nil {
		// A provider whose server was just found down is not tried again
		// before its backoff ends.
		if g := j.w.down[job.Queue]; g != nil && !g.wait(ctx, j.w.stop) {
			return river.JobSnooze(0)
		}
	}
	err := j.w.execute(ctx, job.Args.RunID, job.Args.SpecDigest)
	if busy, ok := errors.AsType[*busyError](err); ok {
		j.w.stats.snoozed.Add(1)
		wait := max(time.Until(busy.until), 0) + 100*time.Millisecond
		j.w.log.Debug("run held by another worker; snoozing", "run", job.Args.RunID, "holder", busy.owner, "for", wait.String())
		return river.JobSnooze(wait)
	}
	if later, ok := errors.AsType[*retryLater](err); ok {
		return river.JobSnooze(later.after)
	}
	if errors.Is(err, errHandBack) {
		return river.JobSnooze(0)
	}
	if errors.Is(err, store.ErrNotFound) || errors.Is(err, ErrNotFleetRun) || errors.Is(err, ErrInvalid) {
		// Nothing to retry: the job names no runnable fleet run.
		j.w.log.Error("discarding job", "run", job.Args.RunID, "err", err)
		return river.JobCancel(err)
	}
	return err
}

// busyError: the fleet run is leased to a live worker until until.
type busyError struct {
	owner string
	until time.Time
}

func (e *busyError) Error() string {
	return fmt.Sprintf("run held by %s until %s", e.owner, e.until.UTC().Format(time.RFC3339Nano))
}

// errHandBack: the run was handed back (the worker is stopping, or lost
// its attempt's lease); the job should be worked again at once.
var errHandBack = errors.New("fleet: run handed back")

// maxClaimTries bounds the compare-and-sets one delivery of a job tries
// before it snoozes the job.
const maxClaimTries = 10

// retryLater: the job should be worked again after a while (the run was
// handed back because its provider's server was unreachable, or it
// changed under every claim).
type retryLater struct{ after time.Duration }

func (e *retryLater) Error() string {
	return "fleet: try the run's job again after " + e.after.String()
}

func (e *retryLater) Unwrap() error { return errHandBack }

// errChanged: the fleet run changed between the read and the claim.
var errChanged = errors.New("fleet: run changed while claiming")

// claim is the outcome of claiming a fleet run.
type claim struct {
	done    bool // the run needs nothing more
	fence   store.Fence
	attempt Attempt
	spec    Spec
	// resume is a dead worker's live environment to re-attach to, with
	// its dead attempt's proof of creation.
	resume *kernel.Reattach
	// traceParent is the run's recorded traceparent (docTrace), "" when
	// none.
	traceParent string
}

// execute claims the fleet run and runs one attempt of it.
func (w *Worker) execute(ctx context.Context, runID, jobDigest string) error {
	var c claim
	var err error
	for range maxClaimTries {
		c, err = w.claim(ctx, runID, jobDigest)
		if !errors.Is(err, errChanged) {
			break
		}
	}
	if errors.Is(err, errChanged) {
		// Lost every compare-and-set to writers of the run: not a
		// failure of the job (an error would leave it retryable, waiting
		// out River's retry backoff), only a busy run. Look again soon.
		after := backoff(1, w.o.Backoff, w.o.MaxBackoff)
		w.log.Debug("the run changed under every claim; snoozing", "run", runID, "tries", maxClaimTries, "for", after.String())
		return &retryLater{after: after}
	}
	if err != nil || c.done {
		return err
	}
	return w.runAttempt(c)
}

// claim takes the fleet run for this worker, when it may: a pending run,
// or a running one whose lease lapsed (its worker died). See the package
// documentation for the rules. jobDigest is the spec digest the job
// names ("" when the caller has no job): a run whose recorded spec does
// not digest to what was recorded at submission, or to what the job
// names, was altered after it was admitted and ends failed without
// running (never a run of a spec nobody submitted).
func (w *Worker) claim(ctx context.Context, runID, jobDigest string) (claim, error) {
	s := w.f.store
	r, err := s.GetRun(ctx, runID)
	if err != nil {
		return claim{}, fmt.Errorf("fleet: claiming %s: %w", runID, err)
	}
	if r.Kind != Kind {
		return claim{}, fmt.Errorf("fleet: claiming %s: %w", runID, ErrNotFleetRun)
	}
	if w.afterRead != nil {
		w.afterRead(runID)
	}
	claimed := claimUntilOf(r.Doc)
	switch {
	case r.Status.Terminal():
		w.log.Info("run already ended", "run", runID, "status", string(r.Status))
		return claim{done: true}, nil
	case r.Status == store.StatusRunning && !w.f.now().After(claimed):
		return claim{}, &busyError{owner: r.Owner, until: claimed}
	}
	attempts, err := attemptsOf(r)
	if err != nil {
		return claim{}, err
	}
	_, cancelAsked := r.Doc.Get(docCancel)
	var spec Spec
	if v, ok := r.Doc.Get(docSpec); ok {
		if err := canonjson.FromValue(v, &spec); err != nil {
			return claim{}, fmt.Errorf("fleet: run %s: %w: spec: %w", runID, ErrInvalid, err)
		}
	}
	altered := specAltered(spec, r.Doc, jobDigest)
	// A dead worker's attempt: adopt it if it ended, wait if it is still
	// live (its worker is alive but lost the fleet run's lease), resume
	// its environment if that outlived it.
	var adopt *kernel.RunRecord
	// settled is the outcome of an earlier attempt whose turn's end its
	// events record though its own end went unrecorded: adopted, never
	// run again.
	var settled *Outcome
	var resume *kernel.Reattach
	var resumeNote string
	// prior is how the dead worker's attempt ended, recorded on it when
	// this worker takes the run over ("" leaves it as it is).
	var prior, priorNote string
	if r.Status == store.StatusRunning && len(attempts) > 0 {
		last := attempts[len(attempts)-1]
		rec, err := kernel.ReadRun(ctx, s, last.RunID)
		switch {
		case errors.Is(err, store.ErrNotFound):
			// The attempt never started. Record it interrupted, so that its
			// worker, if only slow, cannot start it now: the kernel
			// creates its run under that id and would find it taken.
			_, err := s.CreateRun(ctx, store.Run{ID: last.RunID, Kind: "execute", Status: store.StatusInterrupted, Owner: last.Worker})
			if errors.Is(err, store.ErrExists) {
				return claim{}, errChanged
			}
			if err != nil {
				return claim{}, fmt.Errorf("fleet: closing attempt %s: %w", last.RunID, err)
			}
			prior, priorNote = string(store.StatusInterrupted), "never started: its worker lost the run before it began"
		case err != nil:
			return claim{}, fmt.Errorf("fleet: reading attempt %s: %w", last.RunID, err)
		case !rec.Run.Status.Terminal():
			return claim{}, &busyError{owner: rec.Run.Owner, until: rec.Run.LeaseUntil}
		case rec.Run.Status == store.StatusInterrupted:
			if resume, resumeNote, settled, err = w.interrupted(ctx, spec, rec); err != nil {
				return claim{}, err
			}
			prior, priorNote = string(store.StatusInterrupted), "its worker lost the run mid-attempt"
		case rec.Run.Status == store.StatusCancelled && !cancelAsked:
			// Cancelled by its worker's shutdown, which died before
			// handing the run back: run it again.
			prior, priorNote = string(store.StatusCancelled), "cancelled by its worker's shutdown, which died before handing the run back"
		default:
			adopt = rec
		}
	} else if n := len(attempts); n > 0 && r.Status == store.StatusPending && attempts[n-1].Status == "released" {
		// A handed-back attempt that lost its kernel run's lease left its
		// environment alive to the run's next holder, this claim (kernel
		// rule: no effects after a lost lease); one whose end its kernel
		// run could not record (its store stopped answering past its
		// lease) may have finished its turn all the same. Either is
		// settled as a dead worker's interrupted attempt is.
		last := attempts[n-1]
		rec, err := kernel.ReadRun(ctx, s, last.RunID)
		switch {
		case errors.Is(err, store.ErrNotFound):
		case err != nil:
			return claim{}, fmt.Errorf("fleet: reading attempt %s: %w", last.RunID, err)
		case !rec.Run.Status.Terminal():
			// Its lease has not lapsed yet: its end may still land.
			return claim{}, &busyError{owner: rec.Run.Owner, until: rec.Run.LeaseUntil}
		case rec.Run.Status == store.StatusInterrupted:
			if resume, resumeNote, settled, err = w.interrupted(ctx, spec, rec); err != nil {
				return claim{}, err
			}
		}
	}
	now := w.f.now()
	var out claim
	_, err = s.UpdateRun(ctx, runID, func(cur *store.Run) error {
		if cur.Revision != r.Revision {
			return errChanged
		}
		out = claim{spec: spec, resume: resume, traceParent: traceParentOf(cur.Doc)}
		list := append([]Attempt(nil), attempts...)
		switch {
		case altered != "" && adopt == nil && settled == nil:
			out.done = true
			cur.Status, cur.Doc = store.StatusFailed, cur.Doc.Without(docClaim)
			oc := Outcome{Status: string(store.StatusFailed), Error: "the run's spec was altered after submission (" + altered + "); nothing ran: submit it anew"}
			return setOutcome(cur, list, oc)
		case adopt != nil:
			out.done = true
			last := &list[len(list)-1]
			last.Status, last.Note = string(adopt.Run.Status), "adopted by "+w.id+": its worker died after the attempt ended"
			cur.Status, cur.Doc = adopt.Run.Status, cur.Doc.Without(docClaim)
			return setOutcome(cur, list, outcomeOf(adopt))
		case settled != nil:
			out.done = true
			last := &list[len(list)-1]
			last.Status = settled.Status
			last.Note = joinNotes(last.Note, "adopted by "+w.id+": its turn's end is in its recorded events, though its own end went unrecorded; not run again")
			cur.Status, cur.Owner, cur.Doc = store.Status(settled.Status), "", cur.Doc.Without(docClaim)
			return setOutcome(cur, list, *settled)
		case cancelAsked:
			out.done = true
			cur.Status, cur.Doc = store.StatusCancelled, cur.Doc.Without(docClaim)
			oc := Outcome{Status: string(store.StatusCancelled), Error: "cancel requested before this worker started an attempt"}
			return setOutcome(cur, list, oc)
		}
		if len(list) > 0 {
			cur.Generation++
			if last := &list[len(list)-1]; prior != "" && last.Status == "" {
				last.Status, last.Note = prior, joinNotes(last.Note, priorNote+"; taken over by "+w.id)
			}
		}
		cur.Status, cur.Owner = store.StatusRunning, w.id
		cur.Doc = withClaim(cur.Doc, now.Add(w.o.LeaseTTL))
		out.attempt = Attempt{Generation: cur.Generation, RunID: attemptID(runID, cur.Generation), Worker: w.id, StartedAt: now.UTC().Format(time.RFC3339Nano), Note: resumeNote}
		out.fence = store.Fence{RunID: runID, Generation: cur.Generation}
		doc, err := withAttempts(cur.Doc, append(list, out.attempt))
		cur.Doc = doc
		return err
	})
	if errors.Is(err, errChanged) || errors.Is(err, store.ErrConflict) {
		return claim{}, errChanged
	}
	if err != nil {
		return claim{}, fmt.Errorf("fleet: claiming %s: %w", runID, err)
	}
	switch {
	case adopt != nil:
		w.stats.adopted.Add(1)
		w.metrics.count("adopted", spec.Provider)
		w.log.Info("adopted a dead worker's finished attempt", "run", runID, "attempt", adopt.Run.ID, "status", string(adopt.Run.Status))
	case settled != nil:
		w.stats.adopted.Add(1)
		w.metrics.count("adopted", spec.Provider)
		w.log.Info("adopted an attempt whose turn ended though its end went unrecorded", "run", runID, "attempt", settled.RunID, "status", settled.Status)
	case out.done && altered != "":
		w.metrics.count(string(store.StatusFailed), spec.Provider)
		w.log.Error("run refused: its spec was altered after submission", "run", runID, "why", altered)
	case out.done:
		w.stats.cancelled.Add(1)
		w.metrics.count(string(store.StatusCancelled), spec.Provider)
		w.log.Info("run cancelled before it started", "run", runID)
	default:
		w.log.Info("run claimed", "run", runID, "generation", out.fence.Generation, "attempt", out.attempt.RunID, "took_over", len(attempts) > 0, "resumed", resumeNote)
	}
	return out, nil
}

// specAltered says how the spec recorded in doc differs from what was
// admitted: it does not check, it does not digest to the digest recorded
// at submission, or that digest is not jobDigest (when given); "" when
// it is the admitted spec.
func specAltered(spec Spec, doc canonjson.Value, jobDigest string) string {
	recorded := ""
	if v, ok := doc.Get(docSpecDigest); ok {
		recorded = v.Str()
	}
	_, digest, err := spec.check()
	switch {
	case err != nil:
		return "it does not check: " + err.Error()
	case digest != recorded:
		return fmt.Sprintf("it digests to %s, the submission recorded %s", digest, recorded)
	case jobDigest != "" && jobDigest != recorded:
		return fmt.Sprintf("the job names spec %s, the run records %s", jobDigest, recorded)
	}
	return ""
}

// interrupted settles what an earlier attempt whose kernel run reads
// interrupted left behind — its worker died, or lost the attempt's
// lease and handed the run back — before the run runs again. An
// environment still alive (findLiveEnvironment) is re-attached to: its
// turn, replayed, is settled there (and the environment destroyed when
// the runtime created it) rather than run again, and the environment is
// never left to leak. Gone, or on a provider that cannot find it, the
// turn's end may still be on record (settledTurn). Neither: the run is
// run again (all results nil).
func (w *Worker) interrupted(ctx context.Context, spec Spec, rec *kernel.RunRecord) (*kernel.Reattach, string, *Outcome, error) {
	found, note, err := w.findLiveEnvironment(ctx, spec.Provider, rec)
	if err != nil || found != nil {
		return found, note, nil, err
	}
	settled, err := w.settledTurn(ctx, rec.Run.ID, spec)
	return nil, "", settled, err
}

// findLiveEnvironment looks for the environment a dead worker's attempt
// created, on a provider whose environments outlive their worker
// (contract.EnvironmentGetter). It returns the environment when it is
// still alive, with the attempt's proof that the runtime created it
// (ENV-06), so that the attempt that finishes the run destroys it (the
// attempt is resumed there: its turn, named after the fleet run, is
// re-attached to, not run again; kernel.Reattach says when the turn is
// run again after all), nil when the attempt
// created none or it is gone (its turn ended with it; the run is run
// again), and a *retryLater when the provider cannot tell now (its
// server is unreachable): the work is in doubt, so it is neither resumed
// nor run again until the provider answers.
func (w *Worker) findLiveEnvironment(ctx context.Context, provider string, rec *kernel.RunRecord) (*kernel.Reattach, string, error) {
	if rec.Exact == nil || rec.Exact.EnvironmentID == "" {
		return nil, "", nil
	}
	getter, ok := w.o.Providers[provider].(contract.EnvironmentGetter)
	if !ok {
		return nil, "", nil
	}
	id := string(rec.Exact.EnvironmentID)
	env, err := getter.Get(ctx, id)
	if err != nil {
		after := backoff(1, w.o.Backoff, w.o.MaxBackoff)
		w.log.Warn("cannot tell whether a dead worker's environment is alive; trying again later", "attempt", rec.Run.ID, "environment", id, "retry_after", after.String(), "err", err)
		return nil, "", &retryLater{after: after}
	}
	if env == nil {
		return nil, "", nil
	}
	return &kernel.Reattach{Environment: env, Created: rec.Exact.EnvironmentCreated}, "resumed environment " + id + " of attempt " + rec.Run.ID, nil
}

// settledTurn reads the recorded events of an earlier attempt whose
// kernel run reads interrupted (kernel.ReadRecordedTurn): when they hold
// its turn's end — completed or failed — the turn is over though the run
// never recorded its own end (its store stopped answering, or its worker
// died, in between), and the outcome returned settles the fleet run from
// it: the turn is never run again, nor paid for twice. The completion
// check the attempt ran went unrecorded with its end; the fleet's check
// reads only the turn's text, so judging the recorded text again gives
// its verdict. Nil when the events do not hold the turn's end.
func (w *Worker) settledTurn(ctx context.Context, attempt string, spec Spec) (*Outcome, error) {
	turn, err := kernel.ReadRecordedTurn(ctx, w.f.store, attempt)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("fleet: reading attempt %s: %w", attempt, err)
	}
	if !turn.Ended() {
		return nil, nil
	}
	oc := &Outcome{Status: string(turn.Status), RunID: attempt, Text: turn.Text, Error: turn.Detail}
	check, judge := spec.completionCheck()
	oc.JudgedBy = judge
	if turn.Status == store.StatusCompleted && check != nil {
		v, err := check(ctx, kernel.Outcome{RunID: attempt, Text: turn.Text, Output: turn.Output})
		if err != nil {
			return nil, err
		}
		oc.Delivered = v.Passed
	}
	return oc, nil
}

func setOutcome(r *store.Run, attempts []Attempt, oc Outcome) error {
	v, err := canonjson.ToValue(oc)
	if err != nil {
		return err
	}
	doc, err := withAttempts(r.Doc, attempts)
	if err != nil {
		return err
	}
	r.Doc = doc.With(docOutcome, v)
	return nil
}

func outcomeOf(rec *kernel.RunRecord) Outcome {
	oc := Outcome{Status: string(rec.Run.Status), RunID: rec.Run.ID}
	if x := rec.Exact; x != nil {
		if x.Delivered != nil {
			oc.Delivered = *x.Delivered
		}
		oc.JudgedBy = x.JudgedBy
		if x.Text != nil {
			oc.Text = *x.Text
		}
		if x.Terminal != nil {
			oc.Error = x.Terminal.Detail
		}
	}
	return oc
}

// runAttempt executes the claimed attempt through the kernel while a
// heartbeat keeps the fleet run's lease, then records how it ended.
func (w *Worker) runAttempt(c claim) error {
	w.stats.started.Add(1)
	w.metrics.count("started", c.spec.Provider)
	p, err := profile.FromValue(c.spec.Profile)
	if err != nil {
		return w.end(c, nil, fmt.Errorf("%w: profile: %w", ErrInvalid, err))
	}
	provider := w.o.Providers[c.spec.Provider]
	if provider == nil {
		return w.end(c, nil, fmt.Errorf("%w: this worker has no provider %q", ErrInvalid, c.spec.Provider))
	}
	_, findable := provider.(contract.EnvironmentGetter)
	var track *tracking
	if findable {
		// Its environments outlive this worker: name the turn after the
		// fleet run, so that a successor can re-attach to it.
		provider = &pinned{Provider: provider, turn: turnID(c.fence.RunID)}
	} else {
		// Nobody else can find its environments: what the attempt leaves
		// behind is this worker's to destroy.
		track = &tracking{Provider: provider}
		provider = track
	}
	var reattach *kernel.Reattach
	if c.resume != nil {
		// The dead attempt's environment, whose turn carries the same
		// name: the kernel re-attaches to it.
		reattach = &kernel.Reattach{Environment: pin(c.resume.Environment, turnID(c.fence.RunID), true), Created: c.resume.Created}
	}
	// Not River's ctx: it ends at River's job timeout (see NewWorker).
	runCtx, cancel := context.WithCancelCause(w.hard)
	defer cancel(nil)
	if c.spec.TimeoutMillis > 0 {
		var stop context.CancelFunc
		runCtx, stop = context.WithTimeout(runCtx, time.Duration(c.spec.TimeoutMillis)*time.Millisecond)
		defer stop()
	}
	// The attempt continues the submitter's trace, when it gave one: the
	// observer sees the submitter's span as the context's remote parent,
	// and an untraced worker still carries it on to the provider
	// (TRACEPARENT, traceparent). A record edited into nonsense only loses
	// the parent.
	if traced, err := withTraceParent(runCtx, c.traceParent); err != nil {
		w.log.Warn("the run's recorded trace context is unusable; the attempt runs without it", "run", c.fence.RunID, "err", err)
	} else {
		runCtx = traced
	}
	var observer kernel.Observer
	if w.o.Observe != nil {
		observer = w.o.Observe(c.fence.RunID)
	}
	var st store.Store = timedStore{Store: w.f.store, hist: w.metrics.append}
	if w.kernelStore != nil {
		st = w.kernelStore(st)
	}
	hb := w.startHeartbeat(c, cancel)
	check, judge := c.spec.completionCheck()
	res, runErr := kernel.Execute(runCtx, kernel.Request{
		Profile: p, Task: c.spec.Task, Provider: provider, Store: st,
		Check: check, JudgedBy: judge, Stage: c.spec.Stage, RunID: c.attempt.RunID,
		LeaseTTL: w.o.LeaseTTL, Logger: w.log, Observer: observer, Reattach: reattach,
		// An environment found by id can be settled later (Fleet.Recover):
		// one whose turn is in doubt is kept for that, not destroyed.
		KeepInDoubt: findable,
	})
	lost := hb.stop()
	if track != nil {
		w.destroyLeftBehind(c, track)
	}
	if lost != nil {
		// Another worker may have taken the run over; whatever it is, this
		// worker records nothing more, and the job is looked at again.
		w.log.Warn("lost the fleet run's lease during the attempt", "run", c.fence.RunID, "attempt", c.attempt.RunID, "err", lost)
		return errHandBack
	}
	if res == nil {
		return w.end(c, nil, runErr)
	}
	return w.end(c, res, runErr)
}

// destroyLeftBehind destroys the environments an attempt on a provider
// whose environments cannot be found by id created and its kernel run
// left alive: it lost its lease, and then destroys nothing, leaving them
// to a next holder that could never find them (see tracking).
func (w *Worker) destroyLeftBehind(c claim, track *tracking) {
	for _, env := range track.leftBehind() {
		ctx, cancel := context.WithTimeout(context.Background(), kernel.DefaultCleanupTimeout)
		err := env.Destroy(ctx)
		cancel()
		if err != nil {
			w.log.Warn("destroying an environment the attempt left behind (its provider cannot find it again): it may still exist", "run", c.fence.RunID, "attempt", c.attempt.RunID, "environment", env.ID(), "err", err)
			continue
		}
		w.log.Info("destroyed an environment the attempt left behind: its kernel run lost its lease, and nobody else can find it", "run", c.fence.RunID, "attempt", c.attempt.RunID, "environment", env.ID())
	}
}

// end records how the attempt ended in the fleet run, fenced: the fleet
// run ends in the attempt's terminal status, or is handed back when the
// worker is stopping, the attempt lost its own lease, or it never began
// for a reason that may pass.
func (w *Worker) end(c claim, res *kernel.Result, runErr error) error {
	ctx, cancel := context.WithTimeout(context.Background(), kernel.DefaultCleanupTimeout)
	defer cancel()
	var status store.Status
	var oc Outcome
	var note string
	// doubt, when set, records the environment kept in doubt.
	var doubt *InDoubt
	handBack := false
	switch {
	case res == nil && (errors.Is(runErr, ErrInvalid) || errors.Is(runErr, kernel.ErrInvalidOptions)):
		status, oc = store.StatusFailed, Outcome{Status: string(store.StatusFailed), RunID: c.attempt.RunID, Error: runErr.Error()}
	case res == nil:
		handBack = true
	case res.Status == store.StatusInterrupted:
		handBack = true
	case res.Status == store.StatusCancelled && w.hard.Err() != nil:
		// Cancelled by this worker's shutdown, not by a request.
		handBack = true
	case unreachable(res, runErr):
		// The provider's server refused the connection, or this worker's
		// credentials, before any environment existed: nothing ran, so
		// the run may run again.
		handBack = true
	case inDoubt(res):
		// The environment's stream was lost: its turn may have gone on (or
		// died with its server). Work in doubt is never run again.
		status = store.StatusInterrupted
		oc = Outcome{Status: string(status), RunID: c.attempt.RunID, Text: res.Text,
			Error: "the attempt's environment " + res.EnvironmentID + " is in doubt (" + res.Detail + "); the run is not run again"}
		note = "environment in doubt"
		if res.EnvironmentKept {
			oc.Error += "; the environment is kept: `agentrt fleet recover " + c.fence.RunID + "` settles it"
			doubt = &InDoubt{Attempt: c.attempt.RunID, EnvironmentID: res.EnvironmentID}
		}
	default:
		status = res.Status
		oc = Outcome{Status: string(res.Status), RunID: c.attempt.RunID, Delivered: res.Delivered, Text: res.Text, JudgedBy: c.spec.JudgedBy}
		if runErr != nil {
			oc.Error = runErr.Error()
		}
	}
	if c.resume != nil && res != nil && res.EnvironmentID != c.resume.Environment.ID() {
		// The kernel left the resumed environment: its turn had ended
		// with the dead attempt (cancelled, or its environment gone), so
		// the turn ran again.
		again := "the resumed turn had ended with its holder; run again"
		if res.EnvironmentID != "" {
			again += " in environment " + res.EnvironmentID
		}
		note = joinNotes(again, note)
	}
	refused := res != nil && unreachable(res, runErr)
	if g := w.down[c.spec.Provider]; g != nil && refused {
		g.fail(w.o.Backoff, w.o.MaxBackoff)
	} else if g != nil && res != nil && res.EnvironmentID != "" {
		g.ok()
	}
	// refusals counts the run's attempts in a row, this one included,
	// that found the server unreachable: its job's backoff.
	refusals := 0
	_, err := w.f.store.UpdateFenced(ctx, c.fence, func(r *store.Run) error {
		attempts, err := attemptsOf(*r)
		if err != nil {
			return err
		}
		refusals = 0
		if refused {
			for i := len(attempts) - 2; i >= 0 && attempts[i].Status == "released" && strings.Contains(attempts[i].Note, unreachableNote); i-- {
				refusals++
			}
			refusals++
		}
		if n := len(attempts); n > 0 && attempts[n-1].RunID == c.attempt.RunID {
			last := &attempts[n-1]
			if handBack {
				last.Status, last.Note = "released", joinNotes(last.Note, joinNotes(note, handBackNote(res, runErr, w.hard.Err() != nil)))
			} else {
				last.Status, last.Note = string(res.Status), joinNotes(last.Note, note)
				if res == nil {
					last.Status = string(status)
				}
			}
		}
		if handBack {
			r.Status, r.Owner = store.StatusPending, ""
			r.Doc, err = withAttempts(r.Doc.Without(docClaim), attempts)
			return err
		}
		r.Status, r.Doc = status, r.Doc.Without(docClaim)
		if doubt != nil {
			v, err := canonjson.ToValue(doubt)
			if err != nil {
				return err
			}
			r.Doc = r.Doc.With(docInDoubt, v)
		}
		return setOutcome(r, attempts, oc)
	})
	if errors.Is(err, store.ErrFenced) {
		// Another worker took the run over. The job is looked at again
		// rather than completed: a job completes only once its run ended,
		// so a run is never left without a job.
		w.log.Warn("the fleet run moved on before this worker recorded its attempt", "run", c.fence.RunID, "err", err)
		return errHandBack
	}
	if err != nil {
		// The lease lapses on its own and another worker takes over.
		return fmt.Errorf("fleet: recording attempt %s: %w", c.attempt.RunID, err)
	}
	if handBack {
		w.stats.released.Add(1)
		w.metrics.count("released", c.spec.Provider)
		if refusals > 0 {
			after := backoff(refusals, w.o.Backoff, w.o.MaxBackoff)
			msg := "run handed back: the provider's server is unreachable"
			if status := accessRefused(runErr); status != 0 {
				msg = fmt.Sprintf("run handed back: the provider's server refused this worker's credentials (HTTP %d): give the worker the token the server reads", status)
			}
			w.log.Warn(msg, "run", c.fence.RunID, "attempt", c.attempt.RunID,
				"refusals_in_a_row", refusals, "retry_after", after.String(), "err", runErr)
			return &retryLater{after: after}
		}
		w.log.Info("run handed back", "run", c.fence.RunID, "attempt", c.attempt.RunID, "why", handBackNote(res, runErr, w.hard.Err() != nil))
		return errHandBack
	}
	w.metrics.count(string(status), c.spec.Provider)
	switch status {
	case store.StatusCompleted:
		w.stats.completed.Add(1)
	case store.StatusCancelled:
		w.stats.cancelled.Add(1)
	default:
		w.stats.failed.Add(1)
	}
	w.log.Info("run ended", "run", c.fence.RunID, "attempt", c.attempt.RunID, "status", string(status), "delivered", oc.Delivered)
	return nil
}

// inDoubt reports whether an attempt failed with its environment's
// state unknown: the environment was created, then the provider's
// transport broke off (a remote server died or became unreachable), or
// its stream ended without a terminal event, before the turn's end was
// seen.
func inDoubt(res *kernel.Result) bool {
	return res.Status == store.StatusFailed && (res.Reason == kernel.ReasonTransport || res.Reason == kernel.ReasonNoTerminal) && res.EnvironmentID != ""
}

// unreachable reports whether an attempt failed because its provider's
// server refused it before any environment was created: it refused the
// connection, or this worker's credentials (401 or 403: a worker given
// the wrong token). Nothing ran, and the run is no worse a run for it:
// it is handed back (to this worker once the gate opens, or to a worker
// the server accepts), never failed.
func unreachable(res *kernel.Result, runErr error) bool {
	return res.Status == store.StatusFailed && res.EnvironmentID == "" && res.Reason == kernel.ReasonProvider &&
		(errors.Is(runErr, syscall.ECONNREFUSED) || accessRefused(runErr) != 0)
}

// joinNotes joins an attempt's notes: what it began as, then how it
// ended.
func joinNotes(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "; " + b
}

// unreachableNote is the note of an attempt handed back because its
// provider's server refused the connection.
const unreachableNote = "the provider's server was unreachable: "

func handBackNote(res *kernel.Result, runErr error, stopping bool) string {
	switch {
	case res != nil && res.Status == store.StatusInterrupted && res.Reason == kernel.ReasonStoreFailed:
		return "the store did not record the attempt's end (" + res.Detail + ")"
	case res != nil && res.Status == store.StatusInterrupted:
		return "the attempt lost its lease"
	case res != nil && unreachable(res, runErr):
		if status := accessRefused(runErr); status != 0 {
			return fmt.Sprintf("%sit refused this worker's credentials (HTTP %d; give the worker the token the server reads): %s", unreachableNote, status, res.Detail)
		}
		return unreachableNote + res.Detail
	case stopping:
		return "the worker stopped"
	case runErr != nil:
		return "the attempt could not start: " + runErr.Error()
	}
	return "handed back"
}

// heartbeat renews a claimed fleet run's lease and forwards a cancel
// request recorded on it to the attempt. When the lease is lost (the
// store refuses the fence, or renewals failed until it lapsed) it
// cancels the attempt.
type heartbeat struct {
	done chan struct{}
	wg   sync.WaitGroup
	lost atomic.Pointer[error]
}

func (w *Worker) startHeartbeat(c claim, cancel context.CancelCauseFunc) *heartbeat {
	h := &heartbeat{done: make(chan struct{})}
	every := min(w.o.LeaseTTL/3, time.Second)
	until := w.f.now().Add(w.o.LeaseTTL)
	forwarded := false
	h.wg.Go(func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-h.done:
				return
			case <-t.C:
			}
			ctx, stop := context.WithTimeout(context.Background(), every)
			next := w.f.now().Add(w.o.LeaseTTL)
			r, err := w.f.store.UpdateFenced(ctx, c.fence, func(r *store.Run) error {
				r.Doc = withClaim(r.Doc, next)
				return nil
			})
			stop()
			// A lost lease cancels the attempt with a *kernel.LeaseLostError
			// cause (contract.ErrLeaseLost): its provider then leaves the
			// turn, which the run's new holder may have re-attached to,
			// alone rather than cancelling it.
			switch {
			case errors.Is(err, store.ErrFenced):
				fe, _ := errors.AsType[*store.FenceError](err)
				h.lose(&kernel.LeaseLostError{RunID: c.fence.RunID, Fence: fe}, cancel)
				return
			case err != nil:
				if w.f.now().After(until) {
					h.lose(fmt.Errorf("fleet: the lease lapsed while renewals failed (%w): %w", err, &kernel.LeaseLostError{RunID: c.fence.RunID}), cancel)
					return
				}
				continue
			}
			until = next
			if req, ok := r.Doc.Get(docCancel); ok && !forwarded {
				forwarded = true
				reason := "cancel requested"
				if v, ok := req.Get("reason"); ok {
					reason = v.Str()
				}
				ctx, stop := context.WithTimeout(context.Background(), every)
				_, _, err := kernel.RequestCancel(ctx, w.f.store, c.attempt.RunID, reason, w.f.now())
				stop()
				if err != nil {
					forwarded = false
				}
			}
		}
	})
	return h
}

// lose cuts the attempt with the loss, then notes it (the kernel's
// order: whoever learns of the loss finds the attempt already cut).
func (h *heartbeat) lose(err error, cancel context.CancelCauseFunc) {
	cancel(err)
	h.lost.Store(&err)
}

// stop ends the heartbeat and returns why the lease was lost, or nil.
func (h *heartbeat) stop() error {
	close(h.done)
	h.wg.Wait()
	if p := h.lost.Load(); p != nil {
		return *p
	}
	return nil
}

// backoff is the wait after n refusals in a row: base doubled per
// refusal up to most, then jittered to between half of it and all of
// it.
func backoff(n int, base, most time.Duration) time.Duration {
	d := base
	for i := 1; i < n && d < most; i++ {
		d *= 2
	}
	d = min(d, most)
	return d/2 + rand.N(d/2+1)
}

// gate paces a worker's attempts on a provider whose server refused the
// last ones.
type gate struct {
	mu    sync.Mutex
	fails int
	until time.Time
}

// fail records a refusal: the next attempt waits its backoff.
func (g *gate) fail(base, most time.Duration) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.fails++
	g.until = time.Now().Add(backoff(g.fails, base, most))
}

// ok records that the server answered: no more waiting.
func (g *gate) ok() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.fails, g.until = 0, time.Time{}
}

// wait waits until the gate opens; it reports false if ctx ended or the
// worker stopped first.
func (g *gate) wait(ctx context.Context, stop <-chan struct{}) bool {
	g.mu.Lock()
	d := time.Until(g.until)
	g.mu.Unlock()
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
	case <-stop:
	}
	return false
}

// MaxRetryBackoff caps how long a run's job waits before it is tried
// again after an attempt returned an error (a store that stopped
// answering, a server that refused the worker) or its worker died.
// River's default waits attempts^4 seconds with no cap — 10 minutes
// after the fifth error, 20 after the sixth — so a run could sit for
// hours after a short database outage or a few worker deaths.
const MaxRetryBackoff = 30 * time.Second

// MaxJobAttempts is how many attempts a run's job gets (River's default
// is 25): with MaxRetryBackoff, days of retrying, so that no outage
// discards the job of a run that is not over.
const MaxJobAttempts = 10_000

// retryPolicy is the fleet's River retry policy: exponential from one
// second, capped at MaxRetryBackoff, with up to 20% jitter so that the
// runs an outage failed together are not retried together.
type retryPolicy struct{}

// NextRetry implements river.ClientRetryPolicy.
func (retryPolicy) NextRetry(job *rivertype.JobRow) time.Time {
	return time.Now().Add(retryBackoff(len(job.Errors), rand.Float64()))
}

// retryBackoff is the wait after errors errors, jitter in [0, 1).
func retryBackoff(errors int, jitter float64) time.Duration {
	d := MaxRetryBackoff
	if errors < 6 { // 2^5 s = 32 s is past the cap
		d = min(MaxRetryBackoff, time.Duration(1<<max(errors-1, 0))*time.Second)
	}
	return d - time.Duration(float64(d)*0.2*jitter)
}
