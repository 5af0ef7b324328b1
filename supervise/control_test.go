package supervise_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/supervise"
)

// waitLimit bounds every wait of these tests; each returns as soon as
// the awaited thing happens.
const waitLimit = 2 * time.Minute

// inboxExecutor's workers take messages: a "quick" task finishes at
// once; any other runs until its context ends or it is told "finish".
// A "stubborn" task ignores its context until release is closed.
type inboxExecutor struct {
	release chan struct{}

	mu    sync.Mutex
	inbox map[supervise.NodeID]chan string
	got   map[supervise.NodeID][]string
	// opened holds, per worker, a channel closed once its inbox opened.
	opened map[supervise.NodeID]chan struct{}
}

func newInboxExecutor() *inboxExecutor {
	return &inboxExecutor{release: make(chan struct{}), inbox: map[supervise.NodeID]chan string{}, got: map[supervise.NodeID][]string{},
		opened: map[supervise.NodeID]chan struct{}{}}
}

// openedLocked is node's inbox-opened signal; e.mu is held.
func (e *inboxExecutor) openedLocked(node supervise.NodeID) chan struct{} {
	ch, ok := e.opened[node]
	if !ok {
		ch = make(chan struct{})
		e.opened[node] = ch
	}
	return ch
}

func isClosed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// awaitInbox waits until node's Execute opened its inbox (it stays
// open until that Execute returns).
func (e *inboxExecutor) awaitInbox(ctx context.Context, node supervise.NodeID) error {
	e.mu.Lock()
	ch := e.openedLocked(node)
	e.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("worker %s's inbox never opened: %w", node, context.Cause(ctx))
	}
}

func workSpend() ledger.Spend {
	t, i, u := int64(10), int64(1), int64(0)
	return ledger.Spend{Tokens: &t, Iterations: &i, MicroUSD: &u}
}

func (e *inboxExecutor) Execute(ctx context.Context, w supervise.Work) (supervise.WorkResult, error) {
	if strings.Contains(w.Task, "quick") {
		return supervise.WorkResult{Text: "quick DONE", Spent: workSpend()}, nil
	}
	ch := make(chan string, 8)
	e.mu.Lock()
	e.inbox[w.Node] = ch
	if o := e.openedLocked(w.Node); !isClosed(o) {
		close(o) // a worker resumed under the same id opens it again
	}
	e.mu.Unlock()
	defer func() {
		e.mu.Lock()
		delete(e.inbox, w.Node)
		e.mu.Unlock()
	}()
	if strings.Contains(w.Task, "stubborn") {
		<-e.release
		// Failed, so its late settlement writes nothing into the run
		// dir the test is removing.
		return supervise.WorkResult{Spent: workSpend()}, errors.New("released after the run ended")
	}
	for {
		select {
		case <-ctx.Done():
			return supervise.WorkResult{Spent: workSpend()}, context.Cause(ctx)
		case m := <-ch:
			e.mu.Lock()
			e.got[w.Node] = append(e.got[w.Node], m)
			e.mu.Unlock()
			if m == "finish" {
				return supervise.WorkResult{Text: "finished DONE", Spent: workSpend()}, nil
			}
		}
	}
}

func (e *inboxExecutor) Deliver(ctx context.Context, node supervise.NodeID, msg string) bool {
	e.mu.Lock()
	ch, ok := e.inbox[node]
	e.mu.Unlock()
	if !ok {
		return false
	}
	select {
	case ch <- msg:
		return true
	case <-ctx.Done():
		return false
	}
}

func (e *inboxExecutor) messages(node supervise.NodeID) []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.got[node])
}

// liveRun is a supervised run in the background: its brain spawns a
// quick worker (labelled "quick") and waits for it, spawns one worker per
// further task (labelled by its task), reports ready, and then waits
// until release is closed or the run is cancelled.
type liveRun struct {
	dir     string
	ready   chan struct{}
	release chan struct{}
	done    chan struct{}
	res     supervise.SupervisedResult
	err     error
	coord   *supervise.Coordinator
}

func startLiveRun(t *testing.T, exec supervise.Executor, grace time.Duration, tasks ...string) *liveRun {
	t.Helper()
	return startLiveRunWith(t, exec, grace, nil, tasks...)
}

// startLiveRunWith is startLiveRun whose brain, when before is set,
// calls it once its workers run and returns at once; the run then does
// not scan its control files, so only run end sees what before wrote.
func startLiveRunWith(t *testing.T, exec supervise.Executor, grace time.Duration, before func(dir string) error, tasks ...string) *liveRun {
	t.Helper()
	return startLiveRunOpts(t, exec, grace, before, nil, tasks...)
}

