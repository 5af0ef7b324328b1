package supervise_test

// Outside scenarios for the cross-process run layout (§3.6 "Supervisor
// run layout", "Steering", "Cancellation"; §15 behaviours 48–50),
// written from the spec before reading the package's own tests: what a
// second process with trusted access to a run directory relies on.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/supervise"
)

// noInboxExecutor runs workers that take no messages: a "quick" task
// finishes at once, any other runs until its context ends.
type noInboxExecutor struct{}

func (noInboxExecutor) Execute(ctx context.Context, w supervise.Work) (supervise.WorkResult, error) {
	if strings.Contains(w.Task, "quick") {
		return supervise.WorkResult{Text: "quick DONE", Spent: workSpend()}, nil
	}
	<-ctx.Done()
	return supervise.WorkResult{Spent: workSpend()}, context.Cause(ctx)
}

func hashName(op string) string {
	sum := sha256.Sum256([]byte(op))
	return hex.EncodeToString(sum[:]) + ".json"
}

// Behaviour 48 (§3.6 Steering): a same-body retry returns the first
// winning request, byte for byte (its At included); any changed part of
// the body (message, interrupt, source, worker) under the same operation
// id fails with a *ConflictError naming the operation; the request and
// its acknowledgement are named by the hash of the operation id; the
// worker takes the message once however often it is retried.
func TestOutsideSteerRetryAndConflictBehaviour48(t *testing.T) {
	ctx := context.Background()
	exec := newInboxExecutor()
	run := startLiveRun(t, exec, 0, "long")

	first, err := supervise.WriteWorkerSteer(ctx, run.dir, "long", supervise.WorkerSteer{OperationID: "rv9-op.1", Message: "focus on tests"})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		again, err := supervise.WriteWorkerSteer(ctx, run.dir, "long", supervise.WorkerSteer{OperationID: "rv9-op.1", Message: "focus on tests"})
		if err != nil {
			t.Fatalf("retry %d: %v", i, err)
		}
		if diff := cmp.Diff(first, again); diff != "" {
			t.Errorf("retry %d returned another request (-first +retry):\n%s", i, diff)
		}
	}
	changed := []struct {
		name   string
		worker string
		steer  supervise.WorkerSteer
	}{
		{"message", "long", supervise.WorkerSteer{OperationID: "rv9-op.1", Message: "focus on docs"}},
		{"interrupt", "long", supervise.WorkerSteer{OperationID: "rv9-op.1", Message: "focus on tests", Interrupt: true}},
		{"source", "long", supervise.WorkerSteer{OperationID: "rv9-op.1", Message: "focus on tests", Source: "other-tool"}},
		{"worker", "quick", supervise.WorkerSteer{OperationID: "rv9-op.1", Message: "focus on tests"}},
	}
	for _, tt := range changed {
		t.Run("changed "+tt.name, func(t *testing.T) {
			_, err := supervise.WriteWorkerSteer(ctx, run.dir, tt.worker, tt.steer)
			var conflict *supervise.ConflictError
			if !errors.As(err, &conflict) {
				t.Fatalf("a changed %s under the same operation id: %v, want *ConflictError", tt.name, err)
			}
			if conflict.OperationID != "rv9-op.1" || !strings.Contains(err.Error(), "rv9-op.1") {
				t.Errorf("the conflict %q does not name the operation", err)
			}
		})
	}
	ack := awaitSteer(t, run.dir, "rv9-op.1")
	if ack.Effect != supervise.SteerDelivered || ack.OperationID != "rv9-op.1" || ack.RequestDigest != first.RequestDigest || ack.RequestedAt != first.At {
		t.Errorf("ack %+v, want delivered for the first request (digest %s, at %d)", ack, first.RequestDigest, first.At)
	}
	for _, sub := range []string{supervise.SteerRequestsDir, supervise.SteerAcksDir} {
		if _, err := os.Stat(filepath.Join(run.dir, sub, hashName("rv9-op.1"))); err != nil {
			t.Errorf("%s/<sha256(op)>.json: %v", sub, err)
		}
	}
	eventually(t, "the worker took the message", func() (bool, error) {
		return len(exec.messages("run1:s2")) > 0, nil
	})
	// A retry after delivery still answers the first request, and is
	// not delivered again.
	if _, err := supervise.WriteWorkerSteer(ctx, run.dir, "long", supervise.WorkerSteer{OperationID: "rv9-op.1", Message: "focus on tests"}); err != nil {
		t.Fatal(err)
	}
	run.finish(t)
	if got := exec.messages("run1:s2"); !cmp.Equal(got, []string{"focus on tests"}) {
		t.Errorf("the worker took %q, want the message once", got)
	}
}

