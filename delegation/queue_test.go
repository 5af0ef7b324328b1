package delegation_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/delegation"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/store"
	storememory "github.com/agentrt/agentrt/store/memory"
	"github.com/agentrt/agentrt/supervise"
)

// TestDelegateRunsToCompletion: OS-04 — a delegation runs the server's
// manager as one supervised run and completes only with a result that
// passed the server's check; the record carries the output, the run's
// spend (known here, so not null) and the run dir holding its journal.
func TestDelegateRunsToCompletion(t *testing.T) {
	ctx := deadline(t)
	f := newFixture(t, storememory.New(nil))
	q := open(t, f.config(t))
	s := must(q.Submit(ctx, delegation.Request{Intent: "write alpha"}))(t)
	if s.Reused || s.Delegation.State != delegation.StatePending || s.Delegation.Result != nil {
		t.Errorf("submitted: %+v", s)
	}
	d := settle(t, ctx, q, s.TaskID)
	if d.State != delegation.StateCompleted {
		t.Fatalf("state %s (%s), want completed", d.State, d.Failure)
	}
	r := d.Result
	if r == nil || r.Status != "winner" || !strings.Contains(r.Out, "DONE") || r.Workers != 1 || r.Down != 0 {
		t.Fatalf("result %+v", r)
	}
	// The worker's 12 tokens and the manager's 3 × 6 are reported; the
	// manager's model reports no cost, so the run's USD is unknown (null),
	// not 0, while what was charged for it is kept.
	if sp := r.SpentTotal; sp.Tokens == nil || *sp.Tokens != 30 || sp.USD != nil || sp.Charged.USD <= 0 {
		t.Errorf("spent %+v (tokens %v, usd %v): want tokens 30 and usd unknown", sp, deref(sp.Tokens), deref(sp.USD))
	}
	if d.StartedAt == nil || d.EndedAt == nil || d.Attempts != 1 || d.Resumed || d.Claim != nil {
		t.Errorf("record %+v", d)
	}
	if !journaled(ctx, d.RunDir, supervise.KindFinished) {
		t.Errorf("the run dir %s holds no finished journal record", d.RunDir)
	}
	if d.Budget.Tokens != 10_000 || d.Budget.Iterations != 10 || d.Budget.USD == nil || *d.Budget.USD != 1 {
		t.Errorf("budget %+v, want the caps", d.Budget)
	}
}

// TestDelegateIdempotency: the same key with the same request returns
// the same delegation (reused, nothing new runs); the same key with
// another request is refused with the key's path.
func TestDelegateIdempotency(t *testing.T) {
	ctx := deadline(t)
	f := newFixture(t, storememory.New(nil))
	q := open(t, f.config(t))
	req := delegation.Request{Intent: "write alpha", IdempotencyKey: "k-1", Budget: &delegation.BudgetRequest{Tokens: ptr[int64](5000)}}
	first := must(q.Submit(ctx, req))(t)
	again := must(q.Submit(ctx, req))(t)
	if again.TaskID != first.TaskID || !again.Reused || first.Reused {
		t.Errorf("retry: first %s (reused %v), again %s (reused %v)", first.TaskID, first.Reused, again.TaskID, again.Reused)
	}
	settle(t, ctx, q, first.TaskID)
	after := must(q.Submit(ctx, req))(t)
	if after.TaskID != first.TaskID || after.Delegation.State != delegation.StateCompleted {
		t.Errorf("a retry after the end returns the ended delegation: %s %s", after.TaskID, after.Delegation.State)
	}
	if n := f.exec.runs.Load(); n != 1 {
		t.Errorf("%d workers ran, want 1", n)
	}
	_, err := q.Submit(ctx, delegation.Request{Intent: "write beta", IdempotencyKey: "k-1"})
	var r *delegation.Refusal
	if !errors.As(err, &r) || r.Code != delegation.CodeIdempotencyConflict || r.Path != "/idempotencyKey" || !strings.Contains(r.Reason, first.TaskID) {
		t.Errorf("another request under the key: %v", err)
	}
	hist := must(q.History(ctx, delegation.HistoryOptions{}))(t)
	if len(hist) != 1 {
		t.Errorf("history has %d delegations, want 1", len(hist))
	}
}