// startLiveRunOpts is startLiveRunWith whose options mod, when set,
// changes before the run starts.
func startLiveRunOpts(t *testing.T, exec supervise.Executor, grace time.Duration, before func(dir string) error, mod func(*supervise.Options), tasks ...string) *liveRun {
	t.Helper()
	r := &liveRun{dir: t.TempDir(), ready: make(chan struct{}), release: make(chan struct{}), done: make(chan struct{})}
	writer, err := profile.Parse([]byte(writerProfile))
	if err != nil {
		t.Fatal(err)
	}
	manager, err := processManager()
	if err != nil {
		t.Fatal(err)
	}
	tokens, iterations, perTokens, perIterations := int64(10_000), int64(20), int64(100), int64(1)
	o := supervise.Options{
		Budget:    ledger.Budget{Tokens: &tokens, Iterations: &iterations},
		PerWorker: ledger.Budget{Tokens: &perTokens, Iterations: &perIterations},
		Profiles:  map[string]*profile.Profile{"writer": writer}, Deliverable: doneCheck, Executor: exec,
		RunDir: r.dir, RunID: "run1", SettleGrace: grace,
		Brain: supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
			r.coord = c
			if _, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "writer", Task: "quick", Label: "quick"}); err != nil {
				return supervise.BrainReport{}, err
			}
			if _, err := c.Await(ctx, supervise.AwaitArgs{TimeoutMS: waitLimit.Milliseconds()}); err != nil {
				return supervise.BrainReport{}, err
			}
			for _, task := range tasks {
				sp, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "writer", Task: task, Label: task})
				if err != nil {
					return supervise.BrainReport{}, err
				}
				// Ready means steerable: a spawn returns before its
				// worker's Execute opened the inbox a steer is
				// delivered to, so wait for it (else a steer sent at
				// once is refused — a race of the test's executor).
				if ie, ok := exec.(*inboxExecutor); ok {
					if err := ie.awaitInbox(ctx, sp.WorkerID); err != nil {
						return supervise.BrainReport{}, err
					}
				}
			}
			if before != nil {
				if err := before(r.dir); err != nil {
					return supervise.BrainReport{}, err
				}
				return supervise.BrainReport{Text: "requests written"}, nil
			}
			close(r.ready)
			select {
			case <-r.release:
				return supervise.BrainReport{Text: "released"}, nil
			case <-ctx.Done():
				return supervise.BrainReport{}, context.Cause(ctx)
			}
		}),
	}
	if mod != nil {
		mod(&o)
	}
	runCtx := context.Background()
	if before != nil {
		runCtx = supervise.WithoutControlScan(runCtx)
		close(r.ready)
	}
	go func() {
		defer close(r.done)
		r.res, r.err = supervise.Supervise(runCtx, manager, "t", o)
	}()
	t.Cleanup(func() {
		r.finish(t)
	})
	select {
	case <-r.ready:
	case <-r.done:
		t.Fatalf("the run ended before it was ready: %v %+v", r.err, r.res)
	case <-time.After(waitLimit):
		t.Fatal("the run never became ready")
	}
	return r
}

// finish lets the brain return and waits for the run's result.
func (r *liveRun) finish(t *testing.T) supervise.SupervisedResult {
	t.Helper()
	select {
	case <-r.release:
	default:
		close(r.release)
	}
	return r.wait(t)
}

func (r *liveRun) wait(t *testing.T) supervise.SupervisedResult {
	t.Helper()
	select {
	case <-r.done:
	case <-time.After(waitLimit):
		t.Fatal("the run never ended")
	}
	if r.err != nil {
		t.Fatal(r.err)
	}
	return r.res
}

// journaled returns the Data of the run's journal records of kind.
func (r *liveRun) journaled(kind string) []supervise.Record {
	return r.coord.ReadJournal(supervise.JournalArgs{Kinds: []string{kind}, Limit: supervise.MaxJournalPage}).Rows
}

