package supervise_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/sqlite"
	"github.com/agentrt/agentrt/supervise"
)

// retryInboxExec refuses each worker's first `refusals` attempts with
// the bridge's acquire timeout (nothing spent, nothing bound); a later
// attempt waits for a steer in its inbox (bounded by ctx and wait) and
// answers "<task> DONE <steers>". It reads its inbox, so the run gives
// each worker one.
type retryInboxExec struct {
	refusals int
	wait     time.Duration // how long a running attempt waits for a steer; 0: none

	mu       sync.Mutex
	attempts map[supervise.NodeID]int
}

func (e *retryInboxExec) Execute(ctx context.Context, w supervise.Work) (supervise.WorkResult, error) {
	e.mu.Lock()
	if e.attempts == nil {
		e.attempts = map[supervise.NodeID]int{}
	}
	e.attempts[w.Node]++
	n := e.attempts[w.Node]
	e.mu.Unlock()
	if n <= e.refusals {
		return supervise.WorkResult{Spent: zeroSpend}, errors.New(acquireTimeout)
	}
	var steers []string
	if e.wait > 0 {
		t := time.NewTimer(e.wait)
		defer t.Stop()
		select {
		case <-w.Inbox.Waiting():
		case <-t.C:
		case <-ctx.Done():
			w.Inbox.Seal(ctx)
			return supervise.WorkResult{}, context.Cause(ctx)
		}
	}
	for _, m := range w.Inbox.TakeOrSeal(ctx) {
		steers = append(steers, m.Message)
	}
	return supervise.WorkResult{Text: w.Task + " DONE " + strings.Join(steers, "|"), Spent: ledger.Spend{Tokens: i64(10), Iterations: i64(1), MicroUSD: i64(10)}}, nil
}

func (e *retryInboxExec) ReportsUsage() bool { return true }
func (e *retryInboxExec) ReadsInbox() bool   { return true }

func (e *retryInboxExec) count(n supervise.NodeID) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.attempts[n]
}

// retryRun runs one worker on exec under retry; during drives the
// brain once the worker's first re-entry was reported (its backoff wait
// started), with the worker's id, and then the brain awaits the
// worker's settlement.
func retryRun(t *testing.T, exec supervise.Executor, retry supervise.WorkerRetry, during func(ctx context.Context, c *supervise.Coordinator, dir string, node supervise.NodeID)) (supervise.SupervisedResult, string) {
	t.Helper()
	retried := make(chan supervise.WorkerRetryAttempt, 8)
	o := baseOptions(t, exec, nil)
	o.RunDir, o.WorkerRetry = t.TempDir(), retry
	o.OnWorkerRetry = func(a supervise.WorkerRetryAttempt) { retried <- a }
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		sp, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "writer", Task: "write", Label: "w"})
		if err != nil {
			return supervise.BrainReport{}, err
		}
		select {
		case a := <-retried:
			if a.Node != sp.WorkerID {
				t.Errorf("retry reading of %s, want %s", a.Node, sp.WorkerID)
			}
		case <-time.After(30 * time.Second):
			t.Error("no worker retry was reported in 30s")
			return supervise.BrainReport{}, nil
		}
		if during != nil {
			during(ctx, c, o.RunDir, sp.WorkerID)
		}
		if _, err := c.Await(ctx, supervise.AwaitArgs{TimeoutMS: 60_000}); err != nil {
			return supervise.BrainReport{}, err
		}
		return supervise.BrainReport{}, nil
	})
	res, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker, supervise.VerbAwaitEvent), "t", o)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Tree) != 1 {
		t.Fatalf("tree %+v, want one worker", res.Tree)
	}
	return res, o.RunDir
}

