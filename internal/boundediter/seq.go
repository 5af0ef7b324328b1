package boundediter

import (
	"context"
	"fmt"
	"iter"
	"sync"
	"time"
)

// PanicError is the error Seq2 yields when the producer panicked: the
// panic ended the producer, not the reader.
type PanicError struct {
	// Value is what the producer panicked with.
	Value any
}

func (e *PanicError) Error() string { return fmt.Sprintf("the producer panicked: %v", e.Value) }

// AbandonedError is the error Seq2 yields when the reader's context
// ended and the producer did not stop within the grace: the reader stops
// waiting for it. Cause is the context's cause.
type AbandonedError struct {
	Grace time.Duration
	Cause error
}

func (e *AbandonedError) Error() string {
	return fmt.Sprintf("the producer did not stop within %s after its context ended (%v)", e.Grace, e.Cause)
}

// Unwrap returns the context's cause, so that errors.Is(err,
// context.DeadlineExceeded) and errors.Is(err, context.Canceled) hold.
func (e *AbandonedError) Unwrap() error { return e.Cause }

type item[V any] struct {
	v   V
	err error
}

// Seq2 yields the items of seq as seq yields them, with three bounds:
//
//   - once ctx has ended, seq has grace to return; if it yields nothing
//     more and does not return in that time, Seq2 yields an
//     *AbandonedError and returns without waiting for it (its goroutine
//     ends whenever seq does: its next yield returns false);
//   - a panic in seq is yielded as a *PanicError, and seq is over;
//   - when the reader stops early, Seq2 waits at most grace for seq to
//     return.
//
// Items seq yields after ctx ended are still handed over, so a producer
// that reports its cancellation is heard. grace must be positive.
func Seq2[V any](ctx context.Context, seq iter.Seq2[V, error], grace time.Duration) iter.Seq2[V, error] {
	return func(yield func(V, error) bool) {
		items := make(chan item[V])
		stop := make(chan struct{})
		done := make(chan struct{})
		go produce(seq, items, stop, done)
		halt := sync.OnceFunc(func() { close(stop) })
		defer halt()
		var timeout <-chan time.Time
		ctxDone := ctx.Done()
		for {
			select {
			case it, ok := <-items:
				if !ok {
					return
				}
				if !yield(it.v, it.err) {
					halt()
					wait(done, grace)
					return
				}
			case <-ctxDone:
				ctxDone = nil
				t := time.NewTimer(grace)
				defer t.Stop()
				timeout = t.C
			case <-timeout:
				var zero V
				yield(zero, &AbandonedError{Grace: grace, Cause: context.Cause(ctx)})
				return
			}
		}
	}
}

// produce ranges over seq, handing each item over until the reader
// stops, and turns a panic into the last item.
func produce[V any](seq iter.Seq2[V, error], items chan<- item[V], stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	defer close(items)
	defer func() {
		if p := recover(); p != nil {
			select {
			case items <- item[V]{err: &PanicError{Value: p}}:
			case <-stop:
			}
		}
	}()
	for v, err := range seq {
		select {
		case items <- item[V]{v: v, err: err}:
		case <-stop:
			return
		}
	}
}

// wait waits for done at most grace.
func wait(done <-chan struct{}, grace time.Duration) {
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
}
