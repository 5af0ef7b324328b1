package fleet_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentrt/agentrt/fleet"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/supervise"
)

// refuseJobs makes every insert into River's job table fail with a check
// violation: a job table that stops taking jobs (not a missing one).
func refuseJobs(t *testing.T, conn string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, conn)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, "ALTER TABLE river_job ADD CONSTRAINT agentrt_test_refuse CHECK (false) NOT VALID"); err != nil {
		t.Fatal(err)
	}
}

// A submission whose job cannot be enqueued leaves nothing waiting
// forever: an unkeyed run ends failed saying why (nothing retries it;
// before, it stayed pending with no job, and the caller's retry made a
// second run). A supervised worker whose submission failed that way
// reports its spend unknown (charged at its ceiling), not an exact 0:
// the run was recorded and may yet have run.
func TestSubmitWhoseJobCannotBeEnqueued(t *testing.T) {
	f, conn := openFleet(t)
	refuseJobs(t, conn)
	ctx := t.Context()
	_, err := f.Submit(ctx, fleet.Submission{Spec: spec(t, "a note"), RunID: "orphan-1"})
	if err == nil {
		t.Fatal("Submit succeeded with a job table that refuses jobs")
	}
	r, err := f.Get(ctx, "orphan-1")
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != store.StatusFailed || r.Outcome == nil || !strings.Contains(r.Outcome.Error, "could not be enqueued") {
		t.Errorf("the unkeyed run is %s with outcome %+v; want failed, saying its job could not be enqueued", r.Status, r.Outcome)
	}

	p, err := profile.Parse([]byte(noteProfile))
	if err != nil {
		t.Fatal(err)
	}
	e := &fleet.Executor{Fleet: f, Provider: "scripted", PollInterval: 50 * time.Millisecond}
	res, err := e.Execute(ctx, supervise.Work{RunID: "sup", Node: "sup:s1", Profile: p, Task: "a note"})
	if err == nil {
		t.Fatal("Execute succeeded with a job table that refuses jobs")
	}
	if res.Spent.Tokens != nil || res.Spent.MicroUSD != nil {
		t.Errorf("spent %+v; want tokens and dollars unknown (nil): the recorded run may have run", res.Spent)
	}
}

// A keyed submission whose run id another submission already recorded
// is refused, and stays refused on a retry: it used to leave its key
// bound to the other run, so the retry "replayed" it — handing back
// another submitter's run and enqueueing a job whose spec digest was
// not that run's. The key is released: the submission goes through
// under a free id.
func TestKeyedSubmitNeverTakesAnotherSubmissionsRun(t *testing.T) {
	f, _ := openFleet(t)
	ctx := t.Context()
	if _, err := f.Submit(ctx, fleet.Submission{Spec: spec(t, "task A"), RunID: "shared", IdempotencyKey: "kA"}); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if sub, err := f.Submit(ctx, fleet.Submission{Spec: spec(t, "task B"), RunID: "shared", IdempotencyKey: "kB"}); !errors.Is(err, store.ErrExists) {
			t.Fatalf("submitting kB under kA's run id: %+v, %v; want store.ErrExists", sub, err)
		}
	}
	r, err := f.Get(ctx, "shared")
	if err != nil || r.Status != store.StatusPending {
		t.Fatalf("kA's run after kB's tries: %+v, %v; want it pending, untouched", r, err)
	}
	sub, err := f.Submit(ctx, fleet.Submission{Spec: spec(t, "task B"), RunID: "own", IdempotencyKey: "kB"})
	if err != nil || sub.RunID != "own" || sub.Replayed {
		t.Errorf("kB under a free id: %+v, %v; want a new run", sub, err)
	}
}
