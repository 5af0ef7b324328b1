package supervise_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/agentrt/agentrt/store/memory"
	"github.com/agentrt/agentrt/supervise"
)

// §3.6 "Steering" ("finalization expires unseen requests as not_live")
// and behaviour 48, for a steer to the root: a steer queued for the
// manager's next turn when the run ends — its caller's context
// cancelled, or its deadline passed — before any turn took it is
// acknowledged not_live, as one to a worker is, never refused (which
// says the supervisor declined it).
func TestRootSteerQueuedWhenRunEndsIsNotLiveBehaviour48(t *testing.T) {
	tests := []struct {
		name string
		// deadline: the run's deadline ends it, not its caller.
		deadline bool
	}{
		{name: "caller cancelled"},
		{name: "deadline passed", deadline: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var ack supervise.SteerAck
			var ackErr error
			brain := inboxBrainFunc(func(bctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
				if c.ManagerInbox() == nil {
					return supervise.BrainReport{}, errors.New("a brain that reads an inbox has none")
				}
				// Written as another process would, never taken: this
				// brain's next turn never comes.
				if _, err := supervise.WriteWorkerSteer(bctx, dir, "run1", supervise.WorkerSteer{OperationID: "op-queued", Message: rootSteerText, Source: "cli"}); err != nil {
					return supervise.BrainReport{}, err
				}
				if err := untilPosted(bctx, dir, "op-queued"); err != nil {
					return supervise.BrainReport{}, err
				}
				if !tc.deadline {
					cancel()
				}
				// The run is ending: its answer to the steer comes
				// while this brain has not returned.
				ack, ackErr = untilAnswered(context.Background(), dir, "op-queued")
				<-bctx.Done()
				return supervise.BrainReport{}, context.Cause(bctx)
			})
			o := baseOptions(t, &supervise.KernelExecutor{Provider: workerProvider(t), Store: memory.New(nil)}, nil)
			o.RunDir, o.Brain = dir, brain
			if tc.deadline {
				o.Deadline = time.Now().Add(time.Second)
			}
			if _, err := supervise.Supervise(ctx, managerProfile(t, supervise.VerbSpawnWorker), "t", o); err != nil {
				t.Fatal(err)
			}
			if ackErr != nil {
				t.Fatal(ackErr)
			}
			if ack.Effect != supervise.SteerNotLive {
				t.Errorf("steer queued when the run ended: %q (%s), want not_live", ack.Effect, ack.Detail)
			}
			recs, _, err := supervise.ReadInbox(context.Background(), dir, "run1")
			if err != nil {
				t.Fatal(err)
			}
			if n := len(recs); n != 2 || recs[1].Kind != supervise.InboxDropped {
				t.Errorf("root inbox projection %+v, want posted then dropped", recs)
			}
		})
	}
}