// eventually polls f until it reports true, at most waitLimit.
func eventually(t *testing.T, what string, f func() (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		ok, err := f()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, waitLimit)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// awaitSteer waits until the supervisor answered a steer with more than
// its claim.
func awaitSteer(t *testing.T, dir, op string) supervise.SteerAck {
	t.Helper()
	var ack *supervise.SteerAck
	eventually(t, "steer "+op+" acknowledged", func() (bool, error) {
		var err error
		ack, err = supervise.ReadSteerAck(context.Background(), dir, op)
		return ack != nil && ack.Effect != supervise.SteerUnknown, err
	})
	return *ack
}

var steerEffects = []supervise.SteerEffect{supervise.SteerUnknown, supervise.SteerDelivered, supervise.SteerNotLive,
	supervise.SteerUnsupported, supervise.SteerRefused}

// Behaviour 48: a steer retried with the same operation id and body
// returns the original request; a changed body fails; the
// acknowledgement's effect is one of the five; steering a settled
// worker yields not_live.
func TestSteerBehaviour48(t *testing.T) {
	ctx := context.Background()
	exec := newInboxExecutor()
	run := startLiveRun(t, exec, 0, "long")

	first, err := supervise.WriteWorkerSteer(ctx, run.dir, "long", supervise.WorkerSteer{OperationID: "op-long", Message: "focus on tests"})
	if err != nil {
		t.Fatal(err)
	}
	again, err := supervise.WriteWorkerSteer(ctx, run.dir, "long", supervise.WorkerSteer{OperationID: "op-long", Message: "focus on tests"})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(first, again); diff != "" {
		t.Errorf("same-body retry did not return the original request (-first +again):\n%s", diff)
	}
	_, err = supervise.WriteWorkerSteer(ctx, run.dir, "long", supervise.WorkerSteer{OperationID: "op-long", Message: "something else"})
	var conflict *supervise.ConflictError
	if !errors.As(err, &conflict) || conflict.OperationID != "op-long" {
		t.Errorf("changed body: err %v, want a *ConflictError for op-long", err)
	}

	cases := []struct {
		name, op, worker string
		want             supervise.SteerEffect
	}{
		{"live worker by label", "op-long", "long", supervise.SteerDelivered},
		{"settled worker", "op-quick", "run1:s1", supervise.SteerNotLive},
		{"the manager", "op-root", "run1", supervise.SteerUnsupported},
		{"no such worker", "op-ghost", "ghost", supervise.SteerRefused},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req, err := supervise.WriteWorkerSteer(ctx, run.dir, tc.worker, supervise.WorkerSteer{OperationID: tc.op, Message: "focus on tests"})
			if err != nil {
				t.Fatal(err)
			}
			ack := awaitSteer(t, run.dir, tc.op)
			if ack.Effect != tc.want || !slices.Contains(steerEffects, ack.Effect) {
				t.Errorf("effect %q (%s), want %q", ack.Effect, ack.Detail, tc.want)
			}
			if ack.OperationID != tc.op || ack.RequestDigest != req.RequestDigest || ack.RequestedAt != req.At {
				t.Errorf("ack %+v does not answer request %+v", ack, req)
			}
		})
	}
	if got := exec.messages("run1:s2"); !cmp.Equal(got, []string{"focus on tests"}) {
		t.Errorf("the live worker's inbox got %q, want the message once", got)
	}

	res := run.finish(t)
	if res.Status != supervise.StatusNoWinner && res.Status != supervise.StatusWinner {
		t.Errorf("status %q", res.Status)
	}
	if n, m := len(run.journaled(supervise.KindSteerRequested)), len(run.journaled(supervise.KindSteerAcknowledged)); n != 4 || m != 4 {
		t.Errorf("journaled %d steer requests and %d acknowledgements, want 4 and 4", n, m)
	}
}

// Behaviour 48: a malformed request is refused before anything is
// written, and a request no supervisor has seen has no acknowledgement.
func TestSteerRequestValidationBehaviour48(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		s    supervise.WorkerSteer
	}{
		{"empty operation id", supervise.WorkerSteer{Message: "m"}},
		{"operation id with a slash", supervise.WorkerSteer{OperationID: "a/b", Message: "m"}},
		{"empty message", supervise.WorkerSteer{OperationID: "op"}},
	} {
		if _, err := supervise.WriteWorkerSteer(ctx, dir, "w", tc.s); !errors.Is(err, supervise.ErrInvalidControl) {
			t.Errorf("%s: err %v, want ErrInvalidControl", tc.name, err)
		}
	}
	// A request published while no supervisor runs has no
	// acknowledgement.
	if _, err := supervise.WriteWorkerSteer(ctx, dir, "w", supervise.WorkerSteer{OperationID: "op", Message: "m"}); err != nil {
		t.Fatal(err)
	}
	if ack, err := supervise.ReadSteerAck(ctx, dir, "op"); err != nil || ack != nil {
		t.Errorf("ack %+v, %v; want none while nothing runs", ack, err)
	}
}

