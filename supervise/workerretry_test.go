package supervise_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/internal/pgtest"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/postgres"
	"github.com/agentrt/agentrt/store/sqlite"
	"github.com/agentrt/agentrt/supervise"
)

// acquireTimeout is the pre-spawn refusal the reference measured: a
// bridge's host executor refusing a worker past its admission deadline.
const acquireTimeout = "bridgeExecutor: bridge stream error: host-executor: acquire timeout after 60000ms (in_flight=4/4, queued=1)"

// refusingExec refuses each worker's first `refusals` attempts with err
// (reporting refusedSpent), then runs it: "<task> DONE", 10 tokens, 1
// iteration, 10 µUSD. It counts attempts per node.
type refusingExec struct {
	refusals     int
	err          func() error
	refusedSpent ledger.Spend
	bind         bool // each attempt binds an execution before it is refused
	event        bool // each refused attempt streams an event first (it ran)

	mu       sync.Mutex
	attempts map[supervise.NodeID]int
}

func (e *refusingExec) Execute(ctx context.Context, w supervise.Work) (supervise.WorkResult, error) {
	e.mu.Lock()
	if e.attempts == nil {
		e.attempts = map[supervise.NodeID]int{}
	}
	e.attempts[w.Node]++
	n := e.attempts[w.Node]
	e.mu.Unlock()
	if e.bind && w.Bind != nil {
		if err := w.Bind(ctx, "exec-"+string(w.Node)); err != nil {
			return supervise.WorkResult{}, err
		}
	}
	if n <= e.refusals {
		if e.event && w.Observer != nil {
			if err := w.Observer.Event(ctx, contract.EnvironmentEvent{Type: "status"}); err != nil {
				return supervise.WorkResult{}, err
			}
		}
		return supervise.WorkResult{Spent: e.refusedSpent}, e.err()
	}
	return supervise.WorkResult{Text: w.Task + " DONE", Spent: ledger.Spend{Tokens: i64(10), Iterations: i64(1), MicroUSD: i64(10)}}, nil
}

func (e *refusingExec) ReportsUsage() bool { return true }

func (e *refusingExec) count(n supervise.NodeID) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.attempts[n]
}

var zeroSpend = ledger.Spend{Tokens: i64(0), Iterations: i64(0), MicroUSD: i64(0)}

// oneWorker is a brain that spawns one worker, awaits its settlement and
// returns.
func oneWorker(t *testing.T) supervise.Brain {
	return supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		tool(t, ctx, c, supervise.VerbSpawnWorker, map[string]any{"profile": "writer", "task": "write"})
		tool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{"timeoutMs": 60000})
		return supervise.BrainReport{}, nil
	})
}

