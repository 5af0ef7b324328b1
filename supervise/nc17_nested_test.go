package supervise_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/internal/journaltest"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/ledger"
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
		res := nc17Supervise(t, o)
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

// stopCode is the refusal code of a Stop, "" when it stopped.
func nc17StopCode(c *supervise.Coordinator) string {
	_, err := c.Stop(supervise.StopArgs{})
	var vr *supervise.VerbRefusal
	if errors.As(err, &vr) {
		return vr.Code
	}
	if err != nil {
		return err.Error()
	}
	return ""
}

// §3.6 Questions ("Blocking undecided questions make stop refuse
// (unresolved-blocking-questions)"), §15 behaviour 54, at depth: a
// grandchild's blocks-run question holds its lead's stop while the lead
// has not decided it, and still once the lead escalated it to the root
// and the root has not decided it there; it holds the root's stop too
// while it waits there; the root's answer reaches the grandchild and
// then the lead's stop goes through.
func TestNC17StopRefusedWhileGrandchildQuestionUndecided(t *testing.T) {
	exec := supervise.ExecutorFunc(func(ctx context.Context, w supervise.Work) (supervise.WorkResult, error) {
		d, err := w.Ask(ctx, supervise.AskArgs{Level: "worker", Question: "which database?", Reason: "schema", Urgency: supervise.UrgencyBlocksRun})
		if err != nil {
			return supervise.WorkResult{}, err
		}
		return supervise.WorkResult{Text: "used " + d.Answer + " DONE", Spent: zeroSpent()}, nil
	})
	escalated, answered := make(chan struct{}), make(chan struct{})
	var leadStops []string
	lead := goLead(func(ctx context.Context, c *supervise.Coordinator, task string) (supervise.BrainReport, error) {
		if _, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "writer", Task: "ask"}); err != nil {
			return supervise.BrainReport{}, err
		}
		q, err := awaitQuestion(ctx, c)
		if err != nil {
			return supervise.BrainReport{}, err
		}
		leadStops = append(leadStops, nc17StopCode(c))
		if _, err := c.AnswerQuestion(ctx, supervise.AnswerArgs{QuestionID: q.ID, EscalateTo: "parent"}); err != nil {
			return supervise.BrainReport{}, err
		}
		leadStops = append(leadStops, nc17StopCode(c))
		close(escalated)
		select {
		case <-answered:
		case <-time.After(waitLimit):
			return supervise.BrainReport{}, errors.New("the root did not answer in time")
		}
		if _, err := c.Await(ctx, supervise.AwaitArgs{Kinds: []string{supervise.EventSettled}, TimeoutMS: 60000}); err != nil {
			return supervise.BrainReport{}, err
		}
		leadStops = append(leadStops, nc17StopCode(c))
		return supervise.BrainReport{Text: "lead DONE"}, nil
	})
	var rootStops []string
	root := supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, task string) (supervise.BrainReport, error) {
		sp, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "lead", Task: "lead"})
		if err != nil {
			return supervise.BrainReport{}, err
		}
		q, err := awaitQuestion(ctx, c)
		if err != nil {
			return supervise.BrainReport{}, err
		}
		select {
		case <-escalated:
		case <-time.After(waitLimit):
			return supervise.BrainReport{}, errors.New("the lead did not escalate in time")
		}
		rootStops = append(rootStops, nc17StopCode(c))
		if res, err := c.AnswerQuestion(ctx, supervise.AnswerArgs{QuestionID: q.ID, Answer: "postgres"}); err != nil || !res.Delivered {
			return supervise.BrainReport{}, errors.Join(err, errors.New("the root's answer was not delivered"))
		}
		close(answered)
		if err := awaitSettledOrIdle(ctx, c, sp.WorkerID); err != nil {
			return supervise.BrainReport{}, err
		}
		return supervise.BrainReport{Text: "root done"}, nil
	})
	o := nc17Options(t, exec, root, lead, t.TempDir(), false)
	o.BudgetExempt = true
	res := nc17Supervise(t, o)
	const refused = "unresolved-blocking-questions"
	if diff := cmp.Diff([]string{refused, refused, ""}, leadStops); diff != "" {
		t.Errorf("the lead's stops (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{refused}, rootStops); diff != "" {
		t.Errorf("the root's stops (-want +got):\n%s", diff)
	}
	for _, n := range res.Tree {
		if n.ID == "run1:s1:s2" && (n.State != supervise.StateDone || !n.Delivered) {
			t.Errorf("grandchild %+v, want done and delivered", n)
		}
	}
}