// Behaviour 49: cancelling a live worker applies once (a repeated
// operation id appends nothing and returns the same record), reaches
// cancelled only when the worker's down state is observed, and a worker
// already gone acknowledges not_live. A changed request under the same
// id fails.
func TestCancelWorkerBehaviour49(t *testing.T) {
	ctx := context.Background()
	exec := newInboxExecutor()
	run := startLiveRun(t, exec, 0, "long", "other")

	rec, err := supervise.CancelWorker(ctx, run.dir, "long", "op-c1", supervise.CancelOptions{Reason: "wrong approach", Source: "operator"})
	if err != nil {
		t.Fatal(err)
	}
	if rec.Effect == kernel.EffectCancelled || rec.Effect == kernel.EffectNotLive {
		// The record can only be this far along if the run resolved it.
		if rec.WorkerID == "" {
			t.Errorf("record %+v resolved without a worker", rec)
		}
	}
	var final supervise.WorkerCancellation
	eventually(t, "the cancellation is observed", func() (bool, error) {
		final, err = supervise.ReadWorkerCancellation(ctx, run.dir, "op-c1")
		return final.Effect == kernel.EffectCancelled, err
	})
	want := supervise.WorkerCancellation{OperationID: "op-c1", Worker: "long", Effect: kernel.EffectCancelled, WorkerID: "run1:s2",
		Reason: "wrong approach", Terminated: []supervise.NodeID{"run1:s2"}}
	if diff := cmp.Diff(want, final, cmpIgnoreTimes); diff != "" {
		t.Errorf("record (-want +got):\n%s", diff)
	}
	again, err := supervise.CancelWorker(ctx, run.dir, "long", "op-c1", supervise.CancelOptions{Reason: "wrong approach", Source: "operator"})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(final, again); diff != "" {
		t.Errorf("the retry returned another record (-first +retry):\n%s", diff)
	}
	_, err = supervise.CancelWorker(ctx, run.dir, "other", "op-c1", supervise.CancelOptions{Reason: "wrong approach", Source: "operator"})
	var conflict *supervise.ConflictError
	if !errors.As(err, &conflict) {
		t.Errorf("same id, other worker: err %v, want *ConflictError", err)
	}
	if o, err := run.coord.Observe("run1:s3"); err != nil || o.Status != supervise.StateRunning {
		t.Errorf("the sibling %+v, %v; want it still running", o, err)
	}

	// A worker already gone.
	if _, err := supervise.CancelWorker(ctx, run.dir, "run1:s1", "op-c2", supervise.CancelOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the settled worker's cancellation is answered", func() (bool, error) {
		r, err := supervise.ReadWorkerCancellation(ctx, run.dir, "op-c2")
		if r.Effect == kernel.EffectCancelled || r.Effect == kernel.EffectCancelRequested {
			return false, fmt.Errorf("a settled worker got %q", r.Effect)
		}
		return r.Effect == kernel.EffectNotLive, err
	})

	res := run.finish(t)
	if lines := countLines(t, filepath.Join(run.dir, supervise.CancelRequestsFile)); lines != 2 {
		t.Errorf("%d request lines, want 2 (the retry appends nothing)", lines)
	}
	if n := len(run.journaled(supervise.KindCancelRequested)); n != 2 {
		t.Errorf("journaled %d cancel requests, want 2 (applied once each)", n)
	}
	var cancelled int
	for _, w := range res.Tree {
		if w.State == supervise.StateCancelled && w.ID == "run1:s2" {
			cancelled++
		}
	}
	if cancelled != 1 {
		t.Errorf("tree %+v: want run1:s2 cancelled", res.Tree)
	}
}

var cmpIgnoreTimes = cmp.FilterPath(func(p cmp.Path) bool {
	s := p.String()
	return s == "RequestedAt" || s == "ObservedAt" || s == "Detail"
}, cmp.Ignore())

func countLines(t *testing.T, path string) int {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(data), "\n")
}

