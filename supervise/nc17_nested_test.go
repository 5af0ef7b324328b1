package supervise_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/internal/journaltest"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/supervise"
)

// nc17HangingLead is a nested manager brain that tells started it runs
// and then waits until it is cancelled.
func nc17HangingLead(started chan<- supervise.NodeID) goLead {
	return goLead(func(ctx context.Context, c *supervise.Coordinator, task string) (supervise.BrainReport, error) {
		select {
		case started <- c.Self():
		default:
		}
		<-ctx.Done()
		return supervise.BrainReport{}, context.Cause(ctx)
	})
}

// nc17CancelLeadRoot is a root brain that spawns the keyed lead, waits
// for its brain to run, asks the run dir to cancel it (op), and awaits
// its settlement for at most wait.
func nc17CancelLeadRoot(started <-chan supervise.NodeID, op string, wait time.Duration, got *supervise.NodeID) supervise.Brain {
	return supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, task string) (supervise.BrainReport, error) {
		sp, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "lead", Task: "lead the team", Label: "lead", Key: "lead", Budget: leadGrant(2000, 2, 0.2)})
		if err != nil {
			return supervise.BrainReport{}, err
		}
		*got = sp.WorkerID
		if sp.Resumed == supervise.ResumedRetried {
			// The lead went down before the kill: a new one is not
			// what the request named; the run's end cancels it.
			return supervise.BrainReport{Text: "root done"}, nil
		}
		select {
		case <-started:
		case <-time.After(waitLimit):
			return supervise.BrainReport{}, errors.New("the lead's brain did not run in time")
		}
		if _, err := supervise.CancelWorker(ctx, c.RunDir(), string(sp.WorkerID), op, supervise.CancelOptions{Reason: "operator"}); err != nil {
			return supervise.BrainReport{}, err
		}
		deadline := time.Now().Add(wait)
		for time.Now().Before(deadline) {
			ev, err := c.Await(ctx, supervise.AwaitArgs{TimeoutMS: time.Until(deadline).Milliseconds() + 1})
			if err != nil {
				return supervise.BrainReport{}, err
			}
			if ev.Idle || (ev.Event != nil && ev.Event.WorkerID == sp.WorkerID) {
				break
			}
		}
		return supervise.BrainReport{Text: "root done"}, nil
	})
}

// nc17CutCancelAt copies the run dir of a finished run killed just after
// the n-th journal record of kind: the journal cut there, and the
// cancellation record file as the last cancel-acknowledged record before
// the cut wrote it (the file is written, then journaled). It returns the
// effect that file holds and whether the cut journal holds lead's end.
func nc17CutCancelAt(t *testing.T, from, to, op string, lead supervise.NodeID, kind string, n int) (kernel.Effect, bool) {
	t.Helper()
	journaltest.CopyRunDir(t, from, to)
	journaltest.KeepThrough(t, to, kind, n)
	data, err := os.ReadFile(filepath.Join(to, supervise.SpawnJournalFile))
	if err != nil {
		t.Fatal(err)
	}
	var last *supervise.WorkerCancellation
	ended := false
	for _, l := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		var r struct {
			Kind string           `json:"kind"`
			Node supervise.NodeID `json:"node"`
			Data json.RawMessage  `json:"data"`
		}
		if err := json.Unmarshal(l, &r); err != nil {
			t.Fatal(err)
		}
		ended = ended || (r.Kind == supervise.KindSettled && r.Node == lead)
		if r.Kind == supervise.KindCancelAcknowledged {
			last = new(supervise.WorkerCancellation)
			if err := json.Unmarshal(r.Data, last); err != nil {
				t.Fatal(err)
			}
		}
	}
	path := filepath.Join(to, supervise.CancellationsDir, op+".json")
	if last == nil {
		if err := os.Remove(path); err != nil {
			t.Fatal(err)
		}
		return "", ended
	}
	b, err := json.Marshal(last)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return last.Effect, ended
}

// §3.6 Cancellation ("the OWNING manager applies the abort to exactly
// that subtree"; terminated[] "grows monotonically"; "Run end expires
// every open request"), §15 behaviour 49: a worker cancel of a nested
// manager, killed at each record from its request to its resolution and
// resumed. A request whose abort was issued (cancel_requested) is still
// open at the kill: when the lead's end was not journaled, the resumed
// run drives that lead again, live in this process, and applies the
// request to it — the lead is cancelled and the record ends cancelled
// naming it — rather than leaving the re-driven subtree running until
// run end expires the request unknown; when the lead's end was
// journaled (down), that end answers it: cancelled, naming the lead.
func TestNC17CancelOpenAtKillAppliesToReDrivenLead(t *testing.T) {
	const op = "op-cancel-lead"
	run := func(dir string, resume bool) (supervise.SupervisedResult, supervise.NodeID) {
		started := make(chan supervise.NodeID, 1)
		var lead supervise.NodeID
		exec := supervise.ExecutorFunc(func(ctx context.Context, w supervise.Work) (supervise.WorkResult, error) {
			return supervise.WorkResult{Text: "DONE", Spent: zeroSpent()}, nil
		})
		o := nestedOptions(t, exec, nil, nil)
		// Resumed, the lead is awaited at most 20 s: a request never
		// applied would hold it that long, then the run's end cancels it.
		wait := waitLimit
		if resume {
			wait = 20 * time.Second
		}
		o.Brain = nc17CancelLeadRoot(started, op, wait, &lead)
		o.BudgetExempt = true
		o.ManagerBrain = func(*profile.Profile) supervise.Brain { return nc17HangingLead(started) }
		o.RunDir, o.Resume = dir, resume
		res, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "ship", o)
		if err != nil {
			t.Fatal(err)
		}
		return res, lead
	}
	full := t.TempDir()
	if _, lead := run(full, false); lead != "run1:s1" {
		t.Fatalf("lead %s, want run1:s1", lead)
	}
	const lead = supervise.NodeID("run1:s1")
	for _, cut := range []struct {
		kind string
		n    int
		// file is the effect the record file holds at the cut; ended
		// whether the lead's end is journaled.
		file  kernel.Effect
		ended bool
	}{
		{supervise.KindCancelRequested, 1, "", false},
		{supervise.KindCancelAcknowledged, 1, kernel.EffectCancelRequested, false},
		{supervise.KindSettled, 1, kernel.EffectCancelRequested, true},
		{supervise.KindCancelAcknowledged, 2, kernel.EffectCancelled, true},
	} {
		t.Run(fmt.Sprintf("%s-%d", cut.kind, cut.n), func(t *testing.T) {
			dir := t.TempDir()
			file, ended := nc17CutCancelAt(t, full, dir, op, lead, cut.kind, cut.n)
			if file != cut.file || ended != cut.ended {
				t.Fatalf("the cut holds record %q, lead ended %v; want %q, %v", file, ended, cut.file, cut.ended)
			}
			res, _ := run(dir, true)
			var state supervise.State
			for _, n := range res.Tree {
				if n.ID == lead {
					state = n.State
				}
			}
			rec, err := supervise.ReadWorkerCancellation(context.Background(), dir, op)
			if err != nil {
				t.Fatal(err)
			}
			if state != supervise.StateCancelled || rec.Effect != kernel.EffectCancelled || rec.WorkerID != lead {
				t.Errorf("resumed: lead %s, record %+v; want the lead cancelled and the record cancelled", state, rec)
			}
			if diff := cmp.Diff([]supervise.NodeID{lead}, rec.Terminated); diff != "" {
				t.Errorf("terminated (-want +got):\n%s", diff)
			}
		})
	}
}