// TestCheckRefusals: every refused request is a *Refusal with a code and
// the JSON pointer of the argument at fault.
func TestCheckRefusals(t *testing.T) {
	usd := 2.0
	caps := delegation.Budget{Tokens: 1000, Iterations: 5, USD: &usd}
	for _, tc := range []struct {
		name       string
		req        delegation.Request
		caps       delegation.Budget
		code, path string
	}{
		{"empty task", delegation.Request{Intent: " \n"}, caps, delegation.CodeInvalidArguments, "/intent"},
		{"huge task", delegation.Request{Intent: strings.Repeat("x", delegation.MaxIntentBytes+1)}, caps, delegation.CodeInvalidArguments, "/intent"},
		{"bad utf-8", delegation.Request{Intent: "a\xffb"}, caps, delegation.CodeInvalidArguments, "/intent"},
		{"bad key", delegation.Request{Intent: "t", IdempotencyKey: "a b"}, caps, delegation.CodeInvalidArguments, "/idempotencyKey"},
		{"long key", delegation.Request{Intent: "t", IdempotencyKey: strings.Repeat("k", 129)}, caps, delegation.CodeInvalidArguments, "/idempotencyKey"},
		{"zero tokens", delegation.Request{Intent: "t", Budget: &delegation.BudgetRequest{Tokens: ptr[int64](0)}}, caps, delegation.CodeInvalidArguments, "/budget/tokens"},
		{"tokens over cap", delegation.Request{Intent: "t", Budget: &delegation.BudgetRequest{Tokens: ptr[int64](1001)}}, caps, delegation.CodeBudgetOverCap, "/budget/tokens"},
		{"iterations over cap", delegation.Request{Intent: "t", Budget: &delegation.BudgetRequest{Iterations: ptr[int64](6)}}, caps, delegation.CodeBudgetOverCap, "/budget/iterations"},
		{"negative usd", delegation.Request{Intent: "t", Budget: &delegation.BudgetRequest{USD: ptr(-1.0)}}, caps, delegation.CodeInvalidArguments, "/budget/usd"},
		{"usd over cap", delegation.Request{Intent: "t", Budget: &delegation.BudgetRequest{USD: ptr(2.5)}}, caps, delegation.CodeBudgetOverCap, "/budget/usd"},
		{"usd without a cap", delegation.Request{Intent: "t", Budget: &delegation.BudgetRequest{USD: ptr(0.5)}}, delegation.Budget{Tokens: 1000, Iterations: 5}, delegation.CodeBudgetOverCap, "/budget/usd"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := delegation.Check(tc.req, tc.caps)
			var r *delegation.Refusal
			if !errors.As(err, &r) {
				t.Fatalf("Check = %v, want a *Refusal", err)
			}
			if r.Code != tc.code || r.Path != tc.path || r.Reason == "" {
				t.Errorf("refusal %+v, want code %s at %s", r, tc.code, tc.path)
			}
		})
	}
	b, digest, err := delegation.Check(delegation.Request{Intent: "t", Budget: &delegation.BudgetRequest{Tokens: ptr[int64](10), USD: ptr(0.5)}}, caps)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(delegation.Budget{Tokens: 10, Iterations: 5, USD: ptr(0.5)}, b); diff != "" {
		t.Errorf("effective budget (-want +got):\n%s", diff)
	}
	if !strings.HasPrefix(digest, "sha256:") {
		t.Errorf("digest %q", digest)
	}
}