// Behaviour 49: a request no run resolved stays unknown, never success;
// when the run ends before a worker's end is observed, the open request
// expires unknown.
func TestCancelWorkerUnresolvedStaysUnknownBehaviour49(t *testing.T) {
	ctx := context.Background()
	t.Run("no run", func(t *testing.T) {
		dir := t.TempDir()
		rec, err := supervise.CancelWorker(ctx, dir, "w", "op-1", supervise.CancelOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if rec.Effect != kernel.EffectUnknown {
			t.Errorf("effect %q, want unknown", rec.Effect)
		}
		if _, err := supervise.ReadWorkerCancellation(ctx, dir, "op-2"); !errors.Is(err, supervise.ErrUnknownOperation) {
			t.Errorf("never requested: err %v, want ErrUnknownOperation", err)
		}
	})
	t.Run("run ends first", func(t *testing.T) {
		exec := newInboxExecutor()
		defer close(exec.release)
		run := startLiveRun(t, exec, time.Millisecond, "stubborn")
		if _, err := supervise.CancelWorker(ctx, run.dir, "stubborn", "op-s", supervise.CancelOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, "the abort is issued", func() (bool, error) {
			r, err := supervise.ReadWorkerCancellation(ctx, run.dir, "op-s")
			return r.Effect == kernel.EffectCancelRequested, err
		})
		res := run.finish(t)
		if !slices.ContainsFunc(res.TeardownUnconfirmed, func(u supervise.UnconfirmedTeardown) bool { return u.ID == "run1:s2" }) {
			t.Errorf("teardown unconfirmed %v, want the stubborn worker", res.TeardownUnconfirmed)
		}
		r, err := supervise.ReadWorkerCancellation(ctx, run.dir, "op-s")
		if err != nil {
			t.Fatal(err)
		}
		if r.Effect != kernel.EffectUnknown || len(r.Terminated) != 0 {
			t.Errorf("record %+v, want unknown with nothing terminated", r)
		}
	})
}

// Behaviour 50: a run cancellation ends the run no-winner with reason
// cancelled, its source and operation id; the acknowledgement records
// appliedAfterMs, and deadlineExceeded because a deadline was asked.
func TestCancelRunBehaviour50(t *testing.T) {
	ctx := context.Background()
	exec := newInboxExecutor()
	run := startLiveRun(t, exec, 0, "long")
	req, err := supervise.CancelRun(ctx, run.dir, "op-run", supervise.RunCancelOptions{Source: "operator", Reason: "enough", Deadline: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	again, err := supervise.CancelRun(ctx, run.dir, "op-run", supervise.RunCancelOptions{Source: "operator", Reason: "enough", Deadline: time.Hour})
	if err != nil || !cmp.Equal(req, again) {
		t.Errorf("retry: %+v, %v; want the original %+v", again, err, req)
	}
	var conflict *supervise.ConflictError
	if _, err := supervise.CancelRun(ctx, run.dir, "op-other", supervise.RunCancelOptions{}); !errors.As(err, &conflict) {
		t.Errorf("a second operation: err %v, want *ConflictError", err)
	}
	res := run.wait(t)
	want := &supervise.Cancellation{Source: "operator", Reason: "enough", OperationID: "op-run"}
	if res.Status != supervise.StatusNoWinner || res.Reason != supervise.ReasonCancelled || !cmp.Equal(res.Cancellation, want) {
		t.Errorf("result %s %s %+v, want no-winner cancelled %+v", res.Status, res.Reason, res.Cancellation, want)
	}
	ack, err := supervise.ReadRunCancellation(ctx, run.dir)
	if err != nil || ack == nil {
		t.Fatalf("ack %+v, %v", ack, err)
	}
	if ack.Effect != kernel.EffectCancelled || ack.OperationID != "op-run" || ack.Path != supervise.PathFallback {
		t.Errorf("ack %+v, want cancelled op-run by path fallback", ack)
	}
	if ack.AppliedAfterMS == nil || *ack.AppliedAfterMS < 0 || ack.DeadlineExceeded == nil || *ack.DeadlineExceeded {
		t.Errorf("ack appliedAfterMs %v deadlineExceeded %v; want both, not exceeded", ack.AppliedAfterMS, ack.DeadlineExceeded)
	}
	for _, w := range res.Tree {
		if w.ID == "run1:s2" && w.State != supervise.StateCancelled {
			t.Errorf("the live worker is %s, want cancelled", w.State)
		}
	}
	if n, m := len(run.journaled(supervise.KindRunCancelRequested)), len(run.journaled(supervise.KindRunCancelAcknowledged)); n != 1 || m != 1 {
		t.Errorf("journaled %d run-cancel requests and %d acknowledgements, want 1 and 1", n, m)
	}
}

// Behaviour 50: without a requested deadline the acknowledgement has no
// deadlineExceeded, and the source defaults to filesystem.
func TestCancelRunWithoutDeadlineBehaviour50(t *testing.T) {
	ctx := context.Background()
	exec := newInboxExecutor()
	run := startLiveRun(t, exec, 0, "long")
	if _, err := supervise.CancelRun(ctx, run.dir, "op-run", supervise.RunCancelOptions{}); err != nil {
		t.Fatal(err)
	}
	res := run.wait(t)
	ack, err := supervise.ReadRunCancellation(ctx, run.dir)
	if err != nil || ack == nil {
		t.Fatalf("ack %+v, %v", ack, err)
	}
	if ack.DeadlineExceeded != nil || ack.AppliedAfterMS == nil || res.Cancellation == nil || res.Cancellation.Source != "filesystem" {
		t.Errorf("ack %+v result %+v; want no deadlineExceeded, appliedAfterMs, source filesystem", ack, res.Cancellation)
	}
}

// controlEnv makes the re-executed test binary write one control request
// into the run dir childDir names and exit: "steer" or "cancel-run".
const controlEnv = "AGENTRT_SUPERVISE_CONTROL"

func controlFromChild(what, dir string) error {
	ctx := context.Background()
	switch what {
	case "steer":
		_, err := supervise.WriteWorkerSteer(ctx, dir, "long", supervise.WorkerSteer{OperationID: "op-x-steer", Message: "finish", Source: "other-process"})
		return err
	case "steer-report":
		_, err := supervise.WriteWorkerSteer(ctx, dir, "report", supervise.WorkerSteer{OperationID: "op-report-steer", Message: "focus on tests", Source: "other-process"})
		return err
	case "steer-root":
		// Root steer (§3.6): the run id as the worker.
		_, err := supervise.WriteWorkerSteer(ctx, dir, "run1", supervise.WorkerSteer{OperationID: "op-root-steer", Message: rootSteerText, Source: "other-process"})
		return err
	case "cancel-worker":
		_, err := supervise.CancelWorker(ctx, dir, "other", "op-x-cancel", supervise.CancelOptions{Source: "other-process"})
		return err
	case "cancel-run":
		_, err := supervise.CancelRun(ctx, dir, "op-x-run", supervise.RunCancelOptions{Source: "other-process", Deadline: time.Hour})
		return err
	}
	return fmt.Errorf("unknown control %q", what)
}

func runControlChild(t *testing.T, what, dir string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), controlEnv+"="+what, childDir+"="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("control child %s: %v\n%s", what, err, out)
	}
}

// Behaviours 48, 49 and 50 across processes: another process writes a
// steer, a worker cancellation and a run cancellation into the run dir
// while Supervise runs; the running supervisor delivers the steer,
// cancels the worker and then the run, and acknowledges each.
func TestControlFromAnotherProcessBehaviours48to50(t *testing.T) {
	if testing.Short() {
		t.Skip("re-executes the test binary")
	}
	ctx := context.Background()
	ex := newInboxExecutor()
	run := startLiveRun(t, ex, 0, "long", "other")

	runControlChild(t, "steer", run.dir)
	if ack := awaitSteer(t, run.dir, "op-x-steer"); ack.Effect != supervise.SteerDelivered {
		t.Errorf("steer effect %q (%s), want delivered", ack.Effect, ack.Detail)
	}
	eventually(t, "the steered worker finishes", func() (bool, error) {
		o, err := run.coord.Observe("run1:s2")
		return o.Status == supervise.StateDone, err
	})

	runControlChild(t, "cancel-worker", run.dir)
	eventually(t, "the other worker is cancelled", func() (bool, error) {
		r, err := supervise.ReadWorkerCancellation(ctx, run.dir, "op-x-cancel")
		return r.Effect == kernel.EffectCancelled, err
	})

	runControlChild(t, "cancel-run", run.dir)
	res := run.wait(t)
	if res.Reason != supervise.ReasonCancelled || res.Cancellation == nil || res.Cancellation.OperationID != "op-x-run" ||
		res.Cancellation.Source != "other-process" {
		t.Errorf("result %s %s %+v, want cancelled by op-x-run from other-process", res.Status, res.Reason, res.Cancellation)
	}
	ack, err := supervise.ReadRunCancellation(ctx, run.dir)
	if err != nil || ack == nil || ack.Effect != kernel.EffectCancelled || ack.AppliedAfterMS == nil || ack.DeadlineExceeded == nil {
		t.Errorf("run ack %+v, %v", ack, err)
	}
}

// Behaviours 48, 49 and 50: run end expires every open request. A
// steer, a worker cancellation and a run cancellation the run never
// applied are acknowledged not_live, never success, and journaled.
func TestRunEndExpiresOpenRequestsBehaviours48to50(t *testing.T) {
	ctx := context.Background()
	run := startLiveRunWith(t, newInboxExecutor(), 0, func(dir string) error {
		if _, err := supervise.WriteWorkerSteer(ctx, dir, "long", supervise.WorkerSteer{OperationID: "op-s", Message: "m"}); err != nil {
			return err
		}
		if _, err := supervise.CancelWorker(ctx, dir, "long", "op-c", supervise.CancelOptions{}); err != nil {
			return err
		}
		_, err := supervise.CancelRun(ctx, dir, "op-r", supervise.RunCancelOptions{Deadline: time.Minute})
		return err
	}, "long")
	res := run.wait(t)
	if res.Reason == supervise.ReasonCancelled {
		t.Errorf("result %s %s: a run cancellation never applied cancelled the run", res.Status, res.Reason)
	}
	steer, err := supervise.ReadSteerAck(ctx, run.dir, "op-s")
	if err != nil || steer == nil || steer.Effect != supervise.SteerNotLive {
		t.Errorf("steer ack %+v, %v; want not_live", steer, err)
	}
	cancel, err := supervise.ReadWorkerCancellation(ctx, run.dir, "op-c")
	if err != nil || cancel.Effect != kernel.EffectNotLive || len(cancel.Terminated) != 0 {
		t.Errorf("worker cancellation %+v, %v; want not_live", cancel, err)
	}
	ack, err := supervise.ReadRunCancellation(ctx, run.dir)
	if err != nil || ack == nil || ack.Effect != kernel.EffectNotLive || ack.OperationID != "op-r" {
		t.Errorf("run cancellation %+v, %v; want not_live for op-r", ack, err)
	}
	for _, kind := range []string{supervise.KindSteerAcknowledged, supervise.KindCancelAcknowledged, supervise.KindRunCancelAcknowledged} {
		if n := len(run.journaled(kind)); n != 1 {
			t.Errorf("journaled %d %s records, want 1", n, kind)
		}
	}
}

// Behaviour 49, the requests log's readers: a corrupt line or a torn
// trailing line never hides later requests, and a repeated operation id
// collapses to its first line.
func TestCancelRequestsLogIsTolerantBehaviour49(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name, prefix string
	}{
		{"corrupt line", "{not json\n"},
		{"torn trailing line", `{"operationId": "op-torn", "wor`},
		{"duplicate id", `{"operationId": "op-1", "worker": "first", "source": "filesystem", "at": 1}` + "\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, supervise.CancelRequestsFile)
			if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(tc.prefix), 0o600); err != nil {
				t.Fatal(err)
			}
			rec, err := supervise.CancelWorker(ctx, dir, "first", "op-1", supervise.CancelOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if rec.Worker != "first" || rec.Effect != kernel.EffectUnknown {
				t.Errorf("record %+v, want worker first, unknown", rec)
			}
			var conflict *supervise.ConflictError
			if _, err := supervise.CancelWorker(ctx, dir, "second", "op-1", supervise.CancelOptions{}); !errors.As(err, &conflict) {
				t.Errorf("same id, other worker: err %v, want *ConflictError", err)
			}
		})
	}
}