// §3.6 Questions, §15 behaviour 54: a grandchild's blocks-run question
// its lead escalated to the root and then left undecided when it ended
// (its brain returned: its children are cancelled) is waited for by
// nobody: at the root it expires, holds no stop, and an answer to it is
// not delivered.
func TestNC17QuestionUnansweredAtLeadEndExpiresAtRoot(t *testing.T) {
	exec := supervise.ExecutorFunc(func(ctx context.Context, w supervise.Work) (supervise.WorkResult, error) {
		d, err := w.Ask(ctx, supervise.AskArgs{Level: "worker", Question: "which database?", Reason: "schema", Urgency: supervise.UrgencyBlocksRun})
		if err != nil {
			return supervise.WorkResult{}, err
		}
		return supervise.WorkResult{Text: "used " + d.Answer + " DONE", Spent: zeroSpent()}, nil
	})
	leadEnded := make(chan struct{})
	lead := goLead(func(ctx context.Context, c *supervise.Coordinator, task string) (supervise.BrainReport, error) {
		if _, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "writer", Task: "ask"}); err != nil {
			return supervise.BrainReport{}, err
		}
		q, err := awaitQuestion(ctx, c)
		if err != nil {
			return supervise.BrainReport{}, err
		}
		if _, err := c.AnswerQuestion(ctx, supervise.AnswerArgs{QuestionID: q.ID, EscalateTo: "parent"}); err != nil {
			return supervise.BrainReport{}, err
		}
		return supervise.BrainReport{Text: "lead DONE"}, nil
	})
	var stop string
	var ans supervise.AnswerResult
	var status string
	root := supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, task string) (supervise.BrainReport, error) {
		sp, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "lead", Task: "lead"})
		if err != nil {
			return supervise.BrainReport{}, err
		}
		q, err := awaitQuestion(ctx, c)
		if err != nil {
			return supervise.BrainReport{}, err
		}
		for {
			ev, err := c.Await(ctx, supervise.AwaitArgs{Kinds: []string{supervise.EventSettled}, TimeoutMS: 60000})
			if err != nil {
				return supervise.BrainReport{}, err
			}
			if ev.Idle || ev.Event == nil || ev.Event.WorkerID == sp.WorkerID {
				break
			}
		}
		close(leadEnded)
		for _, x := range c.ListQuestions().Questions {
			if x.ID == q.ID {
				status = x.Status
			}
		}
		if ans, err = c.AnswerQuestion(ctx, supervise.AnswerArgs{QuestionID: q.ID, Answer: "postgres"}); err != nil {
			return supervise.BrainReport{}, err
		}
		stop = nc17StopCode(c)
		return supervise.BrainReport{Text: "root done"}, nil
	})
	o := nc17Options(t, exec, root, lead, t.TempDir(), false)
	o.BudgetExempt = true
	nc17Supervise(t, o)
	select {
	case <-leadEnded:
	default:
		t.Fatal("the root never saw the lead end")
	}
	if status != "expired" || ans.Delivered || stop != "" {
		t.Errorf("at the root after the lead ended: question %q, answer %+v, stop %q; want expired, not delivered, stopped", status, ans, stop)
	}
}