// §3.6 workerRetry, onWorkerRetry: a worker refused before it ran is
// started again within its reservation; everything else settles as it
// did. Every case checks the attempts made, the worker's end, the hook's
// readings and the run's spend (a retried attempt spent nothing, so the
// spend is the last attempt's; unknown stays unknown).
func TestWorkerRetry(t *testing.T) {
	preSpawn := func() error { return errors.New(acquireTimeout) }
	tests := []struct {
		name         string
		retry        supervise.WorkerRetry
		refusals     int
		err          func() error
		refusedSpent ledger.Spend
		bind, event  bool
		wantAttempts int
		wantState    supervise.State
		wantHook     []int
		wantTokens   int64 // the worker's committed tokens
		wantKnown    bool
	}{
		{name: "retried then delivered", retry: supervise.WorkerRetry{MaxAttempts: 3, InitialBackoff: time.Millisecond},
			refusals: 2, err: preSpawn, refusedSpent: zeroSpend, wantAttempts: 3, wantState: supervise.StateDone, wantHook: []int{1, 2}, wantTokens: 10, wantKnown: true},
		{name: "exhausted: failed with the last error", retry: supervise.WorkerRetry{MaxAttempts: 3, InitialBackoff: time.Millisecond},
			refusals: 9, err: preSpawn, refusedSpent: zeroSpend, wantAttempts: 3, wantState: supervise.StateFailed, wantHook: []int{1, 2}, wantTokens: 0, wantKnown: true},
		{name: "the zero value never retries", refusals: 1, err: preSpawn, refusedSpent: zeroSpend,
			wantAttempts: 1, wantState: supervise.StateFailed, wantKnown: true},
		{name: "a failure that is not a pre-spawn refusal is not retried", retry: supervise.WorkerRetry{MaxAttempts: 3, InitialBackoff: time.Millisecond},
			refusals: 1, err: func() error { return errors.New("read tcp: connection reset by peer (ECONNRESET)") }, refusedSpent: zeroSpend,
			wantAttempts: 1, wantState: supervise.StateFailed, wantKnown: true},
		{name: "a typed NotStartedError is retried", retry: supervise.WorkerRetry{MaxAttempts: 2, InitialBackoff: time.Millisecond},
			refusals: 1, err: func() error { return &supervise.NotStartedError{Err: errors.New("no slot")} }, refusedSpent: zeroSpend,
			wantAttempts: 2, wantState: supervise.StateDone, wantHook: []int{1}, wantTokens: 10, wantKnown: true},
		{name: "a caller's PreSpawn signature is retried", retry: supervise.WorkerRetry{MaxAttempts: 2, InitialBackoff: time.Millisecond,
			PreSpawn: []*regexp.Regexp{regexp.MustCompile(`^quota gate: queue full$`)}},
			refusals: 1, err: func() error { return errors.New("quota gate: queue full") }, refusedSpent: zeroSpend,
			wantAttempts: 2, wantState: supervise.StateDone, wantHook: []int{1}, wantTokens: 10, wantKnown: true},
		{name: "a terminal refusal wrapped as not started is not retried", retry: supervise.WorkerRetry{MaxAttempts: 3, InitialBackoff: time.Millisecond},
			refusals: 1, err: func() error { return &supervise.NotStartedError{Err: supervise.ErrInvalidOptions} }, refusedSpent: zeroSpend,
			wantAttempts: 1, wantState: supervise.StateFailed, wantKnown: true},
		{name: "an attempt that spent is not retried, its spend charged", retry: supervise.WorkerRetry{MaxAttempts: 3, InitialBackoff: time.Millisecond},
			refusals: 1, err: preSpawn, refusedSpent: ledger.Spend{Tokens: i64(7), Iterations: i64(1), MicroUSD: i64(0)},
			wantAttempts: 1, wantState: supervise.StateFailed, wantTokens: 7, wantKnown: true},
		{name: "an attempt whose spend is unknown is not retried; unknown stays unknown", retry: supervise.WorkerRetry{MaxAttempts: 3, InitialBackoff: time.Millisecond},
			refusals: 1, err: preSpawn, refusedSpent: ledger.Spend{Iterations: i64(0), MicroUSD: i64(0)},
			wantAttempts: 1, wantState: supervise.StateFailed, wantTokens: 1_000, wantKnown: false},
		{name: "an attempt that streamed an execution event is not retried", retry: supervise.WorkerRetry{MaxAttempts: 3, InitialBackoff: time.Millisecond},
			refusals: 1, err: preSpawn, refusedSpent: zeroSpend, event: true,
			wantAttempts: 1, wantState: supervise.StateFailed, wantKnown: true},
		// Binding an execution id is journaling, not running: KernelExecutor
		// and fleet.Executor bind before anything exists.
		{name: "an attempt that bound an execution and ran nothing is retried", retry: supervise.WorkerRetry{MaxAttempts: 3, InitialBackoff: time.Millisecond},
			refusals: 1, err: preSpawn, refusedSpent: zeroSpend, bind: true,
			wantAttempts: 2, wantState: supervise.StateDone, wantHook: []int{1}, wantTokens: 10, wantKnown: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			exec := &refusingExec{refusals: tc.refusals, err: tc.err, refusedSpent: tc.refusedSpent, bind: tc.bind, event: tc.event}
			o := baseOptions(t, exec, nil)
			o.RunDir, o.WorkerRetry, o.Brain = t.TempDir(), tc.retry, oneWorker(t)
			var (
				mu   sync.Mutex
				hook []supervise.WorkerRetryAttempt
			)
			if tc.retry.MaxAttempts > 1 {
				o.OnWorkerRetry = func(a supervise.WorkerRetryAttempt) {
					mu.Lock()
					defer mu.Unlock()
					hook = append(hook, a)
				}
			}
			res, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker, supervise.VerbAwaitEvent), "t", o)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Tree) != 1 {
				t.Fatalf("tree %+v, want one worker", res.Tree)
			}
			n := res.Tree[0]
			if got := exec.count(n.ID); got != tc.wantAttempts {
				t.Errorf("attempts %d, want %d", got, tc.wantAttempts)
			}
			if n.State != tc.wantState {
				t.Errorf("state %s (reason %q), want %s", n.State, n.Reason, tc.wantState)
			}
			if tc.wantState == supervise.StateFailed && !strings.Contains(n.Reason, tc.err().Error()) {
				t.Errorf("failed with %q, want the last attempt's error %q", n.Reason, tc.err().Error())
			}
			mu.Lock()
			var attempts []int
			for _, a := range hook {
				attempts = append(attempts, a.Attempt)
				if a.Node != n.ID || a.Profile != "writer" || a.Error != tc.err().Error() || a.Wait <= 0 {
					t.Errorf("hook reading %+v: want node %s, profile writer, error %q, a wait", a, n.ID, tc.err().Error())
				}
			}
			mu.Unlock()
			if diff := cmp.Diff(tc.wantHook, attempts); diff != "" {
				t.Errorf("OnWorkerRetry attempts (-want +got):\n%s", diff)
			}
			if n.Settlement == nil {
				t.Fatalf("no settlement: %+v", n)
			}
			sp := n.Settlement.Spent
			if tc.wantKnown != (sp.Tokens != nil) {
				t.Errorf("settled tokens known %v, want %v", sp.Tokens != nil, tc.wantKnown)
			}
			if res.Spent.Tokens != tc.wantTokens || res.Spent.TokensKnown != tc.wantKnown {
				t.Errorf("run spent %d tokens (known %v), want %d (known %v)", res.Spent.Tokens, res.Spent.TokensKnown, tc.wantTokens, tc.wantKnown)
			}
			// One settlement for the worker, however many attempts.
			if got := countKind(t, o.RunDir, supervise.KindSettled); got != 1 {
				t.Errorf("%d %s records, want 1", got, supervise.KindSettled)
			}
			// The journal holds one worker-retry record per re-entry.
			if got := countKind(t, o.RunDir, supervise.KindWorkerRetry); got != len(tc.wantHook) {
				t.Errorf("%d %s records, want %d", got, supervise.KindWorkerRetry, len(tc.wantHook))
			}
		})
	}
}

