package groupcommit

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentrt/agentrt/store"
)

// Options bounds a Committer. Zero fields take the defaults.
type Options struct {
	// Queue is how many requests may wait for the committer; callers
	// beyond it wait (within their context) for room. Default 1024.
	Queue int
	// MaxBatch caps the requests in one transaction. Default 256.
	MaxBatch int
	// MaxRows caps the rows (Weight) in one transaction; a single request
	// heavier than that still commits, alone. Default 4096.
	MaxRows int
	// Timeout bounds one transaction, from its start to its commit.
	// Default 30 seconds.
	Timeout time.Duration
	// Committers is how many transactions may run at once, each on its
	// own goroutine: more than one lets a database that takes concurrent
	// writers build the next batch while the last one commits. The
	// commit function must then be safe for concurrent use. Default 1.
	Committers int
}

func (o Options) withDefaults() Options {
	if o.Queue <= 0 {
		o.Queue = 1024
	}
	if o.MaxBatch <= 0 {
		o.MaxBatch = 256
	}
	if o.MaxRows <= 0 {
		o.MaxRows = 4096
	}
	if o.Timeout <= 0 {
		o.Timeout = 30 * time.Second
	}
	if o.Committers <= 0 {
		o.Committers = 1
	}
	return o
}

// A request's state: waiting in the queue, taken into a transaction, or
// abandoned by its caller before the committer took it.
const (
	queued int32 = iota
	taken
	abandoned
)

// Request is one caller's request inside a batch. The commit function
// reads In and settles it with Succeed or Fail.
type Request[In, Out any] struct {
	In    In
	rows  int
	out   Out
	err   error
	state atomic.Int32
	done  chan struct{}
	// tx is the transaction that took it, set before its state says
	// taken.
	tx *txn
}

// txn is one transaction's bound: cancelled once every caller whose
// request it carries has given up waiting (its context ended), since
// no one then waits for its outcome — which is unknown to each of
// them either way — and a database that stopped answering must not
// hold the committer (and Close) for the whole Timeout.
type txn struct {
	waiting atomic.Int32
	ctx     context.Context
	cancel  context.CancelFunc
}

// Succeed records the request's result; the caller sees it only if the
// transaction then commits.
func (r *Request[In, Out]) Succeed(out Out) { r.out, r.err = out, nil }

// Fail records why this request alone failed; nothing of it may be
// written.
func (r *Request[In, Out]) Fail(err error) {
	var zero Out
	r.out, r.err = zero, err
}

// Failed reports whether the request was failed (Fail) in this batch.
func (r *Request[In, Out]) Failed() bool { return r.err != nil }

// Commit writes a batch in one transaction and commits it, settling each
// request (Succeed or Fail) on the way. It returns an error when the
// transaction as a whole did not commit; then every request it did not
// fail fails with that error. ctx carries the transaction's bound.
type Commit[In, Out any] func(ctx context.Context, batch []*Request[In, Out]) error

// Committer runs the goroutines (Options.Committers) that commit queued
// requests in batches.
type Committer[In, Out any] struct {
	opts   Options
	commit Commit[In, Out]
	queue  chan *Request[In, Out]
	// closing tells callers waiting for room to give up; mu (held
	// shared while enqueueing) lets Close wait until none is mid-send,
	// after which sealed tells the committer nothing more will come.
	closing chan struct{}
	mu      sync.RWMutex
	closed  bool
	sealed  chan struct{}
	running sync.WaitGroup
	once    sync.Once
}

// New starts a committer. With one committer goroutine (the default),
// commit runs one batch at a time.
func New[In, Out any](opts Options, commit Commit[In, Out]) *Committer[In, Out] {
	opts = opts.withDefaults()
	c := &Committer[In, Out]{
		opts:    opts,
		commit:  commit,
		queue:   make(chan *Request[In, Out], opts.Queue),
		closing: make(chan struct{}),
		sealed:  make(chan struct{}),
	}
	for range opts.Committers {
		c.running.Go(c.loop)
	}
	return c
}