// TestCancel: a pending delegation is cancelled at once; a running one
// is recorded cancelled at once and its run is stopped, its result
// still recorded when it returns; an ended one is not_live.
func TestCancel(t *testing.T) {
	ctx := deadline(t)
	f := newFixture(t, storememory.New(nil))
	q := open(t, f.config(t)) // one runner: the slow delegation holds it
	running := must(q.Submit(ctx, delegation.Request{Intent: "write slow"}))(t)
	waitFor(t, ctx, "the slow worker to start", func() bool { return journaled(ctx, running.Delegation.RunDir, supervise.KindSpawned) })
	pending := must(q.Submit(ctx, delegation.Request{Intent: "write alpha"}))(t)

	d, effect, err := q.Cancel(ctx, pending.TaskID, "not needed")
	if err != nil || effect != kernel.EffectCancelled || d.State != delegation.StateCancelled || d.Cancellation == nil || d.Cancellation.From != delegation.StatePending {
		t.Errorf("cancel pending: %v %s %+v", err, effect, d)
	}
	start := time.Now()
	d, effect, err = q.Cancel(ctx, running.TaskID, "changed my mind")
	if err != nil || effect != kernel.EffectCancelRequested || d.State != delegation.StateCancelled {
		t.Errorf("cancel running: %v %s %s", err, effect, d.State)
	}
	waitFor(t, ctx, "the cancelled run's result", func() bool {
		d = must(q.Get(ctx, running.TaskID))(t)
		return d.Result != nil
	})
	if d.State != delegation.StateCancelled || d.Result.Status != "no-winner" || d.Cancellation.Reason != "changed my mind" {
		t.Errorf("cancelled running delegation: %s %+v", d.State, d.Result)
	}
	if el := time.Since(start); el > 20*time.Second {
		t.Errorf("the cancelled run took %s to stop; the worker waits a minute", el)
	}
	_, effect, err = q.Cancel(ctx, running.TaskID, "")
	if err != nil || effect != kernel.EffectNotLive {
		t.Errorf("cancel again: %v %s, want not_live", err, effect)
	}
	if n := f.exec.runs.Load(); n != 1 {
		t.Errorf("%d workers ran; the cancelled pending delegation must not run", n)
	}
	_, _, err = q.Cancel(ctx, "dlg_nobody", "")
	var r *delegation.Refusal
	if !errors.As(err, &r) || r.Code != delegation.CodeUnknownDelegation {
		t.Errorf("cancel unknown: %v", err)
	}
}