// §3.6 workerRetry: a WorkerRetry Supervise cannot act on is refused
// before anything runs, as an *OptionError naming its pointer.
func TestWorkerRetryRefusedWhenInvalid(t *testing.T) {
	for _, tc := range []struct {
		name        string
		tune        func(*supervise.Options)
		wantPointer string
	}{
		{"negative MaxAttempts", func(o *supervise.Options) { o.WorkerRetry.MaxAttempts = -1 }, "/workerRetry/maxAttempts"},
		{"negative InitialBackoff", func(o *supervise.Options) {
			o.WorkerRetry = supervise.WorkerRetry{MaxAttempts: 2, InitialBackoff: -time.Second}
		}, "/workerRetry/initialBackoffMs"},
		{"negative MaxBackoff", func(o *supervise.Options) {
			o.WorkerRetry = supervise.WorkerRetry{MaxAttempts: 2, MaxBackoff: -time.Second}
		}, "/workerRetry/maxBackoffMs"},
		{"negative MaxTotal", func(o *supervise.Options) {
			o.WorkerRetry = supervise.WorkerRetry{MaxAttempts: 2, MaxTotal: -time.Second}
		}, "/workerRetry/maxTotalMs"},
		{"nil PreSpawn signature", func(o *supervise.Options) {
			o.WorkerRetry = supervise.WorkerRetry{MaxAttempts: 2, PreSpawn: []*regexp.Regexp{regexp.MustCompile("x"), nil}}
		}, "/workerRetry/additionalPreSpawnSignatures/1"},
		{"OnWorkerRetry without retries", func(o *supervise.Options) { o.OnWorkerRetry = func(supervise.WorkerRetryAttempt) {} }, "/onWorkerRetry"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := baseOptions(t, &refusingExec{}, nil)
			o.RunDir = t.TempDir()
			tc.tune(&o)
			wantOptionRefused(t, o, tc.wantPointer)
		})
	}
}