// §3.6 keyed spawns ("started without terminal receipt → refused
// in-doubt"), spendGaps ("A never-settled node is charged at its budget
// ceiling"), §15 behaviours 40, 43, 44, at depth: a lead's keyed writer
// whose spawn record landed when the process was killed (before its
// answer) stays in doubt on resume — the re-driven lead's same keyed
// spawn is refused in-doubt — and the result charges it its ceiling
// exactly once: one never-settled gap naming it, the run's tokens its
// 1,000-token ceiling, the run's pool conserved.
func TestNC17NestedKeyedSpawnInDoubtChargedOnce(t *testing.T) {
	dir := t.TempDir()
	run := func(resume bool) (supervise.SupervisedResult, ledger.Readout, error) {
		writerRan := make(chan struct{}, 1)
		var spawnErr error
		exec := supervise.ExecutorFunc(func(ctx context.Context, w supervise.Work) (supervise.WorkResult, error) {
			writerRan <- struct{}{}
			<-ctx.Done()
			return supervise.WorkResult{Spent: zeroSpent()}, context.Cause(ctx)
		})
		lead := goLead(func(ctx context.Context, c *supervise.Coordinator, task string) (supervise.BrainReport, error) {
			_, spawnErr = c.Spawn(ctx, supervise.SpawnArgs{Profile: "writer", Task: "hang", Label: "w", Key: "w1"})
			if spawnErr != nil {
				return supervise.BrainReport{Text: "lead DONE"}, nil
			}
			<-ctx.Done()
			return supervise.BrainReport{}, context.Cause(ctx)
		})
		var readout ledger.Readout
		root := supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, task string) (supervise.BrainReport, error) {
			sp, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "lead", Task: "lead", Label: "lead", Key: "lead", Budget: leadGrant(3000, 4, 0.3)})
			if err != nil {
				return supervise.BrainReport{}, err
			}
			if !resume {
				select {
				case <-writerRan:
				case <-time.After(waitLimit):
					return supervise.BrainReport{}, errors.New("the writer did not run in time")
				}
				return supervise.BrainReport{Text: "root done"}, nil // the run's end cancels the tree
			}
			if err := awaitSettledOrIdle(ctx, c, sp.WorkerID); err != nil {
				return supervise.BrainReport{}, err
			}
			readout = c.Readout()
			return supervise.BrainReport{Text: "root done"}, nil
		})
		o := nc17Options(t, exec, root, lead, dir, resume)
		o.BudgetExempt = true
		res := nc17Supervise(t, o)
		return res, readout, spawnErr
	}
	if _, _, err := run(false); err != nil {
		t.Fatalf("the first process's keyed spawn: %v", err)
	}
	journaltest.KeepThrough(t, dir, supervise.KindSpawned, 2) // the lead's, then its writer's: no answer
	res, readout, spawnErr := run(true)
	var r *supervise.Refusal
	if !errors.As(spawnErr, &r) || r.Code != supervise.CodeInDoubt {
		t.Errorf("the re-driven lead's keyed spawn: %v, want in-doubt", spawnErr)
	}
	const writer = supervise.NodeID("run1:s1:s2")
	var gaps []supervise.SpendGap
	for _, g := range res.SpendGaps {
		if g.ID == writer {
			gaps = append(gaps, g)
		}
	}
	if len(gaps) != 1 || gaps[0].Kind != supervise.GapNeverSettled {
		t.Errorf("spend gaps %+v, want one never-settled gap naming %s", res.SpendGaps, writer)
	}
	if res.Spent.Tokens != 1000 || res.Spent.TokensKnown || res.Spent.Iterations != 1 || res.Spent.MicroUSD != 100_000 {
		t.Errorf("spent %+v, want the writer's ceiling once: 1,000 tokens, 1 iteration, $0.10, tokens not known", res.Spent)
	}
	checkConservedReadout(t, readout)
	if ch := readout.Channels["tokens"]; ch.Committed != 1000 {
		t.Errorf("the run's pool committed %d tokens once the lead settled, want 1,000 (the writer's ceiling, once)", ch.Committed)
	}
}