// Behaviour 48: each of the five acknowledgement effects is reached by a
// real situation — delivered (a live worker with an inbox), not_live (a
// worker that settled), refused (a worker the run never had),
// unsupported (an executor with no inbox), and not_live for a request
// the run ended before reading (run end expires it).
func TestOutsideSteerEffectsBehaviour48(t *testing.T) {
	ctx := context.Background()
	t.Run("delivered not_live refused", func(t *testing.T) {
		run := startLiveRun(t, newInboxExecutor(), 0, "long")
		for _, tt := range []struct {
			op, worker string
			want       supervise.SteerEffect
		}{
			{"rv9-live", "long", supervise.SteerDelivered},
			{"rv9-settled", "quick", supervise.SteerNotLive},
			{"rv9-ghost", "ghost", supervise.SteerRefused},
			{"rv9-by-id", "run1:s2", supervise.SteerDelivered},
		} {
			if _, err := supervise.WriteWorkerSteer(ctx, run.dir, tt.worker, supervise.WorkerSteer{OperationID: tt.op, Message: "hello"}); err != nil {
				t.Fatal(err)
			}
			if ack := awaitSteer(t, run.dir, tt.op); ack.Effect != tt.want || ack.Worker != tt.worker {
				t.Errorf("steer to %s: %+v, want %s", tt.worker, ack, tt.want)
			} else if tt.want != supervise.SteerDelivered && ack.Detail == "" {
				t.Errorf("steer to %s: %s with no detail saying why", tt.worker, ack.Effect)
			}
		}
		run.finish(t)
	})
	t.Run("unsupported", func(t *testing.T) {
		run := startLiveRun(t, noInboxExecutor{}, 0, "long")
		eventually(t, "the long worker is live", func() (bool, error) {
			st, err := supervise.ReadRunState(ctx, run.dir)
			return err == nil && st.Live == 1, nil
		})
		if _, err := supervise.WriteWorkerSteer(ctx, run.dir, "long", supervise.WorkerSteer{OperationID: "rv9-unsup", Message: "hello"}); err != nil {
			t.Fatal(err)
		}
		if ack := awaitSteer(t, run.dir, "rv9-unsup"); ack.Effect != supervise.SteerUnsupported || ack.Detail == "" {
			t.Errorf("steer to a worker whose executor has no inbox: %+v, want unsupported with a detail", ack)
		}
		run.finish(t)
	})
	t.Run("expired at run end", func(t *testing.T) {
		run := startLiveRunWith(t, newInboxExecutor(), 0, func(dir string) error {
			_, err := supervise.WriteWorkerSteer(ctx, dir, "long", supervise.WorkerSteer{OperationID: "rv9-unseen", Message: "hello"})
			return err
		}, "long")
		run.wait(t)
		ack, err := supervise.ReadSteerAck(ctx, run.dir, "rv9-unseen")
		if err != nil || ack == nil || ack.Effect != supervise.SteerNotLive {
			t.Fatalf("a steer the run never read, after run end: %+v, %v; want not_live", ack, err)
		}
	})
}

