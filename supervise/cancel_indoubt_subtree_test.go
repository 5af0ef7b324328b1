package supervise_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt/internal/journaltest"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/supervise"
)

// A worker cancel whose target goes down while a node of its subtree is
// in doubt (started by an earlier process of the run, no terminal
// record: it may still run under that process) confirms no termination
// of that node, so it is unknown naming it, never cancelled (§3.6
// "Cancellation": cancelled only for a terminal down observed; unknown
// when termination was not observed; behaviour 49 "never success").
// Before, the lead's own end answered cancelled with the in-doubt
// writer left out of terminated (NC17's suspicion).
func TestWorkerCancelOverAnInDoubtSubtreeIsUnknown(t *testing.T) {
	dir := t.TempDir()
	const lead, writer = supervise.NodeID("run1:s1"), supervise.NodeID("run1:s1:s2")
	run := func(resume bool) supervise.WorkerCancellation {
		writerRan := make(chan struct{}, 1)
		exec := supervise.ExecutorFunc(func(ctx context.Context, w supervise.Work) (supervise.WorkResult, error) {
			writerRan <- struct{}{}
			<-ctx.Done()
			return supervise.WorkResult{Spent: zeroSpent()}, context.Cause(ctx)
		})
		leadBrain := goLead(func(ctx context.Context, c *supervise.Coordinator, task string) (supervise.BrainReport, error) {
			// Refused in-doubt on the resume: the lead waits on.
			_, _ = c.Spawn(ctx, supervise.SpawnArgs{Profile: "writer", Task: "hang", Label: "w", Key: "w1"})
			<-ctx.Done()
			return supervise.BrainReport{}, context.Cause(ctx)
		})
		var rec supervise.WorkerCancellation
		root := supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, task string) (supervise.BrainReport, error) {
			if _, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "lead", Task: "lead", Label: "lead", Key: "lead", Budget: leadGrant(3000, 4, 0.3)}); err != nil {
				return supervise.BrainReport{}, err
			}
			if !resume {
				select {
				case <-writerRan:
				case <-time.After(waitLimit):
					return supervise.BrainReport{}, errors.New("the writer did not run in time")
				}
				return supervise.BrainReport{Text: "root done"}, nil
			}
			if _, err := supervise.CancelWorker(ctx, dir, string(lead), "c-lead", supervise.CancelOptions{Reason: "enough"}); err != nil {
				return supervise.BrainReport{}, err
			}
			deadline := time.Now().Add(waitLimit)
			for time.Now().Before(deadline) {
				r, err := supervise.ReadWorkerCancellation(ctx, dir, "c-lead")
				if err == nil && r.ObservedAt != 0 && r.Effect != kernel.EffectCancelRequested {
					rec = r
					return supervise.BrainReport{Text: "root done"}, nil
				}
				time.Sleep(20 * time.Millisecond)
			}
			return supervise.BrainReport{}, errors.New("the lead's cancellation was not answered in time")
		})
		o := nestedOptions(t, exec, nil, nil)
		o.Brain = root
		o.BudgetExempt = true
		o.ManagerBrain = func(*profile.Profile) supervise.Brain { return leadBrain }
		o.RunDir, o.Resume = dir, resume
		if _, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "ship", o); err != nil {
			t.Fatal(err)
		}
		return rec
	}
	run(false)
	journaltest.KeepThrough(t, dir, supervise.KindSpawned, 2) // the lead's, then its writer's: no end
	rec := run(true)
	if rec.Effect != kernel.EffectUnknown || !strings.Contains(rec.Detail, string(writer)) {
		t.Errorf("the lead's cancellation over its in-doubt writer: %+v; want unknown naming %s", rec, writer)
	}
	for _, id := range rec.Terminated {
		if id == writer {
			t.Errorf("terminated %v names the in-doubt writer, whose end nobody observed", rec.Terminated)
		}
	}
}