// nc17Ack polls the run dir, at most waitLimit, for the acknowledgement
// of steer op whose effect is not unknown.
func nc17Ack(ctx context.Context, dir, op string) (supervise.SteerAck, error) {
	deadline := time.Now().Add(waitLimit)
	for time.Now().Before(deadline) {
		ack, err := supervise.ReadSteerAck(ctx, dir, op)
		if err != nil {
			return supervise.SteerAck{}, err
		}
		if ack != nil && ack.Effect != supervise.SteerUnknown {
			return *ack, nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return supervise.SteerAck{}, errors.New("no acknowledgement of " + op + " in time")
}

// nc17Cancelled polls, at most waitLimit, for cancellation op's record
// to end (cancelled or not_live).
func nc17Cancelled(ctx context.Context, dir, op string) (supervise.WorkerCancellation, error) {
	deadline := time.Now().Add(waitLimit)
	for time.Now().Before(deadline) {
		rec, err := supervise.ReadWorkerCancellation(ctx, dir, op)
		if err == nil && (rec.Effect == kernel.EffectCancelled || rec.Effect == kernel.EffectNotLive) {
			return rec, nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return supervise.WorkerCancellation{}, errors.New("cancellation " + op + " did not end in time")
}

// §3.6 Cancellation ("exact node ids route at any depth; labels/profile
// names are resolved by the root manager against its direct children"),
// Steering, §15 behaviours 48, 49, through the run dir: a grandchild's
// label resolves to nothing (a steer to it is refused, a cancel of it
// never applies and ends unknown), a settled grandchild's exact id is
// not_live, a live one's exact id cancels exactly it — its lead lives on.
func TestNC17RunDirRoutingAtDepth(t *testing.T) {
	exec := supervise.ExecutorFunc(func(ctx context.Context, w supervise.Work) (supervise.WorkResult, error) {
		if w.Task == "hang" {
			<-ctx.Done()
			return supervise.WorkResult{Spent: zeroSpent()}, context.Cause(ctx)
		}
		return supervise.WorkResult{Text: "quick DONE", Spent: zeroSpent()}, nil
	})
	ready := make(chan struct{})
	lead := goLead(func(ctx context.Context, c *supervise.Coordinator, task string) (supervise.BrainReport, error) {
		if _, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "writer", Task: "quick", Label: "done1"}); err != nil {
			return supervise.BrainReport{}, err
		}
		if _, err := c.Await(ctx, supervise.AwaitArgs{Kinds: []string{supervise.EventSettled}, TimeoutMS: 60000}); err != nil {
			return supervise.BrainReport{}, err
		}
		if _, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "writer", Task: "hang", Label: "deep"}); err != nil {
			return supervise.BrainReport{}, err
		}
		close(ready)
		if _, err := c.Await(ctx, supervise.AwaitArgs{Kinds: []string{supervise.EventSettled}, TimeoutMS: 60000}); err != nil {
			return supervise.BrainReport{}, err
		}
		return supervise.BrainReport{Text: "lead DONE"}, nil
	})
	var acks []supervise.SteerEffect
	var byID supervise.WorkerCancellation
	root := supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, task string) (supervise.BrainReport, error) {
		sp, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "lead", Task: "lead", Label: "lead", Budget: leadGrant(3000, 4, 0.3)})
		if err != nil {
			return supervise.BrainReport{}, err
		}
		select {
		case <-ready:
		case <-time.After(waitLimit):
			return supervise.BrainReport{}, errors.New("the lead did not spawn in time")
		}
		for op, worker := range map[string]string{"steer-label": "done1", "steer-settled": "run1:s1:s2"} {
			if _, err := supervise.WriteWorkerSteer(ctx, c.RunDir(), worker, supervise.WorkerSteer{OperationID: op, Message: "hurry"}); err != nil {
				return supervise.BrainReport{}, err
			}
		}
		for _, op := range []string{"steer-label", "steer-settled"} {
			ack, err := nc17Ack(ctx, c.RunDir(), op)
			if err != nil {
				return supervise.BrainReport{}, err
			}
			acks = append(acks, ack.Effect)
		}
		if _, err := supervise.CancelWorker(ctx, c.RunDir(), "deep", "cancel-label", supervise.CancelOptions{}); err != nil {
			return supervise.BrainReport{}, err
		}
		if _, err := supervise.CancelWorker(ctx, c.RunDir(), "run1:s1:s3", "cancel-id", supervise.CancelOptions{}); err != nil {
			return supervise.BrainReport{}, err
		}
		if byID, err = nc17Cancelled(ctx, c.RunDir(), "cancel-id"); err != nil {
			return supervise.BrainReport{}, err
		}
		if err := awaitSettledOrIdle(ctx, c, sp.WorkerID); err != nil {
			return supervise.BrainReport{}, err
		}
		return supervise.BrainReport{Text: "root done"}, nil
	})
	o := nc17Options(t, exec, root, lead, t.TempDir(), false)
	o.BudgetExempt = true
	res := nc17Supervise(t, o)
	if diff := cmp.Diff([]supervise.SteerEffect{supervise.SteerRefused, supervise.SteerNotLive}, acks); diff != "" {
		t.Errorf("steer effects, grandchild label then settled grandchild id (-want +got):\n%s", diff)
	}
	if byID.Effect != kernel.EffectCancelled || !cmp.Equal([]supervise.NodeID{"run1:s1:s3"}, byID.Terminated) {
		t.Errorf("cancel by the grandchild's id: %+v, want cancelled, terminated [run1:s1:s3]", byID)
	}
	byLabel, err := supervise.ReadWorkerCancellation(context.Background(), o.RunDir, "cancel-label")
	if err != nil {
		t.Fatal(err)
	}
	if byLabel.Effect != kernel.EffectUnknown || byLabel.WorkerID != "" || len(byLabel.Terminated) != 0 {
		t.Errorf("cancel by the grandchild's label: %+v, want unknown, resolved to no worker", byLabel)
	}
	states := map[supervise.NodeID]supervise.State{}
	for _, n := range res.Tree {
		states[n.ID] = n.State
	}
	want := map[supervise.NodeID]supervise.State{"run1:s1": supervise.StateDone, "run1:s1:s2": supervise.StateDone, "run1:s1:s3": supervise.StateCancelled}
	if diff := cmp.Diff(want, states); diff != "" {
		t.Errorf("states (-want +got):\n%s", diff)
	}
}