// Two processes steering the same worker at once: writers racing on one
// operation id all get the one winning request (one file, one delivery);
// writers with their own operation ids each get their message delivered
// exactly once.
func TestOutsideConcurrentSteersOneWorker(t *testing.T) {
	ctx := context.Background()
	exec := newInboxExecutor()
	run := startLiveRun(t, exec, 0, "long")
	const writers = 8
	reqs := make([]supervise.SteerRequest, writers)
	errs := make([]error, writers)
	var wg sync.WaitGroup
	for i := range writers {
		wg.Go(func() {
			reqs[i], errs[i] = supervise.WriteWorkerSteer(ctx, run.dir, "long", supervise.WorkerSteer{OperationID: "rv9-shared", Message: "shared"})
		})
	}
	wg.Wait()
	for i := range writers {
		if errs[i] != nil {
			t.Fatalf("writer %d: %v", i, errs[i])
		}
		if diff := cmp.Diff(reqs[0], reqs[i]); diff != "" {
			t.Errorf("writer %d got another request than writer 0 (-0 +%d):\n%s", i, i, diff)
		}
	}
	ops := make([]string, writers)
	for i := range writers {
		ops[i] = "rv9-own-" + string(rune('a'+i))
		wg.Go(func() {
			_, errs[i] = supervise.WriteWorkerSteer(ctx, run.dir, "long", supervise.WorkerSteer{OperationID: ops[i], Message: "own " + ops[i]})
		})
	}
	wg.Wait()
	for i := range writers {
		if errs[i] != nil {
			t.Fatalf("writer %s: %v", ops[i], errs[i])
		}
	}
	awaitSteer(t, run.dir, "rv9-shared")
	for _, op := range ops {
		if ack := awaitSteer(t, run.dir, op); ack.Effect != supervise.SteerDelivered {
			t.Errorf("steer %s: %+v, want delivered", op, ack)
		}
	}
	eventually(t, "the worker took every message", func() (bool, error) {
		return len(exec.messages("run1:s2")) >= writers+1, nil
	})
	run.finish(t)
	count := map[string]int{}
	for _, m := range exec.messages("run1:s2") {
		count[m]++
	}
	want := map[string]int{"shared": 1}
	for _, op := range ops {
		want["own "+op] = 1
	}
	if diff := cmp.Diff(want, count); diff != "" {
		t.Errorf("messages the worker took (-want +got):\n%s", diff)
	}
}