// TestRestartRestore: a queue restarted on the same store (SQLite,
// PostgreSQL) lists the delegations of the one before, resumes the one
// that was running through its journal — the worker that had settled is
// replayed, not run again — and never re-runs work it cannot account
// for: a running delegation whose earlier attempt left no journal ends
// interrupted.
func TestRestartRestore(t *testing.T) {
	for _, sk := range stores() {
		t.Run(sk.name, func(t *testing.T) {
			ctx := deadline(t)
			s := sk.open(t)
			f1 := newFixture(t, s)
			cfg1 := f1.config(t)
			// One runner: the held delegation keeps it, so the last
			// submission stays pending.
			hold := make(chan struct{})
			// The first process's manager spawns the writer under key
			// w1, sees it settle, then is still thinking when the
			// process stops.
			cfg1.Brain = func(task string) (supervise.Brain, error) {
				return supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, task string) (supervise.BrainReport, error) {
					if _, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "writer", Task: task, Key: "w1"}); err != nil {
						return supervise.BrainReport{}, err
					}
					if _, err := c.Await(ctx, supervise.AwaitArgs{TimeoutMS: 60_000}); err != nil {
						return supervise.BrainReport{}, err
					}
					if strings.Contains(task, "hold") {
						select {
						case <-hold:
						case <-ctx.Done():
						}
						return supervise.BrainReport{}, ctx.Err()
					}
					return supervise.BrainReport{Text: "done"}, nil
				}), nil
			}
			q1, err := delegation.Open(cfg1)
			if err != nil {
				t.Fatal(err)
			}
			done := must(q1.Submit(ctx, delegation.Request{Intent: "write alpha", IdempotencyKey: "done-1"}))(t)
			if d := settle(t, ctx, q1, done.TaskID); d.State != delegation.StateCompleted {
				t.Fatalf("first delegation %s: %s", d.State, d.Failure)
			}
			held := must(q1.Submit(ctx, delegation.Request{Intent: "write alpha and hold"}))(t)
			waitFor(t, ctx, "the held delegation's worker to settle", func() bool { return journaled(ctx, held.Delegation.RunDir, supervise.KindSettled) })
			// A delegation an earlier process claimed, whose journal
			// is not here.
			orphan := must(q1.Submit(ctx, delegation.Request{Intent: "write alpha", IdempotencyKey: "orphan"}))(t)
			if err := q1.Close(ctx); err != nil {
				t.Fatal(err)
			}
			workersBefore := f1.exec.runs.Load()
			// The orphan is pending; make it look claimed by a process
			// that died and left no journal here.
			if d := must(q1.Get(ctx, orphan.TaskID))(t); d.State != delegation.StatePending {
				t.Fatalf("orphan %s, want pending", d.State)
			}
			if _, err := s.UpdateRun(ctx, orphan.TaskID, func(r *store.Run) error {
				r.Status = store.StatusRunning
				doc := r.Doc.Without("claim").Without("attempts")
				v := must(canonValue(`{"owner": "dead", "until": "2000-01-01T00:00:00Z"}`))(t)
				r.Doc = doc.With("claim", v).With("attempts", must(canonValue(`1`))(t))
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			os.RemoveAll(orphan.Delegation.RunDir)
			if d := must(q1.Get(ctx, held.TaskID))(t); d.State != delegation.StateRunning || d.Claim == nil || d.Claim.Until.After(time.Now()) {
				t.Errorf("after the stop the held delegation is %s with claim %+v; want running, its claim released", d.State, d.Claim)
			}

			f2 := newFixture(t, s)
			f2.runDir = f1.runDir
			q2 := open(t, f2.config(t))
			hist := must(q2.History(ctx, delegation.HistoryOptions{}))(t)
			var ids []string
			for _, d := range hist {
				ids = append(ids, d.TaskID)
			}
			if diff := cmp.Diff([]string{orphan.TaskID, held.TaskID, done.TaskID}, ids); diff != "" {
				t.Errorf("history after the restart, newest first (-want +got):\n%s", diff)
			}
			d := settle(t, ctx, q2, held.TaskID)
			if d.State != delegation.StateCompleted || !d.Resumed || d.Attempts != 2 {
				t.Errorf("held delegation: %s resumed %v attempts %d (%s)", d.State, d.Resumed, d.Attempts, d.Failure)
			}
			if n := f2.exec.runs.Load(); n != 0 {
				t.Errorf("the restarted queue ran %d workers; the settled one is replayed from the journal", n)
			}
			o := settle(t, ctx, q2, orphan.TaskID)
			if o.State != delegation.StateInterrupted || !strings.Contains(o.Failure, "not run again") {
				t.Errorf("orphan: %s %q, want interrupted", o.State, o.Failure)
			}
			first := must(q2.Get(ctx, done.TaskID))(t)
			if first.State != delegation.StateCompleted || first.Attempts != 1 {
				t.Errorf("the completed delegation changed: %s attempts %d", first.State, first.Attempts)
			}
			if workersBefore != 2 { // done's and held's
				t.Errorf("the first process ran %d workers, want 2", workersBefore)
			}
		})
	}
}

// holdingBrain is a manager that thinks until its run is stopped.
func holdingBrain(string) (supervise.Brain, error) {
	return supervise.BrainFunc(func(ctx context.Context, _ *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		<-ctx.Done()
		return supervise.BrainReport{}, ctx.Err()
	}), nil
}