// §3.6 workerRetry with §15 behaviour 49: a worker cancelled (CancelWorker,
// what agentrt supervise cancel writes) while it waits out a retry
// backoff ends at once, settles cancelled, its cancellation's effect
// cancelled, and is not started again; while it waits, observe_agent
// shows it live (running), not settled.
func TestWorkerRetryCancelledDuringBackoffBehaviour49(t *testing.T) {
	exec := &retryInboxExec{refusals: 9}
	start := time.Now()
	res, dir := retryRun(t, exec, supervise.WorkerRetry{MaxAttempts: 5, InitialBackoff: 10 * time.Minute, MaxTotal: time.Hour},
		func(ctx context.Context, c *supervise.Coordinator, dir string, node supervise.NodeID) {
			obs, err := c.Observe(node)
			if err != nil || obs.Status != supervise.StateRunning {
				t.Errorf("observe_agent during the backoff: status %s, err %v; want running", obs.Status, err)
			}
			if _, err := supervise.CancelWorker(ctx, dir, string(node), "op-wr", supervise.CancelOptions{Reason: "operator"}); err != nil {
				t.Error(err)
			}
		})
	if took := time.Since(start); took > 30*time.Second {
		t.Errorf("the run took %s: the cancel waited for the backoff", took)
	}
	n := res.Tree[0]
	if n.State != supervise.StateCancelled || exec.count(n.ID) != 1 {
		t.Errorf("worker %s (reason %q) after %d attempts; want cancelled after 1", n.State, n.Reason, exec.count(n.ID))
	}
	rec, err := supervise.ReadWorkerCancellation(context.Background(), dir, "op-wr")
	if err != nil || rec.Effect != kernel.EffectCancelled {
		t.Errorf("cancellation %+v, %v; want effect cancelled", rec, err)
	}
	// Nothing ran: the worker's reservation is its only charge, and it
	// spent nothing known.
	if n.Settlement == nil || n.Settlement.Spent.Tokens == nil || *n.Settlement.Spent.Tokens != 0 {
		t.Errorf("settlement %+v; want a known spend of 0 tokens", n.Settlement)
	}
}

// §3.6 workerRetry, steer_agent: a steer delivered while the worker
// waits out a retry backoff is not lost with the refused attempt: the
// next attempt's turn takes it, and it is acknowledged delivered.
func TestWorkerRetrySteerDuringBackoffReachesTheNextAttempt(t *testing.T) {
	exec := &retryInboxExec{refusals: 1, wait: 20 * time.Second}
	res, dir := retryRun(t, exec, supervise.WorkerRetry{MaxAttempts: 2, InitialBackoff: time.Second},
		func(ctx context.Context, _ *supervise.Coordinator, dir string, node supervise.NodeID) {
			if _, err := supervise.WriteWorkerSteer(ctx, dir, string(node), supervise.WorkerSteer{OperationID: "op-steer", Message: "use British spelling"}); err != nil {
				t.Error(err)
			}
		})
	n := res.Tree[0]
	if n.State != supervise.StateDone || exec.count(n.ID) != 2 {
		t.Fatalf("worker %s (reason %q) after %d attempts; want done after 2", n.State, n.Reason, exec.count(n.ID))
	}
	obs, err := supervise.ReadSteerAck(context.Background(), dir, "op-steer")
	if err != nil || obs == nil || obs.Effect != supervise.SteerDelivered {
		t.Errorf("steer ack %+v, %v; want delivered", obs, err)
	}
	if got := countKind(t, dir, supervise.KindWorkerRetry); got != 1 {
		t.Errorf("%d worker-retry records, want 1", got)
	}
}

// §3.6 onWorkerRetry: the hook never decides the retry and never holds
// the run: one that does not return is waited for at most ObserverGrace,
// then the worker is started again and delivers.
func TestOnWorkerRetryHangingBoundedByObserverGrace(t *testing.T) {
	exec := &refusingExec{refusals: 1, err: func() error { return errors.New(acquireTimeout) }, refusedSpent: zeroSpend}
	o := baseOptions(t, exec, nil)
	o.RunDir, o.Brain = t.TempDir(), oneWorker(t)
	o.WorkerRetry = supervise.WorkerRetry{MaxAttempts: 2, InitialBackoff: time.Millisecond}
	hang := make(chan struct{})
	defer close(hang)
	entered := make(chan struct{}, 1)
	o.OnWorkerRetry = func(supervise.WorkerRetryAttempt) {
		entered <- struct{}{}
		<-hang
	}
	start := time.Now()
	res, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker, supervise.VerbAwaitEvent), "t", o)
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	select {
	case <-entered:
	default:
		t.Fatal("OnWorkerRetry was never called")
	}
	if n := res.Tree[0]; exec.count(n.ID) != 2 || n.State != supervise.StateDone {
		t.Errorf("attempts %d, state %s (reason %q); want 2, done", exec.count(n.ID), n.State, n.Reason)
	}
	if took < supervise.ObserverGrace || took > supervise.ObserverGrace+20*time.Second {
		t.Errorf("the run took %s; want about ObserverGrace (%s): the hung hook waited for, then no longer", took, supervise.ObserverGrace)
	}
}