// Behaviour 49: a worker cancellation repeated under one operation id
// appends one request line and returns the same record; a changed body
// conflicts; a cancelled worker's record is cancelled with it in
// terminated; a settled worker is not_live; a worker the run never had
// stays unknown, never success.
func TestOutsideWorkerCancelBehaviour49(t *testing.T) {
	ctx := context.Background()
	run := startLiveRun(t, newInboxExecutor(), 0, "long")
	first, err := supervise.CancelWorker(ctx, run.dir, "long", "rv9-c1", supervise.CancelOptions{Reason: "enough"})
	if err != nil {
		t.Fatal(err)
	}
	if first.Effect == kernel.EffectCancelled || first.Effect == kernel.EffectNotLive {
		t.Logf("first read already final: %+v", first)
	}
	var rec supervise.WorkerCancellation
	eventually(t, "the cancellation is confirmed", func() (bool, error) {
		var err error
		rec, err = supervise.ReadWorkerCancellation(ctx, run.dir, "rv9-c1")
		return rec.Effect == kernel.EffectCancelled, err
	})
	if rec.WorkerID != "run1:s2" || !cmp.Equal(rec.Terminated, []supervise.NodeID{"run1:s2"}) || rec.Reason != "enough" {
		t.Errorf("record %+v, want worker run1:s2 terminated with the reason", rec)
	}
	again, err := supervise.CancelWorker(ctx, run.dir, "long", "rv9-c1", supervise.CancelOptions{Reason: "enough"})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(rec, again); diff != "" {
		t.Errorf("a retry returned another record (-first +retry):\n%s", diff)
	}
	_, err = supervise.CancelWorker(ctx, run.dir, "long", "rv9-c1", supervise.CancelOptions{Reason: "other"})
	var conflict *supervise.ConflictError
	if !errors.As(err, &conflict) || conflict.OperationID != "rv9-c1" {
		t.Errorf("a changed reason under the same operation id: %v, want *ConflictError", err)
	}
	if _, err := supervise.CancelWorker(ctx, run.dir, "quick", "rv9-c-settled", supervise.CancelOptions{}); err != nil {
		t.Fatal(err)
	}
	var settled supervise.WorkerCancellation
	eventually(t, "cancel of the settled worker answered", func() (bool, error) {
		var err error
		settled, err = supervise.ReadWorkerCancellation(ctx, run.dir, "rv9-c-settled")
		return settled.ObservedAt != 0, err
	})
	if settled.Effect != kernel.EffectNotLive || settled.Detail == "" {
		t.Errorf("cancel of a settled worker: %+v, want not_live with a detail", settled)
	}
	// A label no worker has yet stays open (the manager may still spawn
	// one under it: doc.go), unknown, never success.
	if _, err := supervise.CancelWorker(ctx, run.dir, "ghost", "rv9-c-ghost", supervise.CancelOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the ghost's request was scanned past", func() (bool, error) {
		r, err := supervise.ReadWorkerCancellation(ctx, run.dir, "rv9-c-settled")
		return r.ObservedAt != 0, err
	})
	for range 3 {
		if r, err := supervise.ReadWorkerCancellation(ctx, run.dir, "rv9-c-ghost"); err != nil || r.Effect != kernel.EffectUnknown {
			t.Fatalf("cancel of a worker the run does not have, while it runs: %+v, %v; want unknown", r, err)
		}
		time.Sleep(supervise.ControlScanInterval)
	}
	run.finish(t)
	lines, err := os.ReadFile(filepath.Join(run.dir, supervise.CancelRequestsFile))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(lines), `"rv9-c1"`); n != 1 {
		t.Errorf("requests.ndjson holds %d lines of rv9-c1, want 1:\n%s", n, lines)
	}
	// Run end expires the ghost's request unknown, saying why.
	if r, err := supervise.ReadWorkerCancellation(ctx, run.dir, "rv9-c-ghost"); err != nil || r.Effect != kernel.EffectUnknown || !strings.Contains(r.Detail, "no worker ghost") {
		t.Errorf("the ghost's cancellation after run end: %+v, %v; want unknown, the run has no worker ghost", r, err)
	}
}

// §3.6 "Run end expires every open request": requests the run never
// read (its control scan is off) are answered not_live once it ended.
func TestOutsideRunEndExpiresOpenRequestsBehaviour49(t *testing.T) {
	ctx := context.Background()
	run := startLiveRunWith(t, newInboxExecutor(), 0, func(dir string) error {
		if _, err := supervise.CancelWorker(ctx, dir, "long", "rv9-open-c", supervise.CancelOptions{}); err != nil {
			return err
		}
		_, err := supervise.WriteWorkerSteer(ctx, dir, "long", supervise.WorkerSteer{OperationID: "rv9-open-s", Message: "hi"})
		return err
	}, "long")
	run.wait(t)
	c, err := supervise.ReadWorkerCancellation(ctx, run.dir, "rv9-open-c")
	if err != nil || c.Effect == kernel.EffectCancelled || c.Effect == kernel.EffectCancelRequested || c.ObservedAt == 0 {
		t.Errorf("an open cancellation after run end: %+v, %v; want expired (not_live or unknown, observed)", c, err)
	}
	s, err := supervise.ReadSteerAck(ctx, run.dir, "rv9-open-s")
	if err != nil || s == nil || s.Effect != supervise.SteerNotLive {
		t.Errorf("an open steer after run end: %+v, %v; want not_live", s, err)
	}
}

