package graph_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt/graph"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/supervise"
)

// spawnCoderOnce is a driver that spawns the coder, awaits its
// settlement and ends the run, handing the event and the settled
// record to got.
func spawnCoderOnce(got *settledCoder) graph.BrainFunc {
	return func(ctx context.Context, d *graph.Driver, _ string) (supervise.BrainReport, error) {
		if _, err := d.Spawn(ctx, supervise.SpawnArgs{Profile: "coder", Task: "Fix test_login."}); err != nil {
			return supervise.BrainReport{}, err
		}
		ev, err := d.Await(ctx, supervise.AwaitArgs{TimeoutMS: 300_000})
		if err != nil || ev.Event == nil {
			return supervise.BrainReport{}, errors.Join(err, errors.New("no event"))
		}
		got.event = *ev.Event
		page := d.ReadJournal(supervise.JournalArgs{Kinds: []string{supervise.KindSettled}})
		if len(page.Rows) != 1 {
			return supervise.BrainReport{}, errors.New("no settled record")
		}
		got.record = page.Rows[0]
		return supervise.BrainReport{}, nil
	}
}

type settledCoder struct {
	event  supervise.Event
	record supervise.Record
}

// A graph's Deliverable.Timeout bounds its check as Supervise's does
// (§3.7: the graph is an interpretation over one supervise run, its
// deliverable the run's): the graph passed its check on without it, so
// every check ran under DefaultCheckTimeout (2 min) — a short bound was
// ignored, and agentrt graph --check-timeout above 2 min cut the command
// at 2 min.
func TestGraphDeliverableTimeoutBoundsTheCheck(t *testing.T) {
	const limit = 300 * time.Millisecond
	g := starGraph(t)
	g.Deliverable = supervise.Deliverable{Describe: "a patch", Timeout: limit,
		Check: func(ctx context.Context, _ supervise.Output) (kernel.Verdict, error) {
			<-ctx.Done() // a check that never answers
			return kernel.Verdict{}, ctx.Err()
		}}
	var got settledCoder
	o := options(t, kernelWorkers(t, workerScript), nil)
	o.Supervise.Router = nil
	o.Brain = spawnCoderOnce(&got)
	began := time.Now()
	if _, err := graph.RunGraph(context.Background(), g, o); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(began); took > supervise.DefaultCheckTimeout/2 {
		t.Errorf("the run took %v: its check's %v bound was not applied", took, limit)
	}
	if d := got.event.Delivered; d == nil || *d || !strings.Contains(got.record.CheckError, "did not answer within "+limit.String()) {
		t.Errorf("settled %+v (check error %q), want not delivered: the check did not answer within %v", got.event, got.record.CheckError, limit)
	}
}

// A resumed graph run keeps the check it started with: the digest of the
// Deliverable's Identity is journaled with the run's start, and a resume
// whose Deliverable names another rule is refused before anything runs
// (the run's earlier settlements were judged by the first rule), while
// the same Identity resumes. §3.6 "Persistence & resume", §3.7.
func TestGraphResumeWithAnotherCheckIsRefused(t *testing.T) {
	dir := t.TempDir()
	run := func(identity string, resume bool) error {
		g := starGraph(t)
		g.Deliverable.Identity = identity
		var got settledCoder
		o := options(t, kernelWorkers(t, workerScript), nil)
		o.Supervise.Router = nil
		o.Supervise.RunDir, o.Supervise.Resume = dir, resume
		o.Brain = spawnCoderOnce(&got)
		_, err := graph.RunGraph(context.Background(), g, o)
		return err
	}
	if err := run(`{"expect":"patch"}`, false); err != nil {
		t.Fatal(err)
	}
	err := run(`{"expect":"tests pass"}`, true)
	var m *supervise.ResumeMismatchError
	if !errors.As(err, &m) || m.Field != "Deliverable" || m.Pointer != "/deliverableDigest" {
		t.Fatalf("resume with another check: %v, want a ResumeMismatchError on Deliverable", err)
	}
	if err := run(`{"expect":"patch"}`, true); err != nil {
		t.Fatalf("resume with the same check: %v", err)
	}
	if err := run("", true); err != nil {
		t.Fatalf("resume with an unidentified check (not compared): %v", err)
	}
}
