package kernel_test

import (
	"context"
	"errors"
	"path/filepath"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/memory"
	"github.com/agentrt/agentrt/store/sqlite"
)

func exactUsage(in, out int64, usd float64) ledger.Usage {
	u := ledger.Usage{InputTokens: ledger.ExactAmount(in), OutputTokens: ledger.ExactAmount(out), CostUSD: ledger.ExactAmount(usd)}
	zero := ledger.ExactAmount[int64](0)
	u.CacheReadTokens, u.CacheWriteTokens, u.ReasoningTokens = zero, zero, zero
	return u
}

// Behaviour 35 (FD-04): completing twice with the same status is a
// no-op, then another status errors; Persist before Complete errors;
// without a store Persist does nothing; events other than llm_call do
// not change the cost.
func TestBehaviour35RuntimeRunStateMachine(t *testing.T) {
	ctx := context.Background()
	clock := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	now := func() time.Time { return clock }
	run, err := kernel.StartRuntimeRun(ctx, kernel.RuntimeRunOptions{WorkspaceID: "ws", TaskID: "task-1", Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if ok, _ := regexp.MatchString(`^task-1:[0-9a-z]{8}$`, run.ID()); !ok {
		t.Errorf("default id %q; want task-1:<8 base-36 digits>", run.ID())
	}
	if err := run.Persist(ctx, nil); !errors.Is(err, kernel.ErrRuntimeRunState) {
		t.Errorf("Persist before Complete: %v; want ErrRuntimeRunState", err)
	}
	if err := run.Observe(kernel.RuntimeEvent{Type: "tool_call", Usage: exactUsage(100, 100, 1)}); err != nil {
		t.Fatal(err)
	}
	if c := run.Cost(); c.LLMCalls != 0 || !c.Usage.InputTokens.Known() || c.Usage.InputTokens.Value != 0 {
		t.Errorf("a tool_call changed the cost: %+v", c)
	}
	if err := run.Observe(kernel.RuntimeEvent{Type: kernel.RuntimeEventLLMCall, Usage: exactUsage(10, 5, 0.01)}); err != nil {
		t.Fatal(err)
	}
	clock = clock.Add(1500 * time.Millisecond)
	if err := run.Complete(kernel.RuntimeCompletion{Status: store.StatusRunning}); !errors.Is(err, kernel.ErrInvalidOptions) {
		t.Errorf("Complete(running): %v; want ErrInvalidOptions", err)
	}
	if err := run.Complete(kernel.RuntimeCompletion{Status: store.StatusCompleted, ResultSummary: "done"}); err != nil {
		t.Fatal(err)
	}
	clock = clock.Add(time.Hour)
	if err := run.Complete(kernel.RuntimeCompletion{Status: store.StatusCompleted, ResultSummary: "again"}); err != nil {
		t.Errorf("Complete(completed) twice: %v; want a no-op", err)
	}
	var se *kernel.RuntimeRunStateError
	if err := run.Complete(kernel.RuntimeCompletion{Status: store.StatusFailed}); !errors.As(err, &se) || se.Status != store.StatusCompleted {
		t.Errorf("Complete(failed) after completed: %v; want a *RuntimeRunStateError", err)
	}
	if err := run.Observe(kernel.RuntimeEvent{Type: kernel.RuntimeEventLLMCall, Usage: exactUsage(1, 1, 0)}); !errors.Is(err, kernel.ErrRuntimeRunState) {
		t.Errorf("Observe after Complete: %v; want ErrRuntimeRunState", err)
	}
	if err := run.Persist(ctx, map[string]canonjson.Value{"k": canonjson.StringValue("v")}); err != nil {
		t.Errorf("Persist without a store: %v; want a no-op", err)
	}
	row := run.Row(nil)
	want := kernel.RuntimeRecord{
		ID: run.ID(), WorkspaceID: "ws", TaskID: "task-1", Status: store.StatusCompleted, ResultSummary: "done",
		Cost:      kernel.RuntimeCost{Usage: kernel.Usage{Usage: exactUsage(10, 5, 0.01)}, LLMCalls: 1, WallMs: 1500},
		StartedAt: "2026-12-01T10:00:00Z", CompletedAt: "2026-12-01T10:00:01.5Z",
		Metadata: map[string]canonjson.Value{"k": canonjson.StringValue("v")},
	}
	if diff := cmp.Diff(want, row, cmp.Comparer(func(a, b canonjson.Value) bool { return canonjson.Equal(a, b) })); diff != "" {
		t.Errorf("row (-want +got):\n%s", diff)
	}
}

// An llm_call whose tokens or cost were not reported leaves the run's
// cost a floor (unknown is never zero), and a completion's cost
// overrides only the channels it reports.
func TestRuntimeRunUnknownUsage(t *testing.T) {
	run, err := kernel.StartRuntimeRun(context.Background(), kernel.RuntimeRunOptions{WorkspaceID: "ws", TaskID: "t", RunID: "r"})
	if err != nil {
		t.Fatal(err)
	}
	run.Observe(kernel.RuntimeEvent{Type: kernel.RuntimeEventLLMCall, Usage: exactUsage(10, 5, 0.01)})
	run.Observe(kernel.RuntimeEvent{Type: kernel.RuntimeEventLLMCall, Usage: ledger.Usage{InputTokens: ledger.ExactAmount[int64](3)}})
	c := run.Cost()
	if c.LLMCalls != 2 || c.Usage.InputTokens != ledger.ExactAmount[int64](13) {
		t.Errorf("input %s after two reported counts; want exactly 13", c.Usage.InputTokens)
	}
	if o := c.Usage.OutputTokens; o.Known() || !o.Reported || o.Value != 5 {
		t.Errorf("output %s; want the floor ≥ 5 (one call did not report it)", o)
	}
	if usd := c.Usage.CostUSD; usd.Known() {
		t.Errorf("cost %s is known; one call did not report it", usd)
	}
	override := ledger.Usage{CostUSD: ledger.ExactAmount(0.5)}
	if err := run.Complete(kernel.RuntimeCompletion{Status: store.StatusFailed, Error: "boom", Cost: &override}); err != nil {
		t.Fatal(err)
	}
	c = run.Cost()
	if c.Usage.CostUSD != ledger.ExactAmount(0.5) || c.Usage.OutputTokens.Known() {
		t.Errorf("after the override: cost %s, output %s; want cost 0.5 and output still a floor", c.Usage.CostUSD, c.Usage.OutputTokens)
	}
}

func TestStartRuntimeRunRefusesMissingIdentity(t *testing.T) {
	_, err := kernel.StartRuntimeRun(context.Background(), kernel.RuntimeRunOptions{Store: memory.New(nil), LeaseTTL: time.Millisecond})
	var fields []string
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		var oe *kernel.OptionsError
		if errors.As(e, &oe) {
			fields = append(fields, oe.Field)
		}
	}
	if diff := cmp.Diff([]string{"WorkspaceID", "TaskID", "LeaseTTL"}, fields); diff != "" {
		t.Errorf("refused fields (-want +got):\n%s", diff)
	}
}

// With a store the run is durable from its start: a running row under a
// lease, a ledger entry per model call, the closing entry and the
// terminal record, read back through ReadRun from another handle on the
// same database; Persist adds metadata to the ended record.
func TestRuntimeRunRecordedInStore(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "runs.db")
	st, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	reader, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()

	run, err := kernel.StartRuntimeRun(ctx, kernel.RuntimeRunOptions{WorkspaceID: "ws", TaskID: "t", RunID: "rt-1", SessionID: "s1", Store: st})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := kernel.ReadRun(ctx, reader, "rt-1")
	if err != nil || rec.Status != store.StatusRunning || rec.Kind != kernel.KindRuntime || rec.Runtime == nil || rec.Runtime.SessionID != "s1" {
		t.Fatalf("while running: %+v (%v)", rec, err)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if err := run.Observe(kernel.RuntimeEvent{Type: kernel.RuntimeEventLLMCall, Model: "m", Usage: exactUsage(10, 1, 0.001)}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	rec, _ = kernel.ReadRun(ctx, reader, "rt-1")
	if rec.LedgerEntries != 8 || rec.Spend.InputTokens.Value != 80 || rec.Spend.InputTokens.Complete {
		t.Errorf("while running: %d ledger entries, spend %s; want 8 entries and a floor of 80", rec.LedgerEntries, rec.Spend.InputTokens)
	}
	if err := run.Complete(kernel.RuntimeCompletion{Status: store.StatusCompleted, ResultSummary: "ok"}); err != nil {
		t.Fatal(err)
	}
	if err := run.Persist(ctx, map[string]canonjson.Value{"reviewer": canonjson.StringValue("ann")}); err != nil {
		t.Fatal(err)
	}
	rec, err = kernel.ReadRun(ctx, reader, "rt-1")
	if err != nil || rec.Status != store.StatusCompleted || rec.DocErr != nil {
		t.Fatalf("after Complete: %+v (%v)", rec, err)
	}
	if rec.Spend.InputTokens != ledger.ExactAmount[int64](80) || rec.Spend.OutputTokens != ledger.ExactAmount[int64](8) {
		t.Errorf("closing spend %+v; want exactly 80 input and 8 output tokens", rec.Spend)
	}
	if rec.Runtime.Cost.LLMCalls != 8 || rec.Runtime.ResultSummary != "ok" || rec.Runtime.Metadata["reviewer"].Str() != "ann" {
		t.Errorf("record %+v", rec.Runtime)
	}
	if rec.LeaseUntil != (time.Time{}) {
		t.Errorf("the ended run still holds a lease until %v", rec.LeaseUntil)
	}

	// FD-04: the record survives reopen. Both handles closed, the file
	// opened afresh holds the same record, ledger and known flags.
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if err := reader.Close(); err != nil {
		t.Fatal(err)
	}
	again, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	reopened, err := kernel.ReadRun(ctx, again, "rt-1")
	if err != nil {
		t.Fatal(err)
	}
	if reopened.Status != store.StatusCompleted || reopened.LedgerEntries != rec.LedgerEntries || reopened.Spend != rec.Spend ||
		reopened.Runtime.Cost.LLMCalls != 8 || reopened.Runtime.Metadata["reviewer"].Str() != "ann" {
		t.Errorf("after reopen: status %s, %d ledger entries, spend %+v, runtime %+v; want what was read before closing",
			reopened.Status, reopened.LedgerEntries, reopened.Spend, reopened.Runtime)
	}
}

// Another process's cancel request reaches the caller's work through the
// run's context.
func TestRuntimeRunCancelRequest(t *testing.T) {
	ctx := context.Background()
	st := memory.New(nil)
	run, err := kernel.StartRuntimeRun(ctx, kernel.RuntimeRunOptions{WorkspaceID: "ws", TaskID: "t", RunID: "rt-c", Store: st, LeaseTTL: kernel.MinLeaseTTL})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := kernel.RequestCancel(ctx, st, "rt-c", "operator", time.Now()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-run.Context().Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the cancel request never reached the run's context")
	}
	if _, ok := errors.AsType[*kernel.CancelRequestedError](context.Cause(run.Context())); !ok {
		t.Errorf("cause %v; want a *CancelRequestedError", context.Cause(run.Context()))
	}
	if err := run.Complete(kernel.RuntimeCompletion{Status: store.StatusCancelled}); err != nil {
		t.Fatal(err)
	}
	r, _ := st.GetRun(ctx, "rt-c")
	if r.Status != store.StatusCancelled {
		t.Errorf("recorded %s; want cancelled", r.Status)
	}
	if _, ok := r.Doc.Get("cancelRequested"); !ok {
		t.Error("the terminal record lost the cancel request")
	}
}

// A process paused past its lease (here: a store that stops answering
// the renewals) does not record its run completed: Complete reports the
// lease lost and the run reads interrupted, with the calls it observed
// as a floor.
func TestRuntimeRunLeaseLost(t *testing.T) {
	ctx := context.Background()
	mem := memory.New(nil)
	st := &stallingStore{Store: mem, which: func(call string) bool { return call == "UpdateFenced" || call == "GetRun" }}
	run, err := kernel.StartRuntimeRun(ctx, kernel.RuntimeRunOptions{WorkspaceID: "ws", TaskID: "t", RunID: "rt-l", Store: st,
		LeaseTTL: kernel.MinLeaseTTL, CleanupTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := run.Observe(kernel.RuntimeEvent{Type: kernel.RuntimeEventLLMCall, Usage: exactUsage(7, 1, 0)}); err != nil {
		t.Fatal(err)
	}
	st.stall.Store(true)
	select {
	case <-run.Context().Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the lost lease never cancelled the run's context")
	}
	err = run.Complete(kernel.RuntimeCompletion{Status: store.StatusCompleted})
	re, ok := errors.AsType[*kernel.RunError](err)
	if !ok || re.Reason != kernel.ReasonLeaseLost || run.Status() != store.StatusInterrupted {
		t.Fatalf("Complete: %v, status %s; want the lease lost and the run interrupted", err, run.Status())
	}
	st.stall.Store(false)
	rec, err := kernel.ReadRun(ctx, mem, "rt-l")
	if err != nil || rec.Status != store.StatusInterrupted {
		t.Fatalf("recorded %+v (%v); want interrupted", rec, err)
	}
	if in := rec.Spend.InputTokens; in.Value != 7 || in.Complete {
		t.Errorf("spend %s; want the observed 7 as a floor", in)
	}
}

// RuntimeRun.Confirm proves the lease by a fenced write that renews it:
// it returns the lease's new end while the run is this process's; once
// the store says otherwise (here another process ended the run) it is
// the *LeaseLostError, and the run's context ends with it; on an ended
// run it is a *RuntimeRunStateError.
func TestRuntimeRunConfirm(t *testing.T) {
	ctx := context.Background()
	mem := memory.New(nil)
	run, err := kernel.StartRuntimeRun(ctx, kernel.RuntimeRunOptions{WorkspaceID: "ws", TaskID: "t", RunID: "rt-c", Store: mem,
		LeaseTTL: kernel.MinLeaseTTL, CleanupTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	before := time.Now()
	until, err := run.Confirm(ctx)
	if err != nil || until.Before(before.Add(kernel.MinLeaseTTL)) {
		t.Fatalf("Confirm: %s, %v; want the lease renewed to at least %s", until, err, before.Add(kernel.MinLeaseTTL))
	}
	if r, err := mem.GetRun(ctx, "rt-c"); err != nil || r.LeaseUntil.Before(until) {
		t.Errorf("stored lease until %s (%v); want at least %s", r.LeaseUntil, err, until)
	}
	if _, err := mem.UpdateRun(ctx, "rt-c", func(r *store.Run) error { r.Status = store.StatusCancelled; return nil }); err != nil {
		t.Fatal(err)
	}
	_, err = run.Confirm(ctx)
	if _, ok := errors.AsType[*kernel.LeaseLostError](err); !ok || !errors.Is(err, contract.ErrLeaseLost) {
		t.Fatalf("Confirm of a run another process ended: %v; want a *LeaseLostError", err)
	}
	if _, ok := errors.AsType[*kernel.LeaseLostError](context.Cause(run.Context())); !ok {
		t.Errorf("the run's context ended with %v; want the lost lease", context.Cause(run.Context()))
	}
	run.Complete(kernel.RuntimeCompletion{Status: store.StatusCompleted})
	if _, err := run.Confirm(ctx); !errors.Is(err, kernel.ErrRuntimeRunState) {
		t.Errorf("Confirm of an ended run: %v; want a *RuntimeRunStateError", err)
	}
}