// §3.6 workerRetry: the run's deadline cuts the retries. A backoff that
// would end past the deadline is not waited: the worker settles failed
// with its refusal at once, not at the deadline, with one attempt made.
func TestWorkerRetryDeadlineCutsRetries(t *testing.T) {
	exec := &refusingExec{refusals: 9, err: func() error { return errors.New(acquireTimeout) }, refusedSpent: zeroSpend}
	o := baseOptions(t, exec, nil)
	o.RunDir, o.Brain = t.TempDir(), oneWorker(t)
	o.Deadline = time.Now().Add(30 * time.Second)
	o.WorkerRetry = supervise.WorkerRetry{MaxAttempts: 5, InitialBackoff: time.Minute}
	start := time.Now()
	res, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker, supervise.VerbAwaitEvent), "t", o)
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 20*time.Second {
		t.Errorf("the run took %s: the retry waited toward the deadline", took)
	}
	n := res.Tree[0]
	if got := exec.count(n.ID); got != 1 || n.State != supervise.StateFailed || !strings.Contains(n.Reason, "acquire timeout") {
		t.Errorf("attempts %d, state %s, reason %q; want 1 attempt, failed with the refusal", got, n.State, n.Reason)
	}
	// MaxTotal cuts the same way.
	exec = &refusingExec{refusals: 9, err: func() error { return errors.New(acquireTimeout) }, refusedSpent: zeroSpend}
	o = baseOptions(t, exec, nil)
	o.RunDir, o.Brain = t.TempDir(), oneWorker(t)
	o.WorkerRetry = supervise.WorkerRetry{MaxAttempts: 5, InitialBackoff: time.Minute, MaxTotal: time.Second}
	if res, err = supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker, supervise.VerbAwaitEvent), "t", o); err != nil {
		t.Fatal(err)
	}
	if got := exec.count(res.Tree[0].ID); got != 1 || res.Tree[0].State != supervise.StateFailed {
		t.Errorf("under MaxTotal: attempts %d, state %s; want 1, failed", got, res.Tree[0].State)
	}
}

// §3.6 onWorkerRetry: the hook never decides the retry. One that panics
// is logged and the worker is still retried and delivered.
func TestOnWorkerRetryPanicContained(t *testing.T) {
	exec := &refusingExec{refusals: 1, err: func() error { return errors.New(acquireTimeout) }, refusedSpent: zeroSpend}
	o := baseOptions(t, exec, nil)
	o.RunDir, o.Brain = t.TempDir(), oneWorker(t)
	o.WorkerRetry = supervise.WorkerRetry{MaxAttempts: 2, InitialBackoff: time.Millisecond}
	o.OnWorkerRetry = func(supervise.WorkerRetryAttempt) { panic("hook bug") }
	res, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker, supervise.VerbAwaitEvent), "t", o)
	if err != nil {
		t.Fatal(err)
	}
	if n := res.Tree[0]; exec.count(n.ID) != 2 || n.State != supervise.StateDone || res.Status != supervise.StatusWinner {
		t.Errorf("attempts %d, state %s, status %s; want 2, done, a winner", exec.count(n.ID), n.State, res.Status)
	}
}

// failAfter is a real store whose appends fail once an append whose
// bodies contain word has been written: the journal's view of a process
// that died right after it.
type failAfter struct {
	store.Store
	word string
	cut  atomic.Bool
}