// §3.6 "Node ids are deterministic <parent>:s<seq>"; "scope.next()
// delivers settlements strictly in recorded seq order"; keyed spawns
// across restarts; §15 behaviours 44, 46, at depth, killed after every
// journal record: a replay-safe caller-owned lead spawns keyed alpha,
// awaits it, spawns keyed beta, awaits it (making the same calls again
// when driven again). Resumed from each cut, the
// ids are the uninterrupted run's (seq continues, never restarts; a
// worker the cut left in doubt stops the lead, so fewer), the lead's
// awaits return its own children's settlements, each once, in spawn
// order, and the run's pool is conserved.
func TestNC17NestedSeqAndOrderFromEveryCut(t *testing.T) {
	type outcome struct {
		ids    []supervise.NodeID
		events []supervise.NodeID
	}
	run := func(dir string, resume bool) outcome {
		exec := supervise.ExecutorFunc(func(ctx context.Context, w supervise.Work) (supervise.WorkResult, error) {
			one, ten := int64(1), int64(10)
			return supervise.WorkResult{Text: w.Task + " DONE", Spent: ledger.Spend{Tokens: &ten, Iterations: &one, MicroUSD: &ten}}, nil
		})
		var mu sync.Mutex
		var events []supervise.NodeID
		got := func(id supervise.NodeID) {
			mu.Lock()
			events = append(events, id)
			mu.Unlock()
		}
		lead := goLead(func(ctx context.Context, c *supervise.Coordinator, task string) (supervise.BrainReport, error) {
			for _, w := range []string{"alpha", "beta"} {
				sp, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "writer", Task: w, Label: w, Key: w})
				var r *supervise.Refusal
				if errors.As(err, &r) && r.Code == supervise.CodeInDoubt {
					return supervise.BrainReport{Text: "lead stopped at " + w}, nil
				}
				if err != nil {
					return supervise.BrainReport{}, err
				}
				// Replay-safe: the same calls as the first run. A spawn
				// its key finds completed is awaited too: the resumed
				// run replays its settlement to this lead in the order
				// recorded.
				if sp.Resumed == supervise.ResumedCompleted && sp.WorkerID == "" {
					return supervise.BrainReport{}, fmt.Errorf("the completed spawn of %s names no worker", w)
				}
				ev, err := c.Await(ctx, supervise.AwaitArgs{Kinds: []string{supervise.EventSettled}, TimeoutMS: 60000})
				if err != nil {
					return supervise.BrainReport{}, err
				}
				if ev.Event == nil {
					return supervise.BrainReport{}, fmt.Errorf("the lead's await for %s returned no event: %+v", sp.WorkerID, ev)
				}
				got(ev.Event.WorkerID)
			}
			return supervise.BrainReport{Text: "lead DONE"}, nil
		})
		var readout ledger.Readout
		root := supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, task string) (supervise.BrainReport, error) {
			var r *supervise.Refusal
			if _, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "writer", Task: "sibling", Label: "sib", Key: "sib"}); err != nil && !(errors.As(err, &r) && r.Code == supervise.CodeInDoubt) {
				return supervise.BrainReport{}, err
			}
			tokens, iterations := int64(3000), int64(4)
			sp, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "lead", Task: "lead", Label: "lead", Key: "lead",
				Budget: &supervise.SpawnBudget{Tokens: &tokens, Iterations: &iterations}})
			if err != nil {
				return supervise.BrainReport{}, err
			}
			for sp.Resumed != supervise.ResumedCompleted {
				ev, err := c.Await(ctx, supervise.AwaitArgs{Kinds: []string{supervise.EventSettled}, TimeoutMS: 60000})
				if err != nil {
					return supervise.BrainReport{}, err
				}
				if ev.Idle || ev.Event == nil || ev.Event.WorkerID == sp.WorkerID {
					break
				}
			}
			readout = c.Readout()
			return supervise.BrainReport{Text: "root done"}, nil
		})
		// A worker a cut leaves in doubt is charged its ceiling: no dollar ceiling to taint.
		o := uncappedUSD(nc17Options(t, exec, root, lead, dir, resume))
		res := nc17Supervise(t, o)
		checkConservedReadout(t, readout)
		var out outcome
		for _, n := range res.Tree {
			out.ids = append(out.ids, n.ID)
		}
		mu.Lock()
		out.events = events
		mu.Unlock()
		return out
	}
	full := t.TempDir()
	want := run(full, false)
	if diff := cmp.Diff(outcome{ids: []supervise.NodeID{"run1:s1", "run1:s2", "run1:s2:s3", "run1:s2:s4"},
		events: []supervise.NodeID{"run1:s2:s3", "run1:s2:s4"}}, want, cmp.AllowUnexported(outcome{})); diff != "" {
		t.Fatalf("uninterrupted (-want +got):\n%s", diff)
	}
	total := journaltest.KeepRecords(t, full, 1<<30)
	for n := 1; n < total; n++ {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			dir := t.TempDir()
			journaltest.CopyRunDir(t, full, dir)
			journaltest.KeepRecords(t, dir, n)
			got := run(dir, true)
			if len(got.ids) > len(want.ids) || !slices.Equal(want.ids[:len(got.ids)], got.ids) {
				t.Errorf("tree ids %v, want a prefix of the uninterrupted %v", got.ids, want.ids)
			}
			if len(got.events) > len(want.events) || !slices.Equal(want.events[:len(got.events)], got.events) {
				t.Errorf("the resumed lead's settlements %v, want a prefix of %v", got.events, want.events)
			}
		})
	}
}

