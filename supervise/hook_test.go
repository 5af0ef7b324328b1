package supervise

import (
	"context"
	"errors"
	"testing"
	"time"
)

// A hook that honours its context and returns the context's error when
// it ends has not answered, exactly as one that ignores its context: the
// outcome does not depend on which of the hook's return and the
// context's end the wait saw first (it did: a check returning ctx.Err()
// was sometimes "did not answer within" and sometimes failed with
// "context deadline exceeded" — CI, TestGraphDeliverableTimeoutBoundsTheCheck).
func TestCallHookGivingUpAtItsDeadlineIsNoAnswer(t *testing.T) {
	for i := range 300 {
		ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
		a, answered := callHook(ctx, func(ctx context.Context) (int, error) {
			<-ctx.Done()
			return 0, ctx.Err()
		})
		cancel()
		if answered {
			t.Fatalf("run %d: answered %+v, want no answer: the hook only gave up at its deadline", i, a)
		}
	}
}

// What a hook really answered is kept: a value, an error of its own
// (even one returned after its context ended), a panic.
func TestCallHookKeepsRealAnswers(t *testing.T) {
	errOwn := errors.New("the check script failed")
	for _, tc := range []struct {
		name  string
		hook  func(context.Context) (int, error)
		want  int
		err   error
		panic bool
	}{
		{"value", func(context.Context) (int, error) { return 7, nil }, 7, nil, false},
		{"own error", func(context.Context) (int, error) { return 0, errOwn }, 0, errOwn, false},
		{"own error after the deadline", func(ctx context.Context) (int, error) { <-ctx.Done(); return 0, errOwn }, 0, errOwn, false},
		{"value after the deadline", func(ctx context.Context) (int, error) { <-ctx.Done(); return 3, nil }, 3, nil, false},
		{"panic", func(context.Context) (int, error) { panic("boom") }, 0, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
			defer cancel()
			a, answered := callHook(ctx, tc.hook)
			if !answered && (tc.name == "value" || tc.name == "own error" || tc.name == "panic") {
				t.Fatalf("not answered, want the hook's answer")
			}
			if !answered {
				// An answer racing the deadline may be missed; that
				// is the documented abandon, not a wrong answer.
				return
			}
			if a.v != tc.want || !errors.Is(a.err, tc.err) || (a.panic != nil) != tc.panic {
				t.Fatalf("answer %+v, want value %d err %v panic %v", a, tc.want, tc.err, tc.panic)
			}
		})
	}
}