// Requests issued after the run ended, by a retry of an operation the
// run answered (same id: the same answer) and by a new operation id
// (not_live: the run ended before it was written) — for a worker
// steer, a worker cancel, and the run's own cancellation, including a
// second run cancellation under a new operation id.
func TestOutsideRequestsAfterRunEnd(t *testing.T) {
	ctx := context.Background()
	run := startLiveRun(t, newInboxExecutor(), 0, "long")
	if _, err := supervise.CancelRun(ctx, run.dir, "rv9-run-1", supervise.RunCancelOptions{Reason: "stop"}); err != nil {
		t.Fatal(err)
	}
	res := run.wait(t)
	if res.Reason != "cancelled" {
		t.Logf("result %+v", res)
	}
	ack, err := supervise.ReadRunCancellation(ctx, run.dir)
	if err != nil || ack == nil || ack.OperationID != "rv9-run-1" {
		t.Fatalf("run cancellation ack %+v, %v", ack, err)
	}

	t.Run("run cancel retried", func(t *testing.T) {
		if _, err := supervise.CancelRun(ctx, run.dir, "rv9-run-1", supervise.RunCancelOptions{Reason: "stop"}); err != nil {
			t.Errorf("retrying the run's cancellation after its end: %v", err)
		}
	})
	t.Run("run cancel under a new operation id", func(t *testing.T) {
		_, err := supervise.CancelRun(ctx, run.dir, "rv9-run-2", supervise.RunCancelOptions{Reason: "stop"})
		var ended *supervise.RunEndedError
		if !errors.As(err, &ended) {
			t.Fatalf("a new run cancellation after the run ended: %v; want *RunEndedError (not_live), like a new worker cancel or steer", err)
		}
		var conflict *supervise.ConflictError
		if errors.As(err, &conflict) {
			t.Errorf("%v is also a *ConflictError: the run is not live, the request is not malformed", err)
		}
		want := supervise.RunEndedError{OperationID: "rv9-run-2", FirstOperationID: "rv9-run-1", Status: string(res.Status), EndedAtMS: ended.EndedAtMS}
		if diff := cmp.Diff(want, *ended); diff != "" || ended.EndedAtMS <= 0 || ended.Effect() != kernel.EffectNotLive {
			t.Errorf("RunEndedError (-want +got):\n%s (effect %s)", diff, ended.Effect())
		}
		// The same id again is the same answer, and the first request
		// stands.
		if _, err := supervise.CancelRun(ctx, run.dir, "rv9-run-2", supervise.RunCancelOptions{Reason: "stop"}); !errors.As(err, &ended) {
			t.Errorf("retrying the new run cancellation: %v, want *RunEndedError", err)
		}
		if a, err := supervise.ReadRunCancellation(ctx, run.dir); err != nil || a == nil || a.OperationID != "rv9-run-1" {
			t.Errorf("the run's cancellation after a later request: %+v, %v; want rv9-run-1's", a, err)
		}
	})
	t.Run("worker cancel under a new operation id", func(t *testing.T) {
		r, err := supervise.CancelWorker(ctx, run.dir, "long", "rv9-after-c", supervise.CancelOptions{})
		if err != nil || r.Effect != kernel.EffectNotLive {
			t.Errorf("a worker cancel after run end: %+v, %v; want not_live", r, err)
		}
	})
	t.Run("steer under a new operation id", func(t *testing.T) {
		if _, err := supervise.WriteWorkerSteer(ctx, run.dir, "long", supervise.WorkerSteer{OperationID: "rv9-after-s", Message: "hi"}); err != nil {
			t.Fatal(err)
		}
		a, err := supervise.ReadSteerAck(ctx, run.dir, "rv9-after-s")
		if err != nil || a == nil || a.Effect != supervise.SteerNotLive {
			t.Errorf("a steer after run end: %+v, %v; want not_live", a, err)
		}
	})
}

