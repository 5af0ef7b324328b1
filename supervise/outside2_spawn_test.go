package supervise_test

// Second-pass outside scenarios for keyed spawns combined with an
// unconfirmed teardown, maxLiveWorkers and a throwing completion check,
// within one process and across a resume on the same run dir (§3.6
// "Spawning", "Completion gate", "Teardown & retained environments"; §15
// behaviours 41, 44, 45, 51).

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/supervise"
)

// Behaviours 44 + 45 + 51: a keyed worker that went down with its
// teardown never acknowledged keeps its slot; with maxLiveWorkers 1 the
// retry of its key is refused max-live-workers (the fence before any
// reservation), not retried into a slot that is still charged — in the
// same process and after a resume, whose result still names it in
// teardownUnconfirmed.
func TestOutside2KeyedRetryOfUnconfirmedTeardown(t *testing.T) {
	r := newOutsideRun(t)
	r.opts.MaxLiveWorkers = 1
	var downID supervise.NodeID
	_, err := r.drive(func(ctx context.Context, c *supervise.Coordinator) error {
		sp, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "w", Task: "a", Key: "k", Label: "box"})
		if err != nil {
			return err
		}
		downID = sp.WorkerID
		r.workers.waitStarted(t, "a")
		r.workers.finishWith("a", outsideOutcome{res: supervise.WorkResult{Spent: outsideSpent(100), TeardownUnconfirmed: "destroy timed out"}, err: errors.New("worker crashed")})
		if _, err := awaitKind(ctx, c, supervise.EventSettled); err != nil {
			return err
		}
		before := reserved(c)
		retry, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "w", Task: "a", Key: "k", Label: "box"})
		if codeOf(err) != "max-live-workers" {
			t.Errorf("retry of a down key whose teardown is unconfirmed, maxLiveWorkers 1 = %+v, %v; want max-live-workers", retry, err)
		}
		if reserved(c) != before {
			t.Errorf("the refused retry reserved %v -> %v", before, reserved(c))
		}
		return nil
	})
	if err != nil {
		t.Fatalf("first Supervise: %v", err)
	}
	if n := r.workers.Calls("a"); n != 1 {
		t.Fatalf("the key's worker ran %d times in the first run, want once", n)
	}

	r2 := newOutsideRun(t)
	r2.opts.RunDir, r2.opts.Resume, r2.opts.MaxLiveWorkers = r.opts.RunDir, true, 1
	res2, err := r2.drive(func(ctx context.Context, c *supervise.Coordinator) error {
		retry, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "w", Task: "a", Key: "k", Label: "box"})
		if codeOf(err) != "max-live-workers" {
			t.Errorf("resumed: retry of the key whose teardown is unconfirmed = %+v, %v; want max-live-workers (the slot stays charged)", retry, err)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("resumed Supervise: %v", err)
	}
	if n := r2.workers.Calls("a"); n != 0 {
		t.Errorf("the resumed run ran the key's worker %d times, want 0", n)
	}
	found := false
	for _, u := range res2.TeardownUnconfirmed {
		if u.ID == downID {
			found = true
			if u.Status != supervise.StateFailed || u.Label != "box" {
				t.Errorf("resumed teardownUnconfirmed entry = %+v, want %s box failed", u, downID)
			}
		}
	}
	if !found {
		t.Errorf("resumed teardownUnconfirmed = %+v, want it to still name %s", res2.TeardownUnconfirmed, downID)
	}
}

// throwOnDemand is a deliverable check that throws while throwing is
// set, else passes a text containing PASS.
type throwOnDemand struct{ throwing bool }

func (d throwOnDemand) deliverable() supervise.Deliverable {
	return supervise.Deliverable{
		Describe: "a text containing the word PASS",
		Check: func(_ context.Context, out supervise.Output) (kernel.Verdict, error) {
			if d.throwing {
				return kernel.Verdict{}, errors.New("the checker crashed")
			}
			return kernel.Verdict{Passed: strings.Contains(out.Text, "PASS")}, nil
		},
	}
}

// Behaviours 41 + 44: a keyed worker whose check threw settled valid:false
// (not delivered), its spend committed. Its key is then completed: the
// same request returns resumed: completed, runs nothing and spends
// nothing — also after a resume whose check no longer throws. The
// journaled verdict is the fact: the resumed run does not turn the
// undelivered child into a winner by checking it again.
func TestOutside2ThrowingCheckOnAKeyedSpawnAcrossResume(t *testing.T) {
	r := newOutsideRun(t)
	r.opts.Deliverable = throwOnDemand{throwing: true}.deliverable()
	var id supervise.NodeID
	res1, err := r.drive(func(ctx context.Context, c *supervise.Coordinator) error {
		sp, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "w", Task: "a", Key: "k"})
		if err != nil {
			return err
		}
		id = sp.WorkerID
		r.workers.waitStarted(t, "a")
		r.workers.finish("a", "PASS a")
		ev, err := awaitKind(ctx, c, supervise.EventSettled)
		if err != nil {
			return err
		}
		if ev.Delivered == nil || *ev.Delivered {
			t.Errorf("settlement under a throwing check = %+v, want delivered false", ev)
		}
		tokens := committed(c, "tokens")
		again, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "w", Task: "a", Key: "k"})
		if err != nil || again.Resumed != supervise.ResumedCompleted || again.WorkerID != id {
			t.Errorf("the key again = %+v, %v; want resumed completed %s", again, err, id)
		}
		if committed(c, "tokens") != tokens {
			t.Errorf("the completed key's replay spent %d tokens", committed(c, "tokens")-tokens)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("first Supervise: %v", err)
	}
	if res1.Status == supervise.StatusWinner || res1.Spent.Tokens < 100 {
		t.Fatalf("first run = %s %s spent %d tokens; want no winner, the worker's 100 tokens committed", res1.Status, res1.Reason, res1.Spent.Tokens)
	}

	r2 := newOutsideRun(t)
	r2.opts.RunDir, r2.opts.Resume = r.opts.RunDir, true
	r2.opts.Deliverable = throwOnDemand{throwing: false}.deliverable()
	res2, err := r2.drive(func(ctx context.Context, c *supervise.Coordinator) error {
		again, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "w", Task: "a", Key: "k"})
		if err != nil || again.Resumed != supervise.ResumedCompleted || again.WorkerID != id {
			t.Errorf("resumed: the key again = %+v, %v; want resumed completed %s", again, err, id)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("resumed Supervise: %v", err)
	}
	if n := r2.workers.Calls("a"); n != 0 {
		t.Errorf("the resumed run ran the completed key's worker %d times", n)
	}
	if res2.Status == supervise.StatusWinner {
		t.Errorf("resumed result = winner %+v; the child's journaled verdict is valid:false (its check threw)", res2.Winner)
	}
	if res2.Spent.Tokens != res1.Spent.Tokens {
		t.Errorf("resumed spend %d tokens, want the first run's %d (nothing new ran)", res2.Spent.Tokens, res1.Spent.Tokens)
	}
}