// TestCancelFromAnotherProcess: §9 "cancel marks cancelled even if the
// runner ignores abort" across processes — a queue on the same store
// cancels a delegation another queue runs; the record is cancelled at
// once and the holder stops its run on its next renewal.
func TestCancelFromAnotherProcess(t *testing.T) {
	ctx := deadline(t)
	f := newFixture(t, storememory.New(nil))
	cfg := f.config(t)
	cfg.Brain = holdingBrain
	a, b := open(t, cfg), open(t, cfg)
	sub := must(a.Submit(ctx, delegation.Request{Intent: "write alpha"}))(t)
	var q2 *delegation.Queue // the queue that does not hold it
	waitFor(t, ctx, "the delegation to run", func() bool {
		d := must(a.Get(ctx, sub.TaskID))(t)
		if d.State != delegation.StateRunning || d.Claim == nil {
			return false
		}
		q2 = a
		if d.Claim.Owner == a.Owner() {
			q2 = b
		}
		return true
	})
	d, effect, err := q2.Cancel(ctx, sub.TaskID, "from elsewhere")
	if err != nil || effect != kernel.EffectCancelRequested || d.State != delegation.StateCancelled {
		t.Fatalf("cancel: %v %s %s", err, effect, d.State)
	}
	waitFor(t, ctx, "the holder to stop the run", func() bool { return must(q2.Get(ctx, sub.TaskID))(t).Result != nil })
	if d := must(q2.Get(ctx, sub.TaskID))(t); d.State != delegation.StateCancelled || d.Result.Status != "no-winner" || d.Claim != nil {
		t.Errorf("after the holder stopped: %s %+v claim %+v", d.State, d.Result, d.Claim)
	}
}

// TestConcurrentSameKey: racing submissions under one key record one
// delegation; every caller gets its id, exactly one as new.
func TestConcurrentSameKey(t *testing.T) {
	ctx := deadline(t)
	q := open(t, newFixture(t, storememory.New(nil)).config(t))
	type got struct {
		s   delegation.Submitted
		err error
	}
	results := make(chan got, 8)
	for range 8 {
		go func() {
			s, err := q.Submit(ctx, delegation.Request{Intent: "write alpha", IdempotencyKey: "race"})
			results <- got{s, err}
		}()
	}
	ids, fresh := map[string]bool{}, 0
	for range 8 {
		r := <-results
		if r.err != nil {
			t.Fatal(r.err)
		}
		ids[r.s.TaskID] = true
		if !r.s.Reused {
			fresh++
		}
	}
	if len(ids) != 1 || fresh != 1 {
		t.Errorf("%d ids, %d new; want one delegation, submitted once", len(ids), fresh)
	}
	if hist := must(q.History(ctx, delegation.HistoryOptions{}))(t); len(hist) != 1 {
		t.Errorf("history holds %d delegations", len(hist))
	}
}

// TestBounds: admission stops at MaxPending (queue-full, a refusal), and
// a delegation's run ends at MaxRunTime however long its worker would
// take.
func TestBounds(t *testing.T) {
	ctx := deadline(t)
	f := newFixture(t, storememory.New(nil))
	cfg := f.config(t)
	cfg.MaxPending = 2
	cfg.MaxRunTime = 500 * time.Millisecond
	q := open(t, cfg)
	first := must(q.Submit(ctx, delegation.Request{Intent: "write slow"}))(t)
	waitFor(t, ctx, "the first delegation to run", func() bool { return must(q.Get(ctx, first.TaskID))(t).State == delegation.StateRunning })
	must(q.Submit(ctx, delegation.Request{Intent: "write slow 2"}))(t)
	must(q.Submit(ctx, delegation.Request{Intent: "write slow 3"}))(t)
	_, err := q.Submit(ctx, delegation.Request{Intent: "write slow 4"})
	var r *delegation.Refusal
	if !errors.As(err, &r) || r.Code != delegation.CodeQueueFull {
		t.Errorf("a third pending delegation: %v, want queue-full", err)
	}
	start := time.Now()
	d := settle(t, ctx, q, first.TaskID)
	if d.State != delegation.StateFailed || d.Result == nil || d.Result.Status != "no-winner" {
		t.Errorf("past its deadline: %s %+v", d.State, d.Result)
	}
	if el := time.Since(start); el > 30*time.Second {
		t.Errorf("the run ended %s after its deadline; the worker would take a minute", el)
	}
}