// §3.6 "Readers are tolerant": a torn or corrupt line in the cancel
// requests log does not poison the lines after it — a request appended
// after garbage is still applied — and a repeated operation id
// collapses to its first line (the first admitted request wins).
func TestOutsideTornCancelLogAndDuplicateIDs(t *testing.T) {
	ctx := context.Background()
	run := startLiveRun(t, newInboxExecutor(), 0, "long", "second")
	path := filepath.Join(run.dir, supervise.CancelRequestsFile)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	// A crashed writer's corrupt line and a torn one (no newline).
	junk := "{not json}\n" + `{"operationId":"rv9-dup","worker":"second","source":"x","at":1}` + "\n" +
		`{"operationId":"rv9-dup","worker":"long","source":"x","at":2}` + "\n" + `{"operationId":"rv9-torn","wor`
	if err := os.WriteFile(path, []byte(junk), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := supervise.CancelWorker(ctx, run.dir, "long", "rv9-after-junk", supervise.CancelOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the request after the junk is applied", func() (bool, error) {
		r, err := supervise.ReadWorkerCancellation(ctx, run.dir, "rv9-after-junk")
		return r.Effect == kernel.EffectCancelled, err
	})
	eventually(t, "the duplicated id is applied to its first worker", func() (bool, error) {
		r, err := supervise.ReadWorkerCancellation(ctx, run.dir, "rv9-dup")
		if err == nil && r.Worker != "second" {
			return false, errors.New("rv9-dup resolved to " + r.Worker + ", want its first line's worker, second")
		}
		return r.Effect == kernel.EffectCancelled, err
	})
	if _, err := supervise.ReadWorkerCancellation(ctx, run.dir, "rv9-torn"); !errors.Is(err, supervise.ErrUnknownOperation) {
		t.Errorf("the torn line's operation: %v, want ErrUnknownOperation", err)
	}
	run.finish(t)
}

// §3.6: progress.ndjson and the coordination log read tolerantly — a
// corrupt line in the middle is skipped and counted, the lines after it
// are kept, a repeated progress id collapses to its first line; and
// state.json of an ended run carries its final status and counts.
func TestOutsideTolerantProgressAndFinalState(t *testing.T) {
	ctx := context.Background()
	run := startLiveRun(t, newInboxExecutor(), 0)
	res := run.finish(t)

	st, err := supervise.ReadRunState(ctx, run.dir)
	if err != nil {
		t.Fatal(err)
	}
	if st.RunID != "run1" || st.Status != string(res.Status) || st.Status == supervise.RunStatusRunning || st.Spawned != 1 || st.Live != 0 ||
		st.Settled[supervise.StateDone] != 1 || st.UpdatedAtMS < st.StartedAtMS || st.Budget == nil {
		t.Errorf("final state.json %+v, want run1 %s, one spawned and done, none live", st, res.Status)
	}

	before, skipped, err := supervise.ReadProgress(ctx, run.dir)
	if err != nil || skipped != 0 || len(before) == 0 {
		t.Fatalf("ReadProgress: %d lines, skipped %d, %v", len(before), skipped, err)
	}
	path := filepath.Join(run.dir, supervise.ProgressFile)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(strings.TrimSuffix(string(data), "\n"), "\n")
	// Corrupt line after the first, a duplicate of the first at the end,
	// then a torn tail.
	mangled := lines[0] + "\x00garbage{\n" + strings.Join(lines[1:], "") + "\n" + lines[0] + `{"id":"torn`
	if err := os.WriteFile(path, []byte(mangled), 0o600); err != nil {
		t.Fatal(err)
	}
	after, skipped, err := supervise.ReadProgress(ctx, run.dir)
	if err != nil {
		t.Fatal(err)
	}
	if skipped != 1 {
		t.Errorf("skipped %d lines, want the one corrupt line", skipped)
	}
	if diff := cmp.Diff(before, after); diff != "" {
		t.Errorf("progress after mangling (-before +after):\n%s", diff)
	}
}

// §3.6 "Worker file stems": a character outside [A-Za-z0-9._-] becomes
// '_', an empty worker is "worker"; the inbox projection is
// workers/<stem>.inbox.ndjson.
func TestOutsideWorkerStems(t *testing.T) {
	for _, tt := range []struct {
		worker supervise.NodeID
		want   string
	}{
		{"run1:s2", "run1_s2"},
		{"", "worker"},
		{"a/b\\c d", "a_b_c_d"},
		{"ok.name_-9", "ok.name_-9"},
		{"é", "_"},
		{"../up", ".._up"},
	} {
		if got := supervise.WorkerStem(tt.worker); got != tt.want {
			t.Errorf("WorkerStem(%q) = %q, want %q", tt.worker, got, tt.want)
		}
	}
	if got, want := supervise.InboxPath("/d", "run1:s2"), filepath.Join("/d", "workers", "run1_s2.inbox.ndjson"); got != want {
		t.Errorf("InboxPath = %q, want %q", got, want)
	}
}

