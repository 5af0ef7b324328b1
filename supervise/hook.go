package supervise

import (
	"context"
	"errors"
)

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
// a buffer nobody reads). An answer that is ready as ctx ends is taken,
// unless it is only ctx's ending: a hook that gave up because its
// context ended (its error is that context's error) has not answered
// either, whichever of the two the wait saw first — so a check that
// honours its deadline and one that ignores it end the same way.
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
	case <-ctx.Done():
		select {
		case a = <-done:
		default:
			return a, false
		}
	}
	return a, !a.gaveUp(ctx)
}

// gaveUp reports whether a is no answer but ctx's ending: ctx has ended
// and the hook's error is its error or its cause.
func (a hookAnswer[T]) gaveUp(ctx context.Context) bool {
	if a.panic != nil || a.err == nil || ctx.Err() == nil {
		return false
	}
	return errors.Is(a.err, ctx.Err()) || errors.Is(a.err, context.Cause(ctx))
}