// TestFeedback: ratings are kept with the delegation in order, each
// checked (score in [0, 1], a known label and rater, bounded notes), at
// most MaxFeedback of them.
func TestFeedback(t *testing.T) {
	ctx := deadline(t)
	q := open(t, newFixture(t, storememory.New(nil)).config(t))
	id := must(q.Submit(ctx, delegation.Request{Intent: "write alpha"}))(t).TaskID
	for _, tc := range []struct {
		fb   delegation.Feedback
		path string
	}{
		{delegation.Feedback{Score: 1.5, Notes: "x", By: "user"}, "/rating/score"},
		{delegation.Feedback{Score: 0.5, Label: "great", Notes: "x", By: "user"}, "/rating/label"},
		{delegation.Feedback{Score: 0.5, Notes: strings.Repeat("n", delegation.MaxNotesBytes+1), By: "user"}, "/rating/notes"},
		{delegation.Feedback{Score: 0.5, Notes: "x", By: "robot"}, "/by"},
	} {
		_, err := q.AddFeedback(ctx, id, tc.fb)
		var r *delegation.Refusal
		if !errors.As(err, &r) || r.Code != delegation.CodeInvalidArguments || r.Path != tc.path {
			t.Errorf("%+v: %v, want a refusal at %s", tc.fb, err, tc.path)
		}
	}
	for i := range delegation.MaxFeedback {
		d := must(q.AddFeedback(ctx, id, delegation.Feedback{Score: float64(i) / delegation.MaxFeedback, Label: "good", Notes: "fine", By: "agent"}))(t)
		if len(d.Feedback) != i+1 || d.Feedback[i].At.IsZero() {
			t.Fatalf("after %d ratings: %d kept", i+1, len(d.Feedback))
		}
	}
	_, err := q.AddFeedback(ctx, id, delegation.Feedback{Score: 1, Notes: "one more", By: "user"})
	var r *delegation.Refusal
	if !errors.As(err, &r) || r.Code != delegation.CodeFeedbackFull {
		t.Errorf("rating %d: %v, want feedback-full", delegation.MaxFeedback+1, err)
	}
}

// TestTakeoverWhileHeld: a delegation whose claim another holder took
// while its first holder still runs is not failed for the journal lock
// that holder keeps: it is handed back until the first holder, noticing
// the loss, stops — journaling nothing more, its end included, since
// the run is no longer its own — and then it resumes.
func TestTakeoverWhileHeld(t *testing.T) {
	ctx := deadline(t)
	s := storememory.New(nil)
	f := newFixture(t, s)
	cfg := f.config(t)
	cfg.Brain = holdingBrain
	q1 := open(t, cfg)
	sub := must(q1.Submit(ctx, delegation.Request{Intent: "write alpha"}))(t)
	waitFor(t, ctx, "the delegation to run", func() bool {
		return journaled(ctx, must(q1.Get(ctx, sub.TaskID))(t).RunDir, supervise.KindRunStarted)
	})
	q2 := open(t, cfg)
	// The first holder's claim is taken from it (as after renewals that
	// failed for a claim's length).
	if _, err := s.UpdateRun(ctx, sub.TaskID, func(r *store.Run) error {
		r.Doc = r.Doc.With("claim", must(canonValue(`{"owner": "ghost", "until": "2000-01-01T00:00:00Z"}`))(t))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "a new holder to resume it", func() bool {
		d := must(q2.Get(ctx, sub.TaskID))(t)
		if d.State != delegation.StateRunning {
			t.Fatalf("the delegation became %s: %s", d.State, d.Failure)
		}
		if journaled(ctx, d.RunDir, supervise.KindFinished) {
			t.Fatal("the journal holds an end: the holder that lost the claim journaled one, or the run ended")
		}
		return d.Claim != nil && d.Claim.Owner != "ghost" && d.Attempts >= 2 && d.Claim.Until.After(time.Now())
	})
	d, _, err := q2.Cancel(ctx, sub.TaskID, "")
	if err != nil || d.Failure != "" {
		t.Errorf("cancel: %v, failure %q", err, d.Failure)
	}
}