// §3.6 maxDepth, nested managers' carved pools, §15 behaviours 36, 38, at
// depth 3 with MaxDepth 3: root → lead (depth 1) → sub-lead (depth 2) →
// writers and a sub-sub-lead (depth 3, exactly at the bound, admitted);
// the sub-sub-lead's own spawn (depth 4, one past) is refused
// depth-exceeded and reserves nothing from its carved pool; the
// sub-lead's carved pool running out of iterations refuses its third
// writer budget-exhausted without ending the run (a winner); the
// sub-lead's carved pool is conserved and its committed tokens are what
// its children's settlements were charged.
func TestNC17DepthThreeBoundAndNestedExhaustion(t *testing.T) {
	exec := supervise.ExecutorFunc(func(ctx context.Context, w supervise.Work) (supervise.WorkResult, error) {
		one, ten := int64(1), int64(10)
		return supervise.WorkResult{Text: w.Task + " DONE", Spent: ledger.Spend{Tokens: &ten, Iterations: &one, MicroUSD: &ten}}, nil
	})
	var mu sync.Mutex
	var refusals []string
	refused := func(err error) error {
		var r *supervise.Refusal
		if !errors.As(err, &r) {
			return err
		}
		mu.Lock()
		refusals = append(refusals, string(r.Code))
		mu.Unlock()
		return nil
	}
	var subCarve, subsubBefore, subsubAfter ledger.Readout
	var subTokens int64
	awaitOne := func(ctx context.Context, c *supervise.Coordinator) error {
		ev, err := c.Await(ctx, supervise.AwaitArgs{Kinds: []string{supervise.EventSettled}, TimeoutMS: 60000})
		if err == nil && ev.Event == nil {
			err = fmt.Errorf("await returned no settlement: %+v", ev)
		}
		return err
	}
	lead := goLead(func(ctx context.Context, c *supervise.Coordinator, task string) (supervise.BrainReport, error) {
		switch task {
		case "lead the team":
			if _, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "lead", Task: "sub", Budget: leadGrant(3000, 2, 0.3)}); err != nil {
				return supervise.BrainReport{}, err
			}
			if err := awaitOne(ctx, c); err != nil {
				return supervise.BrainReport{}, err
			}
			r, _ := c.CarvedReadout("run1:s1:s2")
			mu.Lock()
			subCarve = r
			mu.Unlock()
			return supervise.BrainReport{Text: "lead DONE"}, nil
		case "sub":
			for _, a := range []supervise.SpawnArgs{
				{Profile: "writer", Task: "w1"},
				{Profile: "lead", Task: "subsub", Budget: leadGrant(500, 1, 0.05)},
				{Profile: "writer", Task: "w2"},
			} {
				if _, err := c.Spawn(ctx, a); err != nil {
					return supervise.BrainReport{}, err
				}
				if err := awaitOne(ctx, c); err != nil {
					return supervise.BrainReport{}, err
				}
			}
			_, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "writer", Task: "w3"})
			if err == nil {
				return supervise.BrainReport{}, errors.New("w3 admitted past the sub-lead's two iterations")
			}
			if err := refused(err); err != nil {
				return supervise.BrainReport{}, err
			}
			return supervise.BrainReport{Text: "sub DONE"}, nil
		default: // subsub, depth 3
			before, _ := c.CarvedReadout(c.Self())
			_, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "writer", Task: "w4"})
			if err == nil {
				return supervise.BrainReport{}, errors.New("a depth-4 writer admitted under MaxDepth 3")
			}
			if err := refused(err); err != nil {
				return supervise.BrainReport{}, err
			}
			after, _ := c.CarvedReadout(c.Self())
			mu.Lock()
			subsubBefore, subsubAfter = before, after
			mu.Unlock()
			return supervise.BrainReport{Text: "subsub DONE"}, nil
		}
	})
	o := nc17Options(t, exec, rootBrainLeadGranted(t, leadGrant(6000, 6, 0.6), nil), lead, t.TempDir(), false)
	o.MaxDepth = 3
	res := nc17Supervise(t, o)
	for _, n := range res.Tree {
		if n.State != supervise.StateDone {
			t.Errorf("node %s %s: %s", n.ID, n.State, n.Reason)
		}
	}
	if res.Status != supervise.StatusWinner {
		t.Errorf("status %s reason %s, want a winner: a nested pool running out is not the run's", res.Status, res.Reason)
	}
	if diff := cmp.Diff([]string{"depth-exceeded", "budget-exhausted"}, refusals); diff != "" {
		t.Errorf("refusals (-want +got):\n%s", diff)
	}
	var ids []supervise.NodeID
	for _, n := range res.Tree {
		ids = append(ids, n.ID)
		if n.ID == "run1:s1:s2:s3" || n.ID == "run1:s1:s2:s4" || n.ID == "run1:s1:s2:s5" {
			if n.Settlement != nil && n.Settlement.Spent.Tokens != nil {
				subTokens += *n.Settlement.Spent.Tokens
			}
		}
	}
	if diff := cmp.Diff([]supervise.NodeID{"run1:s1", "run1:s1:s2", "run1:s1:s2:s3", "run1:s1:s2:s4", "run1:s1:s2:s5"}, ids); diff != "" {
		t.Errorf("tree ids (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(subsubBefore.Channels, subsubAfter.Channels); diff != "" {
		t.Errorf("the depth-exceeded spawn moved the sub-sub-lead's carved pool:\n%s", diff)
	}
	checkConservedReadout(t, subCarve)
	if got := subCarve.Channels[ledger.ChannelTokens]; got.Total != 3000 || got.Committed != subTokens || got.Reserved != 0 {
		t.Errorf("the sub-lead's carved tokens %+v, want total 3,000, committed %d (its children's settlements), nothing reserved", got, subTokens)
	}
	if got := subCarve.Channels[ledger.ChannelIterations]; got.Committed != 2 || got.Free != 0 {
		t.Errorf("the sub-lead's carved iterations %+v, want 2 committed (w1, w2), none free", got)
	}
}