// §3.6 workerRetry: the manager returning while its worker waits out a
// retry backoff (no child grace) cancels the worker at once; it is not
// started again after the run ended.
func TestWorkerRetryManagerReturnsDuringBackoff(t *testing.T) {
	exec := &retryInboxExec{refusals: 9}
	retried := make(chan struct{}, 8)
	o := baseOptions(t, exec, nil)
	o.RunDir = t.TempDir()
	o.WorkerRetry = supervise.WorkerRetry{MaxAttempts: 5, InitialBackoff: 10 * time.Minute, MaxTotal: time.Hour}
	o.OnWorkerRetry = func(supervise.WorkerRetryAttempt) { retried <- struct{}{} }
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		if _, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "writer", Task: "write"}); err != nil {
			return supervise.BrainReport{}, err
		}
		select {
		case <-retried:
		case <-time.After(30 * time.Second):
			t.Error("no worker retry was reported in 30s")
		}
		return supervise.BrainReport{}, nil
	})
	start := time.Now()
	res, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker, supervise.VerbAwaitEvent), "t", o)
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 30*time.Second {
		t.Errorf("the run took %s: it waited out the backoff", took)
	}
	if n := res.Tree[0]; n.State != supervise.StateCancelled || exec.count(n.ID) != 1 {
		t.Errorf("worker %s after %d attempts; want cancelled after 1", n.State, exec.count(n.ID))
	}
}

// refusingBox is a real provider whose first `refusals` Creates are
// refused with the container pool's admission deadline (no box exists,
// nothing ran), then creates its environments.
type refusingBox struct {
	contract.Provider
	refusals int32
	creates  *atomic.Int32
}

func (p refusingBox) Create(ctx context.Context, in *contract.CreateInput) (contract.Environment, error) {
	if p.creates.Add(1) <= p.refusals {
		// Typed as the contract's refusal before anything was admitted
		// (no Run), carrying the pool's admission-deadline message.
		return nil, &contract.QuotaRefusalError{Provider: "pool", Message: "container-pool: acquire timeout after 50ms (in_flight=2/2)"}
	}
	return p.Provider.Create(ctx, in)
}

