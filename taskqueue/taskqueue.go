package taskqueue

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"runtime/debug"
	"slices"
)

// Task is one unit of work with a stable identity.
type Task[T any] struct {
	// ID identifies the task; no two running tasks may share it.
	ID string
	// Run does the work. It receives the context given to Run; the queue
	// never cancels it on its own.
	Run func(ctx context.Context) (T, error)
}

// Settlement is how one task ended: Err is nil when it fulfilled with
// Value, and its error (or a *PanicError) when it was rejected. A task's
// failure is a settlement, never a queue error.
type Settlement[T any] struct {
	ID    string
	Value T
	Err   error
}

// Take returns the next ready task, or ok false when none is ready now.
// active lists the ids of the tasks running, in the order they started.
// Take runs on the iterating goroutine and may block, for example to
// persist an admission checkpoint before the task starts. An error stops
// admission.
type Take[T any] func(ctx context.Context, active []string) (task Task[T], ok bool, err error)

// Options adjusts Run. The zero value admits as many tasks as Take offers.
type Options struct {
	// MaxActive caps the tasks running at once; 0 leaves the cap to Take.
	MaxActive int
}

// ErrDuplicateID is wrapped by the error that ends Run when Take returns a
// task whose ID is already running.
var ErrDuplicateID = errors.New("taskqueue: task id is already running")

// PanicError is the settlement error of a task that panicked.
type PanicError struct {
	Value any
	Stack []byte
}

func (e *PanicError) Error() string { return fmt.Sprintf("taskqueue: task panicked: %v", e.Value) }

// Run admits tasks from take and yields their settlements in completion
// order, each with a nil error. Take is called at the start and after every
// settlement, repeatedly while it returns tasks and a slot is free. The
// iteration ends when take has nothing ready and no task is running.
//
// If take fails, returns a duplicate id, or ctx is done, admission stops,
// the remaining settlements are still yielded, and the iteration ends with
// one final (zero Settlement, error) pair. If the consumer stops the
// iteration, admission stops and Run waits for the started tasks,
// discarding their settlements, before it returns.
func Run[T any](ctx context.Context, take Take[T], opts Options) iter.Seq2[Settlement[T], error] {
	return func(yield func(Settlement[T], error) bool) {
		q := queue[T]{
			ctx:     ctx,
			take:    take,
			max:     opts.MaxActive,
			results: make(chan Settlement[T]),
			abandon: make(chan struct{}),
		}
		defer q.release()
		q.fill()
		for len(q.active) > 0 {
			s := <-q.results
			q.finish(s.ID)
			if !yield(s, nil) {
				q.stopped = true
				q.drain()
				return
			}
			q.fill()
		}
		if q.err != nil {
			var zero Settlement[T]
			yield(zero, q.err)
		}
	}
}

type queue[T any] struct {
	ctx     context.Context
	take    Take[T]
	max     int
	active  []string
	results chan Settlement[T]
	abandon chan struct{}
	stopped bool // admission has ended
	err     error
}

// fill admits tasks while admission is open and a slot is free.
func (q *queue[T]) fill() {
	for !q.stopped && (q.max <= 0 || len(q.active) < q.max) {
		if err := q.ctx.Err(); err != nil {
			q.stop(err)
			return
		}
		task, ok, err := q.take(q.ctx, slices.Clone(q.active))
		if err != nil {
			q.stop(err)
			return
		}
		if !ok {
			return
		}
		if slices.Contains(q.active, task.ID) {
			q.stop(fmt.Errorf("%w: %q", ErrDuplicateID, task.ID))
			return
		}
		if task.Run == nil {
			q.stop(fmt.Errorf("taskqueue: task %q has no Run function", task.ID))
			return
		}
		q.active = append(q.active, task.ID)
		go q.run(task)
	}
}

func (q *queue[T]) stop(err error) {
	q.stopped = true
	q.err = err
}

func (q *queue[T]) run(task Task[T]) {
	s := Settlement[T]{ID: task.ID}
	func() {
		defer func() {
			if v := recover(); v != nil {
				s.Err = &PanicError{Value: v, Stack: debug.Stack()}
			}
		}()
		s.Value, s.Err = task.Run(q.ctx)
	}()
	select {
	case q.results <- s:
	case <-q.abandon:
	}
}

func (q *queue[T]) finish(id string) {
	if i := slices.Index(q.active, id); i >= 0 {
		q.active = slices.Delete(q.active, i, i+1)
	}
}

// drain waits for every started task and discards its settlement.
func (q *queue[T]) drain() {
	for len(q.active) > 0 {
		s := <-q.results
		q.finish(s.ID)
	}
}

// release lets tasks still running finish without a receiver when the
// iteration was abandoned by a panic in the consumer.
func (q *queue[T]) release() { close(q.abandon) }