// §3.6 nested managers' carved pools, Persistence & resume, §15
// behaviours 36, 40, 46, at depth 3, killed after every journal record:
// root → keyed lead → sub-lead → writers and a sub-sub-lead, each
// awaited. Resumed from each cut — replay-safe caller-owned brains
// making the same calls, refusals taken as answers — the run's pool and
// the sub-lead's carved pool are conserved, and the carved pool's
// committed tokens are what the sub-lead's children were charged: their
// settlements, a child left in doubt its ceiling, each once.
func TestNC17DepthThreeCarveFromEveryCut(t *testing.T) {
	const sub = supervise.NodeID("run1:s1:s2")
	grant := func(tokens, iterations int64) *supervise.SpawnBudget {
		return &supervise.SpawnBudget{Tokens: &tokens, Iterations: &iterations}
	}
	type outcome struct {
		run, carve ledger.Readout
		carved     bool
		tree       []supervise.WorkerSummary
	}
	run := func(dir string, resume bool) outcome {
		exec := supervise.ExecutorFunc(func(ctx context.Context, w supervise.Work) (supervise.WorkResult, error) {
			one, ten := int64(1), int64(10)
			return supervise.WorkResult{Text: w.Task + " DONE", Spent: ledger.Spend{Tokens: &ten, Iterations: &one}}, nil
		})
		var mu sync.Mutex
		var out outcome
		spawnAwait := func(ctx context.Context, c *supervise.Coordinator, a supervise.SpawnArgs) error {
			if _, err := c.Spawn(ctx, a); err != nil {
				var r *supervise.Refusal
				if errors.As(err, &r) {
					return nil // an answer: the brain goes on
				}
				return err
			}
			_, err := c.Await(ctx, supervise.AwaitArgs{Kinds: []string{supervise.EventSettled}, TimeoutMS: 60000})
			return err
		}
		lead := goLead(func(ctx context.Context, c *supervise.Coordinator, task string) (supervise.BrainReport, error) {
			var args []supervise.SpawnArgs
			switch task {
			case "lead":
				args = []supervise.SpawnArgs{{Profile: "lead", Task: "sub", Budget: grant(3000, 3)}}
			case "sub":
				args = []supervise.SpawnArgs{{Profile: "writer", Task: "w1"}, {Profile: "lead", Task: "subsub", Budget: grant(500, 1)},
					{Profile: "writer", Task: "w2"}}
			default:
				args = []supervise.SpawnArgs{{Profile: "writer", Task: "w4"}}
			}
			for _, a := range args {
				if err := spawnAwait(ctx, c, a); err != nil {
					return supervise.BrainReport{}, err
				}
			}
			return supervise.BrainReport{Text: task + " DONE"}, nil
		})
		root := supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, task string) (supervise.BrainReport, error) {
			if err := spawnAwait(ctx, c, supervise.SpawnArgs{Profile: "lead", Task: "lead", Key: "lead", Budget: grant(6000, 6)}); err != nil {
				return supervise.BrainReport{}, err
			}
			r := c.Readout()
			carve, ok := c.CarvedReadout(sub)
			mu.Lock()
			out.run, out.carve, out.carved = r, carve, ok
			mu.Unlock()
			return supervise.BrainReport{Text: "root done"}, nil
		})
		o := uncappedUSD(nc17Options(t, exec, root, lead, dir, resume))
		o.MaxDepth = 3
		res := nc17Supervise(t, o)
		mu.Lock()
		defer mu.Unlock()
		out.tree = res.Tree
		return out
	}
	check := func(t *testing.T, got outcome) {
		t.Helper()
		checkConservedReadout(t, got.run)
		if !got.carved {
			t.Fatalf("the sub-lead %s has no carved pool", sub)
		}
		checkConservedReadout(t, got.carve)
		var want int64
		for _, n := range got.tree {
			if n.Parent != sub {
				continue
			}
			switch {
			case n.Settlement != nil && n.Settlement.Spent.Tokens != nil:
				want += *n.Settlement.Spent.Tokens
			case n.Settlement != nil && n.Settlement.Spent.TokensFloor != nil:
				want += max(*n.Settlement.Spent.TokensFloor, *n.Reserved.Tokens)
			default:
				want += *n.Reserved.Tokens
			}
		}
		if c := got.carve.Channels[ledger.ChannelTokens]; c.Committed != want || c.Reserved != 0 {
			t.Errorf("the sub-lead's carved tokens %+v, want %d committed (its children's charges), none reserved", c, want)
		}
	}
	full := t.TempDir()
	check(t, run(full, false))
	total := journaltest.KeepRecords(t, full, 1<<30)
	for n := 1; n < total; n++ {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			dir := t.TempDir()
			journaltest.CopyRunDir(t, full, dir)
			journaltest.KeepRecords(t, dir, n)
			check(t, run(dir, true))
		})
	}
}