// §3.6 workerRetry through the executor the CLI runs every worker on:
// KernelExecutor binds the worker's execution id before the kernel run
// exists (so a cut process leaves it recoverable), then its provider's
// container pool refuses the box before anything ran. Binding an id is
// not an execution event: the worker is started again and delivers,
// charged its one real turn.
func TestWorkerRetryKernelExecutorBoxRefused(t *testing.T) {
	s, err := scripted.ParseScript([]byte(`{"turns": [{"repeat": true, "steps": [{"text": "DONE"},
	  {"usage": {"inputTokens": 3, "outputTokens": 4, "cost": 0.000001}, "mode": "delta"}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	var creates atomic.Int32
	exec := &supervise.KernelExecutor{Provider: refusingBox{Provider: scripted.New(s, scripted.Options{}), refusals: 1, creates: &creates}, Store: newStore(t)}
	o := baseOptions(t, exec, nil)
	o.RunDir, o.Brain = t.TempDir(), oneWorker(t)
	o.WorkerRetry = supervise.WorkerRetry{MaxAttempts: 3, InitialBackoff: time.Millisecond}
	res, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker, supervise.VerbAwaitEvent), "t", o)
	if err != nil {
		t.Fatal(err)
	}
	n := res.Tree[0]
	if n.State != supervise.StateDone || creates.Load() != 2 {
		t.Fatalf("worker %s (reason %q) after %d box requests; want done after 2 (one refused, one retried)", n.State, n.Reason, creates.Load())
	}
	if res.Spent.Tokens != 7 || !res.Spent.TokensKnown {
		t.Errorf("run spent %d tokens (known %v), want 7, known: the refused attempt spent nothing", res.Spent.Tokens, res.Spent.TokensKnown)
	}
	if got := countKind(t, o.RunDir, supervise.KindWorkerRetry); got != 1 {
		t.Errorf("%d worker-retry records, want 1", got)
	}
}

// §3.6 workerRetry proof 2, §6 resources: an attempt is "spent known
// zero" only on every channel its reservation holds — a caller-measured
// resource (GPU seconds) it did not report may have been used, so it is
// not retried; one it reported as 0 is.
func TestWorkerRetryUnreportedResourceIsNotNothing(t *testing.T) {
	for _, tc := range []struct {
		name         string
		refusedSpent ledger.Spend
		wantAttempts int
		wantState    supervise.State
	}{
		{"the reserved resource unreported", zeroSpend, 1, supervise.StateFailed},
		{"the reserved resource reported 0", ledger.Spend{Tokens: i64(0), Iterations: i64(0), MicroUSD: i64(0), Resources: map[string]*int64{"gpu-s": i64(0)}},
			2, supervise.StateDone},
	} {
		t.Run(tc.name, func(t *testing.T) {
			exec := &refusingExec{refusals: 1, err: func() error { return errors.New(acquireTimeout) }, refusedSpent: tc.refusedSpent}
			o := baseOptions(t, exec, nil)
			o.Budget.Resources = map[string]int64{"gpu-s": 100}
			o.PerWorker.Resources = map[string]int64{"gpu-s": 10}
			o.RunDir, o.Brain = t.TempDir(), oneWorker(t)
			o.WorkerRetry = supervise.WorkerRetry{MaxAttempts: 3, InitialBackoff: time.Millisecond}
			res, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker, supervise.VerbAwaitEvent), "t", o)
			if err != nil {
				t.Fatal(err)
			}
			n := res.Tree[0]
			if got := exec.count(n.ID); got != tc.wantAttempts || n.State != tc.wantState {
				t.Errorf("attempts %d, state %s (reason %q); want %d, %s", got, n.State, n.Reason, tc.wantAttempts, tc.wantState)
			}
		})
	}
}

// failOn is a real store whose appends holding word fail (written
// nothing), every other append passing through.
type failOn struct {
	store.Store
	word string
}

func (s *failOn) AppendEvents(ctx context.Context, f store.Fence, events []store.NewEvent) ([]store.Event, error) {
	for _, e := range events {
		if strings.Contains(string(canonjson.Marshal(e.Body)), s.word) {
			return nil, errors.New("failOn: the journal refused the append")
		}
	}
	return s.Store.AppendEvents(ctx, f, events)
}

// §3.6 workerRetry: a retry the journal cannot hold is not started — a
// resume could not tell it happened — so the worker settles failed with
// its own refusal after one attempt, its settlement journaled, and the
// run goes on.
func TestWorkerRetryJournalAppendFails(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "runs.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	exec := &refusingExec{refusals: 1, err: func() error { return errors.New(acquireTimeout) }, refusedSpent: zeroSpend}
	o := baseOptions(t, exec, nil)
	o.Brain, o.SpawnStore, o.RunID = oneWorker(t), &failOn{Store: st, word: supervise.KindWorkerRetry}, "wr-journal"
	o.WorkerRetry = supervise.WorkerRetry{MaxAttempts: 3, InitialBackoff: time.Millisecond}
	res, err := supervise.Supervise(ctx, managerProfile(t, supervise.VerbSpawnWorker, supervise.VerbAwaitEvent), "t", o)
	if err != nil {
		t.Fatal(err)
	}
	n := res.Tree[0]
	if got := exec.count(n.ID); got != 1 || n.State != supervise.StateFailed || !strings.Contains(n.Reason, "acquire timeout") {
		t.Errorf("attempts %d, state %s (reason %q); want 1, failed with the refusal", got, n.State, n.Reason)
	}
	if n.Settlement == nil || n.Settlement.Spent.Tokens == nil || *n.Settlement.Spent.Tokens != 0 {
		t.Errorf("settlement %+v; want known 0 tokens", n.Settlement)
	}
}