// Behaviour 48: an unknown claim an earlier process left (it died
// between claiming a steer and delivering it) is never retried, by the
// scan or by run end.
func TestSteerUnknownClaimIsNotRetriedBehaviour48(t *testing.T) {
	ctx := context.Background()
	exec := newInboxExecutor()
	run := startLiveRun(t, exec, 0, "long")
	sum := sha256.Sum256([]byte("op-claimed"))
	claim := filepath.Join(run.dir, supervise.SteerAcksDir, hex.EncodeToString(sum[:])+".json")
	if err := os.MkdirAll(filepath.Dir(claim), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(claim, []byte(`{"operationId": "op-claimed", "effect": "unknown"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := supervise.WriteWorkerSteer(ctx, run.dir, "long", supervise.WorkerSteer{OperationID: "op-claimed", Message: "first"}); err != nil {
		t.Fatal(err)
	}
	// A later steer acknowledged proves a scan ran after the claimed one
	// was published.
	if _, err := supervise.WriteWorkerSteer(ctx, run.dir, "long", supervise.WorkerSteer{OperationID: "op-later", Message: "second"}); err != nil {
		t.Fatal(err)
	}
	if ack := awaitSteer(t, run.dir, "op-later"); ack.Effect != supervise.SteerDelivered {
		t.Fatalf("later steer %+v, want delivered", ack)
	}
	run.finish(t)
	ack, err := supervise.ReadSteerAck(ctx, run.dir, "op-claimed")
	if err != nil || ack == nil || ack.Effect != supervise.SteerUnknown {
		t.Errorf("claimed steer %+v, %v; want it left unknown", ack, err)
	}
	if got := exec.messages("run1:s2"); !cmp.Equal(got, []string{"second"}) {
		t.Errorf("the worker got %q, want only the later steer", got)
	}
}

// A steer or cancel to a run directory that does not exist is refused
// (ErrNoRun) and creates nothing: a mistyped path used to be created and
// answered "unknown" for a run that never was.
func TestControlToMissingRunDirRefused(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "no-such-run")
	if _, err := supervise.WriteWorkerSteer(ctx, dir, "w", supervise.WorkerSteer{OperationID: "s1", Message: "m"}); !errors.Is(err, supervise.ErrNoRun) {
		t.Errorf("steer: %v, want ErrNoRun", err)
	}
	if _, err := supervise.CancelWorker(ctx, dir, "w", "c1", supervise.CancelOptions{}); !errors.Is(err, supervise.ErrNoRun) {
		t.Errorf("cancel worker: %v, want ErrNoRun", err)
	}
	if _, err := supervise.CancelRun(ctx, dir, "r1", supervise.RunCancelOptions{}); !errors.Is(err, supervise.ErrNoRun) {
		t.Errorf("cancel run: %v, want ErrNoRun", err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the run dir was created: %v", err)
	}
}

// A worker cancellation's record is cancellations/<id>.json beside the
// run's own run.json and run.request.json: ids that would name those
// are refused, so a worker cancel "run.request" can never be read as
// the run's cancellation (it cancelled the whole run).
func TestOperationIDsNamingTheRunsFilesAreRefused(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	for _, op := range []string{"run", "requests", "run.request", "run.x", ".hidden"} {
		if _, err := supervise.CancelWorker(ctx, dir, "w", op, supervise.CancelOptions{}); !errors.Is(err, supervise.ErrInvalidControl) {
			t.Errorf("CancelWorker %q: %v, want ErrInvalidControl", op, err)
		}
	}
	for _, op := range []string{"running", "run-1", "rerun.request"} {
		if _, err := supervise.CancelWorker(ctx, dir, "w", op, supervise.CancelOptions{}); err != nil {
			t.Errorf("CancelWorker %q: %v, want it taken", op, err)
		}
	}
}

// §3.6 run end expires open requests: one written after the run ended
// is answered not_live (it was answered unknown, or not at all, forever:
// no supervisor would ever read it).
func TestRequestsAfterTheRunEndedAreNotLive(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	pass := func(context.Context, supervise.Output) (kernel.Verdict, error) {
		return kernel.Verdict{Passed: true}, nil
	}
	exec := supervise.ExecutorFunc(func(context.Context, supervise.Work) (supervise.WorkResult, error) {
		return supervise.WorkResult{Text: "ok", Spent: spent()}, nil
	})
	if _, err := supervise.Supervise(ctx, &profile.Profile{Name: new("m")}, "t", boundsOptions(t, dir, exec, pass)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Millisecond) // requests written strictly after the end
	if _, err := supervise.WriteWorkerSteer(ctx, dir, "r:s1", supervise.WorkerSteer{OperationID: "late-steer", Message: "more"}); err != nil {
		t.Fatal(err)
	}
	if ack, err := supervise.ReadSteerAck(ctx, dir, "late-steer"); err != nil || ack == nil || ack.Effect != supervise.SteerNotLive {
		t.Errorf("steer after the end: %+v, %v; want not_live", ack, err)
	}
	if _, err := supervise.CancelWorker(ctx, dir, "r:s1", "late-cancel", supervise.CancelOptions{}); err != nil {
		t.Fatal(err)
	}
	if rec, err := supervise.ReadWorkerCancellation(ctx, dir, "late-cancel"); err != nil || rec.Effect != kernel.EffectNotLive {
		t.Errorf("worker cancel after the end: %+v, %v; want not_live", rec, err)
	}
	if _, err := supervise.CancelRun(ctx, dir, "late-run", supervise.RunCancelOptions{}); err != nil {
		t.Fatal(err)
	}
	if ack, err := supervise.ReadRunCancellation(ctx, dir); err != nil || ack == nil || ack.Effect != kernel.EffectNotLive {
		t.Errorf("run cancel after the end: %+v, %v; want not_live", ack, err)
	}

	// A name the ended run never had is answered as the running
	// supervisor answers it, not as a settled worker.
	const noWorker = "the run had ended before the request was written; the run has no worker nobody"
	if _, err := supervise.WriteWorkerSteer(ctx, dir, "nobody", supervise.WorkerSteer{OperationID: "late-steer-nobody", Message: "more"}); err != nil {
		t.Fatal(err)
	}
	if ack, err := supervise.ReadSteerAck(ctx, dir, "late-steer-nobody"); err != nil || ack == nil || ack.Effect != supervise.SteerRefused || ack.Detail != noWorker {
		t.Errorf("steer to no worker after the end: %+v, %v; want refused, %q", ack, err, noWorker)
	}
	if _, err := supervise.CancelWorker(ctx, dir, "nobody", "late-cancel-nobody", supervise.CancelOptions{}); err != nil {
		t.Fatal(err)
	}
	if rec, err := supervise.ReadWorkerCancellation(ctx, dir, "late-cancel-nobody"); err != nil || rec.Effect != kernel.EffectUnknown || rec.Detail != noWorker {
		t.Errorf("cancel of no worker after the end: %+v, %v; want unknown, %q", rec, err, noWorker)
	}
}
