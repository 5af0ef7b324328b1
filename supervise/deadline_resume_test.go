package supervise_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentrt/agentrt/internal/journaltest"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/supervise"
)

// betaManager spawns beta (whose note fails the check), awaits it and
// answers.
func betaManager() *scripted.ChatModel {
	return scripted.NewChatModel(scripted.ChatScript{Turns: []scripted.ChatTurn{
		turn(call("c1", supervise.VerbSpawnWorker, map[string]any{"profile": "writer", "task": "write beta", "label": "b"}), managerUsage(10, 0, 0)),
		turn(call("c2", supervise.VerbAwaitEvent, map[string]any{"timeoutMs": 60000}), managerUsage(10, 0, 0)),
		turn(scripted.Text("done"), managerUsage(10, 0, 0)),
	}})
}

// deadlineRun is betaManager's run with a deadline an hour after its
// (fake) start, killed once beta's settlement was durable; it returns
// the run dir and the start.
func deadlineRun(t *testing.T) (string, time.Time) {
	t.Helper()
	dir := t.TempDir()
	o := baseOptions(t, newCounting(t, workerProvider(t)), betaManager())
	o.RunDir = dir
	start := time.Now().Truncate(time.Millisecond)
	o.Now = func() time.Time { return start }
	o.Deadline = start.Add(time.Hour)
	if _, err := supervise.Supervise(context.Background(), managerProfile(t, verbs2...), "ship", o); err != nil {
		t.Fatal(err)
	}
	journaltest.KeepThrough(t, dir, supervise.KindSettled, 1)
	return dir, start
}

// journaledTokens sums the tokens the run dir's journal charged: its
// settlements and the manager's turns (metered, or in its transcript).
func journaledTokens(t *testing.T, dir string) int64 {
	t.Helper()
	recs, _, err := supervise.ReadRunDir(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, r := range recs {
		if (r.Kind == supervise.KindSettled || r.Kind == supervise.KindMetered || r.Kind == supervise.KindTranscript) && r.Spent != nil && r.Spent.Tokens != nil {
			n += *r.Spent.Tokens
		}
	}
	if n == 0 {
		t.Fatal("the journal charged no tokens")
	}
	return n
}

// §3.6: "the original deadline and the wall clock from the original
// start hold" on resume. A run resumed after its journaled deadline
// passed (by the run's clock, Options.Now) ends at once as the
// deadline's no-winner (budget-exhausted): its brain is not driven,
// nothing more runs or is spent, and spentTotal.ms counts from the
// original start.
func TestResumePastTheDeadlineEndsAtOnce(t *testing.T) {
	dir, start := deadlineRun(t)
	second := newCounting(t, workerProvider(t))
	o := baseOptions(t, second, nil)
	o.RunDir, o.Resume = dir, true
	o.Now = func() time.Time { return start.Add(2 * time.Hour) }
	var driven atomic.Bool
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		driven.Store(true)
		return supervise.BrainReport{}, nil
	})
	got, err := supervise.Supervise(context.Background(), managerProfile(t, verbs2...), "ship", o)
	if err != nil {
		t.Fatal(err)
	}
	if driven.Load() || second.count("alpha")+second.count("beta") != 0 {
		t.Errorf("a run resumed past its deadline drove its brain (%v) or ran workers (alpha %d, beta %d)", driven.Load(), second.count("alpha"), second.count("beta"))
	}
	if got.Status != supervise.StatusNoWinner || got.Reason != supervise.ReasonBudgetExhausted || got.Error != nil {
		t.Errorf("status %s reason %s error %+v, want no-winner budget-exhausted", got.Status, got.Reason, got.Error)
	}
	if want := journaledTokens(t, dir); got.Spent.Tokens != want {
		t.Errorf("spent tokens %d, want %d (the journal's, nothing more)", got.Spent.Tokens, want)
	}
	if got.MS != (2 * time.Hour).Milliseconds() {
		t.Errorf("MS = %d, want %d (from the original start)", got.MS, (2 * time.Hour).Milliseconds())
	}
}

// Resumed before its deadline, a run has the original remainder of its
// time (by the run's clock), not a fresh deadline: the brain's context
// ends when the journaled deadline passes.
func TestResumeBeforeTheDeadlineKeepsTheRemainder(t *testing.T) {
	dir, start := deadlineRun(t)
	o := baseOptions(t, newCounting(t, workerProvider(t)), nil)
	o.RunDir, o.Resume = dir, true
	o.Now = func() time.Time { return start.Add(time.Hour - time.Minute) }
	var left time.Duration
	var has bool
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		var d time.Time
		d, has = ctx.Deadline()
		left = time.Until(d)
		return supervise.BrainReport{}, nil
	})
	if _, err := supervise.Supervise(context.Background(), managerProfile(t, verbs2...), "ship", o); err != nil {
		t.Fatal(err)
	}
	if !has || left > time.Minute || left <= 0 {
		t.Errorf("the resumed brain's context has a deadline %v, %v away; want the minute the run had left", has, left)
	}
}
