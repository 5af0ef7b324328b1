package supervise_test

import (
	"context"
	"testing"
	"time"

	"github.com/agentrt/agentrt/supervise"
)

// An await_event the brain makes under its own context, in flight as
// the manager stops, answers stopped (or an event queued first), never
// its context's error: its context and the brain's are the same one, so
// both ends of the wait are ready at once, and an await made after the
// stop answers stopped too (§9 await_event: "{stopped:true, reason,
// live} at once once the run is settling"; spec §9 await_event).
func TestAwaitUnderTheBrainsContextAnswersStoppedAsItStops(t *testing.T) {
	for i := range 200 {
		r := newOutsideRun(t)
		var (
			res supervise.AwaitResult
			err error
		)
		_, runErr := r.drive(func(ctx context.Context, c *supervise.Coordinator) error {
			if _, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "w", Task: "t"}); err != nil {
				return err
			}
			r.workers.waitStarted(t, "t")
			done := make(chan struct{})
			go func() {
				defer close(done)
				res, err = c.Await(ctx, supervise.AwaitArgs{TimeoutMS: outsideWait.Milliseconds()})
			}()
			// Most often the await is waiting by the time the stop
			// lands; either order must answer the same.
			time.Sleep(time.Millisecond)
			if _, err := c.Stop(supervise.StopArgs{Reason: "enough"}); err != nil {
				return err
			}
			<-done
			return nil
		})
		if runErr != nil {
			t.Fatalf("run %d: Supervise: %v", i, runErr)
		}
		if err != nil || !res.Stopped && res.Event == nil {
			t.Fatalf("run %d: the await in flight answered %+v, %v; want stopped (or an event queued first)", i, res, err)
		}
	}
}
