package supervise

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/agentrt/agentrt/canonjson"
)

// A product tool call's context says its manager's cause when the
// manager ended first, also when the request's end is what the call
// sees first: a harness whose stop ended the manager then ends its turn
// and cancels the in-flight request (coordmcp's
// TestHarnessProductToolCallEndsWithTheManager failed once in CI with
// "context canceled"). Before, the call's context was a child of the
// request's, so the request's cancel reached it at once while the
// manager's came through an AfterFunc goroutine.
func TestWithinScopeSaysTheManagersCauseWhenItEndedFirst(t *testing.T) {
	errManager := errors.New("the manager stopped")
	for i := range 200 {
		scope, stopScope := context.WithCancelCause(context.Background())
		req, cancelReq := context.WithCancel(context.Background())
		got := make(chan error, 1)
		run := withinScope(scope, func(ctx context.Context, _ canonjson.Value) (canonjson.Value, error) {
			stopScope(errManager)
			cancelReq()
			select {
			case <-ctx.Done():
				got <- context.Cause(ctx)
			case <-time.After(10 * time.Second):
				got <- errors.New("the call's context never ended")
			}
			return canonjson.Value{}, nil
		})
		if _, err := run(req, canonjson.Value{}); err != nil {
			t.Fatal(err)
		}
		if cause := <-got; !errors.Is(cause, errManager) {
			t.Fatalf("call %d: the call's context ended with %v, want the manager's cause", i, cause)
		}
	}
	// The request's own end, with the manager live, is the request's.
	scope, stopScope := context.WithCancelCause(context.Background())
	defer stopScope(nil)
	req, cancelReq := context.WithTimeout(context.Background(), time.Hour)
	defer cancelReq()
	run := withinScope(scope, func(ctx context.Context, _ canonjson.Value) (canonjson.Value, error) {
		if d, ok := ctx.Deadline(); !ok || time.Until(d) < 59*time.Minute {
			t.Errorf("the call's deadline is %v (%v), want the request's", d, ok)
		}
		cancelReq()
		<-ctx.Done()
		if cause := context.Cause(ctx); !errors.Is(cause, context.Canceled) {
			t.Errorf("with the manager live, the call ended with %v, want the request's context.Canceled", cause)
		}
		return canonjson.Value{}, nil
	})
	if _, err := run(req, canonjson.Value{}); err != nil {
		t.Fatal(err)
	}
}