// A steer racing the worker's settlement: the worker is told "finish"
// and, at once, something more. The second steer ends delivered (the
// inbox took it before the worker ended) or not_live, never unknown or
// refused once the run ended; the first is delivered. Run with -count.
func TestOutsideSteerRacesSettlement(t *testing.T) {
	ctx := context.Background()
	exec := newInboxExecutor()
	run := startLiveRun(t, exec, 0, "long")
	if _, err := supervise.WriteWorkerSteer(ctx, run.dir, "run1:s2", supervise.WorkerSteer{OperationID: "rv9-finish", Message: "finish"}); err != nil {
		t.Fatal(err)
	}
	if _, err := supervise.WriteWorkerSteer(ctx, run.dir, "run1:s2", supervise.WorkerSteer{OperationID: "rv9-late", Message: "one more thing"}); err != nil {
		t.Fatal(err)
	}
	if ack := awaitSteer(t, run.dir, "rv9-finish"); ack.Effect != supervise.SteerDelivered {
		t.Errorf("the finishing steer: %+v; want delivered", ack)
	}
	// state.json follows the journal off the spawn path: wait for both
	// workers (quick and long) to show settled done.
	eventually(t, "the worker settled", func() (bool, error) {
		st, err := supervise.ReadRunState(ctx, run.dir)
		return err == nil && st.Settled[supervise.StateDone] == 2, nil
	})
	run.finish(t)
	ack, err := supervise.ReadSteerAck(ctx, run.dir, "rv9-late")
	if err != nil || ack == nil || (ack.Effect != supervise.SteerDelivered && ack.Effect != supervise.SteerNotLive) {
		t.Fatalf("the steer racing the settlement, after run end: %+v, %v; want delivered or not_live", ack, err)
	}
	t.Logf("the racing steer ended %s (%s)", ack.Effect, ack.Detail)
}

// §3.6 "Readers are tolerant" for a worker's inbox projection and the
// coordination log: a corrupt line in the middle is skipped and
// counted, the valid lines around it kept in order, a torn tail
// ignored. (An executor with its own inbox, as here, writes no
// projection; the files are written as a crashed writer would leave
// them.)
func TestOutsideTolerantInboxAndCoordinationLog(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := supervise.InboxPath(dir, "run1:s2")
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	l1 := `{"kind":"posted","seq":1,"atMs":10,"message":"a","operationId":"o1"}` + "\n"
	l2 := `{"kind":"taken","seq":2,"atMs":11,"operationId":"o1"}` + "\n"
	if err := os.WriteFile(path, []byte(l1+"]]not json[[\n"+l2+`{"kind":"po`), 0o600); err != nil {
		t.Fatal(err)
	}
	got, skipped, err := supervise.ReadInbox(ctx, dir, "run1:s2")
	want := []supervise.InboxRecord{{Kind: "posted", Seq: 1, AtMS: 10, Message: "a", OperationID: "o1"}, {Kind: "taken", Seq: 2, AtMS: 11, OperationID: "o1"}}
	if err != nil || skipped != 1 {
		t.Errorf("ReadInbox after a corrupt line and a torn tail: skipped %d, %v; want 1", skipped, err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("inbox records (-want +got):\n%s", diff)
	}

	clog := filepath.Join(dir, supervise.CoordinationLogFile)
	good := `{"kind":"x-rv9"}` + "\n"
	if err := os.WriteFile(clog, []byte(good+"{torn\n"+good+`{"kind":"x-r`), 0o600); err != nil {
		t.Fatal(err)
	}
	recs, skipped, err := supervise.ReadCoordinationLog(ctx, dir)
	if err != nil || skipped != 1 || len(recs) != 2 {
		t.Errorf("ReadCoordinationLog with a corrupt middle line: %d records, skipped %d, %v; want 2 and 1", len(recs), skipped, err)
	}
}
