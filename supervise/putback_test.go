package supervise_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/supervise"
)

// Issue 13, §9 await_event "the next settlement not yet returned":
// through PutBackUnreturned (the MCP path) an await_event's event is the
// caller's only once the call returned it while its context was live. A
// call whose context ends after Await took the event fails with the
// context's cause and puts the event back; while it holds the event a
// concurrent Await waits for it rather than answering idle (nothing is
// live any more), and then returns it — once.
func TestPutBackUnreturnedEvent(t *testing.T) {
	o := baseOptions(t, &supervise.KernelExecutor{Provider: workerProvider(t), Store: newStore(t)}, nil)
	var (
		cutErr, concurrentErr error
		concurrent, after     supervise.AwaitResult
		answeredEarly         bool
	)
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		tool(t, ctx, c, supervise.VerbSpawnWorker, spawnArgs("write alpha"))
		all, err := c.Tools()
		if err != nil {
			return supervise.BrainReport{}, err
		}
		var await contract.Tool
		for _, tl := range all {
			if tl.Name == supervise.ToolPrefix+supervise.VerbAwaitEvent {
				await = tl
			}
		}
		took := make(chan struct{})
		inner := await.Run
		await.Run = func(ctx context.Context, args canonjson.Value) (canonjson.Value, error) {
			v, err := inner(ctx, args)
			if _, ok := v.Get("event"); ok {
				close(took)
				<-ctx.Done() // the caller goes away before the result is returned
			}
			return v, err
		}
		held := c.PutBackUnreturned(await)
		callCtx, cut := context.WithCancel(ctx)
		defer cut()
		done := make(chan struct{})
		go func() {
			defer close(done)
			_, cutErr = held.Run(callCtx, canonjson.ObjectValue(nil).With("timeoutMs", canonjson.NumberValue(60_000)))
		}()
		<-took
		answered := make(chan struct{})
		go func() {
			defer close(answered)
			concurrent, concurrentErr = c.Await(ctx, supervise.AwaitArgs{TimeoutMS: 60_000})
		}()
		// Without the hold the concurrent Await answers idle at once;
		// with it, it waits for the cut call.
		select {
		case <-answered:
			answeredEarly = true
		case <-time.After(300 * time.Millisecond):
		}
		cut()
		<-done
		<-answered
		after, _ = c.Await(ctx, supervise.AwaitArgs{TimeoutMS: 1})
		return supervise.BrainReport{}, nil
	})
	if _, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker, supervise.VerbAwaitEvent), "t", o); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(cutErr, context.Canceled) {
		t.Errorf("the cut call: %v, want context.Canceled", cutErr)
	}
	if answeredEarly {
		t.Errorf("a concurrent Await answered %+v while the cut call held the event", concurrent)
	}
	if concurrentErr != nil || concurrent.Event == nil || concurrent.Event.WorkerID != "run1:s1" || concurrent.Event.Kind != supervise.EventSettled {
		t.Errorf("the concurrent Await: %+v %v, want run1:s1's settlement put back", concurrent, concurrentErr)
	}
	if !after.Idle || after.Event != nil {
		t.Errorf("the Await after: %+v, want idle (the event is returned once)", after)
	}
}