func (s *failAfter) AppendEvents(ctx context.Context, f store.Fence, events []store.NewEvent) ([]store.Event, error) {
	if s.cut.Load() {
		return nil, errors.New("failAfter: the process is gone")
	}
	out, err := s.Store.AppendEvents(ctx, f, events)
	for _, e := range events {
		if strings.Contains(string(canonjson.Marshal(e.Body)), s.word) {
			s.cut.Store(true)
		}
	}
	return out, err
}

// cutAfterWorkerRetry keeps dir's spawn journal up to and including its
// first worker-retry record: the process died between the attempts.
func cutAfterWorkerRetry(t *testing.T, dir string) {
	t.Helper()
	path := filepath.Join(dir, supervise.SpawnJournalFile)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	found := false
	for line := range bytes.Lines(data) {
		out.Write(line)
		var rec struct{ Kind string }
		if err := json.Unmarshal(line, &rec); err != nil {
			t.Fatalf("a journal line does not decode: %v", err)
		}
		if rec.Kind == supervise.KindWorkerRetry {
			found = true
			break
		}
	}
	if !found {
		t.Fatalf("no %s record in %s", supervise.KindWorkerRetry, path)
	}
	if err := os.WriteFile(path, out.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
}

// §3.6 workerRetry, RES-03, behaviour 46: a run cut between a worker's
// attempts (its refusal and retry journaled, no settlement) resumes
// with the worker in doubt, the way any spawn without a bound execution
// or a settlement is: it is not started again, its reservation is
// charged at its ceiling, and the pool stays conserved. The same with
// the journal in a file, SQLite and PostgreSQL.
func TestWorkerRetryResumeAtACutBetweenAttempts(t *testing.T) {
	for _, kind := range []string{"file", "sqlite", "postgres"} {
		t.Run(kind, func(t *testing.T) {
			ctx := context.Background()
			first := &refusingExec{refusals: 1, err: func() error { return errors.New(acquireTimeout) }, refusedSpent: zeroSpend}
			o := baseOptions(t, first, nil)
			o.Brain = oneWorker(t)
			o.WorkerRetry = supervise.WorkerRetry{MaxAttempts: 3, InitialBackoff: time.Millisecond}
			var st store.Store
			switch kind {
			case "file":
				o.RunDir = t.TempDir()
			case "sqlite":
				s, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "runs.db"), sqlite.Options{})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { s.Close() })
				st = s
			case "postgres":
				s, err := postgres.Open(ctx, pgtest.Schema(t), postgres.Options{})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { s.Close() })
				st = s
			}
			if st != nil {
				o.SpawnStore, o.RunID = &failAfter{Store: st, word: supervise.KindWorkerRetry}, "wr-cut"
			}
			_, _ = supervise.Supervise(ctx, managerProfile(t, supervise.VerbSpawnWorker, supervise.VerbAwaitEvent), "t", o)
			if st == nil {
				cutAfterWorkerRetry(t, o.RunDir)
			}

			again := &refusingExec{err: func() error { return errors.New("never") }}
			r := baseOptions(t, again, nil)
			r.Resume, r.RunDir, r.WorkerRetry = true, o.RunDir, o.WorkerRetry
			if st != nil {
				r.SpawnStore, r.RunID = st, "wr-cut"
			}
			var readout ledger.Readout
			r.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
				readout = c.Readout()
				return supervise.BrainReport{}, nil
			})
			res, err := supervise.Supervise(ctx, managerProfile(t, supervise.VerbSpawnWorker, supervise.VerbAwaitEvent), "", r)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Tree) != 1 {
				t.Fatalf("tree %+v, want the one cut worker", res.Tree)
			}
			n := res.Tree[0]
			if !n.InDoubt || again.count(n.ID) != 0 {
				t.Errorf("worker %s: in doubt %v, started again %d times; want in doubt, never started again", n.ID, n.InDoubt, again.count(n.ID))
			}
			for ch, b := range readout.Channels {
				if b.Total != b.Free+b.Reserved+b.Committed {
					t.Errorf("%s does not conserve on resume: %+v", ch, b)
				}
			}
			if res.Spent.TokensKnown {
				t.Errorf("the in-doubt worker's tokens read known: %+v", res.Spent)
			}
		})
	}
}