// §3.6 Cancellation (terminated[]: "node ids proven dead since the abort
// was issued; grows monotonically"), across a kill: a lead's writer went
// down under the abort and the process was killed before the lead's end
// (the record file still cancel_requested, naming nothing yet). The
// resumed run re-applies the request to the re-driven lead; its record
// names the writer the journal shows went down after the request, as
// well as what this process saw end — never fewer nodes than the
// journal proves dead.
func TestNC17CancelTerminatedKeepsJournaledSubtreeAcrossKill(t *testing.T) {
	const op = "op-cancel-lead"
	run := func(dir string, resume bool) {
		started := make(chan supervise.NodeID, 4)
		exec := supervise.ExecutorFunc(func(ctx context.Context, w supervise.Work) (supervise.WorkResult, error) {
			<-ctx.Done()
			return supervise.WorkResult{Spent: zeroSpent()}, context.Cause(ctx)
		})
		lead := goLead(func(ctx context.Context, c *supervise.Coordinator, task string) (supervise.BrainReport, error) {
			if _, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "writer", Task: "hang", Label: "w"}); err != nil {
				return supervise.BrainReport{}, err
			}
			started <- c.Self()
			<-ctx.Done()
			return supervise.BrainReport{}, context.Cause(ctx)
		})
		var got supervise.NodeID
		o := nc17Options(t, exec, nc17CancelLeadRoot(started, op, 20*time.Second, &got), lead, dir, resume)
		o.BudgetExempt = true
		nc17Supervise(t, o)
	}
	full := t.TempDir()
	run(full, false)
	const lead, writer = supervise.NodeID("run1:s1"), supervise.NodeID("run1:s1:s2")
	dir := t.TempDir()
	// Killed just after the writer's end (the first settlement).
	if file, ended := nc17CutCancelAt(t, full, dir, op, lead, supervise.KindSettled, 1); file != kernel.EffectCancelRequested || ended {
		t.Fatalf("the cut holds record %q, lead ended %v; want cancel_requested, not ended", file, ended)
	}
	run(dir, true)
	rec, err := supervise.ReadWorkerCancellation(context.Background(), dir, op)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Effect != kernel.EffectCancelled || !slices.Contains(rec.Terminated, writer) || !slices.Contains(rec.Terminated, lead) {
		t.Errorf("resumed record %+v, want cancelled naming %s (down under the abort before the kill) and %s", rec, writer, lead)
	}
}

// nc17Options are nestedOptions driven by root, every nested manager by
// lead, journaled in dir (resumed when resume is set).
func nc17Options(t *testing.T, exec supervise.Executor, root, lead supervise.Brain, dir string, resume bool) supervise.Options {
	t.Helper()
	o := nestedOptions(t, exec, nil, nil)
	o.Brain = root
	o.ManagerBrain = func(*profile.Profile) supervise.Brain { return lead }
	o.RunDir, o.Resume = dir, resume
	return o
}

// nc17Supervise runs o under a root manager that may spawn, failing t
// when the run returns an error.
func nc17Supervise(t *testing.T, o supervise.Options) supervise.SupervisedResult {
	t.Helper()
	res, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "ship", o)
	if err != nil {
		t.Fatal(err)
	}
	return res
}
