package supervise

import "context"

// hookAnswer is what a caller's hook answered (callHook): its value and
// error, or the value it panicked with.
type hookAnswer[T any] struct {
	v     T
	err   error
	panic any
}

// callHook runs a caller's hook f with ctx in its own goroutine and
// waits for its answer until ctx ends — the one rule for every hook the
// run waits on (the deliverable check, the finalizer, AuthorizeMessage,
// Reprompt.OnUnmet): a panic in f is its answer (hookAnswer.panic), not
// the run's, and a hook that has not answered once ctx ended is no
// longer waited for (answered is false; it returns in its own time into
// a buffer nobody reads). An answer that is ready as ctx ends is taken.
func callHook[T any](ctx context.Context, f func(context.Context) (T, error)) (a hookAnswer[T], answered bool) {
	done := make(chan hookAnswer[T], 1)
	go func() {
		var a hookAnswer[T]
		defer func() {
			if p := recover(); p != nil {
				a = hookAnswer[T]{panic: p}
			}
			done <- a
		}()
		a.v, a.err = f(ctx)
	}()
	select {
	case a = <-done:
		return a, true
	case <-ctx.Done():
		select {
		case a = <-done:
			return a, true
		default:
			return a, false
		}
	}
}