// Do queues in (rows rows of it) and waits for the transaction that
// carries it to commit, returning its result. If ctx ends while the
// request is still queued, Do returns ctx's error and the request is not
// written; if it ends once a transaction has taken the request, Do
// returns at once with store.ErrUnknownOutcome (wrapping ctx's error):
// the caller's bound holds even when the database stops answering, and
// the append may still commit. A transaction every caller of which gave
// up so is cut then (its context cancelled), so neither the committer
// nor Close waits out its Timeout. After Close, Do fails with
// store.ErrClosed.
func (c *Committer[In, Out]) Do(ctx context.Context, in In, rows int) (Out, error) {
	var zero Out
	if err := ctx.Err(); err != nil {
		return zero, err
	}
	r := &Request[In, Out]{In: in, rows: rows, done: make(chan struct{})}
	if err := c.enqueue(ctx, r); err != nil {
		return zero, err
	}
	select {
	case <-r.done:
		return r.out, r.err
	case <-ctx.Done():
		if r.state.CompareAndSwap(queued, abandoned) {
			return zero, ctx.Err()
		}
		// Taken: a transaction carries it. The caller's bound wins over
		// waiting for the outcome, which is then unknown — the append
		// may yet commit. The last caller of the transaction to give up
		// cuts it.
		select {
		case <-r.done:
			return r.out, r.err
		default:
			if r.tx.waiting.Add(-1) == 0 {
				r.tx.cancel()
			}
			return zero, fmt.Errorf("%w: %w", store.ErrUnknownOutcome, ctx.Err())
		}
	}
}

func (c *Committer[In, Out]) enqueue(ctx context.Context, r *Request[In, Out]) error {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.closed {
		return errClosed
	}
	select {
	case c.queue <- r:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-c.closing:
		return errClosed
	}
}

var errClosed = fmt.Errorf("the store is closing: %w", store.ErrClosed)

// Close stops taking requests, commits those already queued, and waits
// for the committer goroutines to end. It is safe to call more than once.
func (c *Committer[In, Out]) Close() {
	c.once.Do(func() {
		close(c.closing)
		c.mu.Lock()
		c.closed = true
		c.mu.Unlock()
		close(c.sealed)
	})
	c.running.Wait()
}

func (c *Committer[In, Out]) loop() {
	batch := make([]*Request[In, Out], 0, c.opts.MaxBatch)
	var carry *Request[In, Out]
	for {
		if carry == nil {
			select {
			case carry = <-c.queue:
			case <-c.sealed:
				// Nothing more can be queued: commit what is left.
				select {
				case carry = <-c.queue:
				default:
					return
				}
			}
		}
		tx := &txn{}
		tx.ctx, tx.cancel = context.WithTimeout(context.Background(), c.opts.Timeout)
		batch, carry = c.fill(tx, batch[:0], carry)
		c.run(tx, batch)
		clear(batch)
	}
}

// fill takes first and then whatever is queued, within the bounds,
// skipping abandoned requests. A request that would overflow MaxRows is
// returned to start the next batch.
func (c *Committer[In, Out]) fill(tx *txn, batch []*Request[In, Out], first *Request[In, Out]) ([]*Request[In, Out], *Request[In, Out]) {
	rows := 0
	add := func(r *Request[In, Out]) bool {
		if len(batch) > 0 && rows+r.rows > c.opts.MaxRows {
			return false
		}
		r.tx = tx
		tx.waiting.Add(1)
		if r.state.CompareAndSwap(queued, taken) {
			batch = append(batch, r)
			rows += r.rows
		} else {
			tx.waiting.Add(-1)
		}
		return true
	}
	add(first)
	for len(batch) < c.opts.MaxBatch {
		select {
		case r := <-c.queue:
			if !add(r) {
				return batch, r
			}
		default:
			return batch, nil
		}
	}
	return batch, nil
}

func (c *Committer[In, Out]) run(tx *txn, batch []*Request[In, Out]) {
	defer tx.cancel()
	if len(batch) == 0 {
		return
	}
	err := c.commit(tx.ctx, batch)
	for _, r := range batch {
		if err != nil && r.err == nil {
			r.Fail(err)
		}
		close(r.done)
	}
}
