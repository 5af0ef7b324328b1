package supervise_test

// Outside scenarios for result arms (§15 behaviours 42, 43) and restore
// across a SIGKILLed process (behaviours 40, 46, 47), written from
// spec/runtime.md §3.6.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/memory"
	"github.com/agentrt/agentrt/supervise"
)

// OutsideBrainError is an exported error type a brain fails with: its
// name must reach the result (§3.6 driver-fault arm).
type OutsideBrainError struct{ Msg string }

func (e *OutsideBrainError) Error() string { return e.Msg }

// TestOutsideResultArms (behaviours 42, 43): a throwing driver with no
// down child is driver-failed naming the error; a run whose budget was
// exhausted (a ceiling reached, or its deadline) stays budget-exhausted
// when the driver then throws; known flags are false exactly when gaps
// name the channel.
func TestOutsideResultArms(t *testing.T) {
	workers := map[string]*profile.Profile{"worker": osProfile(t, osWorkerProfile)}
	cases := []struct {
		name       string
		budget     ledger.Budget
		deadline   time.Duration
		brain      func(g *gatedExecutor) funcBrain
		wantReason supervise.NoWinnerReason
		wantErr    *supervise.DriverError
	}{{
		name:   "typed error, no child",
		budget: ledger.Budget{Tokens: osI64(1000), Iterations: osI64(4)},
		brain: func(*gatedExecutor) funcBrain {
			return func(context.Context, *supervise.Coordinator, string) (supervise.BrainReport, error) {
				return supervise.BrainReport{}, fmt.Errorf("driving: %w", &OutsideBrainError{Msg: "the model broke"})
			}
		},
		wantReason: supervise.ReasonDriverFailed,
		wantErr:    &supervise.DriverError{Name: "OutsideBrainError", Message: "driving: the model broke"},
	}, {
		name:   "anonymous error after a delivered-but-failing child",
		budget: ledger.Budget{Tokens: osI64(1000), Iterations: osI64(4)},
		brain: func(g *gatedExecutor) funcBrain {
			return func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
				r, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "worker", Task: "t"})
				if err != nil {
					return supervise.BrainReport{}, err
				}
				g.release(r.WorkerID, osRelease{text: "not it", spent: ledger.Spend{Tokens: osI64(1), Iterations: osI64(1)}})
				if _, err := c.Await(ctx, supervise.AwaitArgs{TimeoutMS: 30_000}); err != nil {
					return supervise.BrainReport{}, err
				}
				return supervise.BrainReport{}, errors.New("gave up")
			}
		},
		wantReason: supervise.ReasonDriverFailed,
		wantErr:    &supervise.DriverError{Name: "Error", Message: "gave up"},
	}, {
		name:   "budget exhausted, then the driver throws",
		budget: ledger.Budget{Tokens: osI64(1000), Iterations: osI64(4)},
		brain: func(g *gatedExecutor) funcBrain {
			return func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
				all := int64(1000)
				r, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "worker", Task: "t", Budget: &supervise.SpawnBudget{Tokens: &all}})
				if err != nil {
					return supervise.BrainReport{}, err
				}
				g.release(r.WorkerID, osRelease{text: "not it", spent: ledger.Spend{Tokens: osI64(1000), Iterations: osI64(1)}})
				if _, err := c.Await(ctx, supervise.AwaitArgs{TimeoutMS: 30_000}); err != nil {
					return supervise.BrainReport{}, err
				}
				_, err = c.Spawn(ctx, supervise.SpawnArgs{Profile: "worker", Task: "t2"})
				if code, _ := supervise.CodeOf(err); code != supervise.CodeBudgetExhausted {
					return supervise.BrainReport{}, fmt.Errorf("second spawn: %v, want budget-exhausted", err)
				}
				return supervise.BrainReport{}, &OutsideBrainError{Msg: "out of budget, so I throw"}
			}
		},
		wantReason: supervise.ReasonBudgetExhausted,
	}, {
		name:     "deadline passed, then the driver throws",
		budget:   ledger.Budget{Tokens: osI64(1000), Iterations: osI64(4)},
		deadline: 300 * time.Millisecond,
		brain: func(*gatedExecutor) funcBrain {
			return func(ctx context.Context, _ *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
				select {
				case <-ctx.Done():
				case <-time.After(time.Minute):
					return supervise.BrainReport{}, errors.New("the run's deadline never reached the brain")
				}
				return supervise.BrainReport{}, &OutsideBrainError{Msg: "deadline, so I throw"}
			}
		},
		wantReason: supervise.ReasonBudgetExhausted,
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := newGated()
			o := supervise.Options{Budget: tc.budget, PerWorker: ledger.Budget{Tokens: osI64(100), Iterations: osI64(1)},
				Profiles: workers, Deliverable: passCheck, Executor: g, Brain: tc.brain(g), RunID: "arms"}
			if tc.deadline > 0 {
				o.Deadline = time.Now().Add(tc.deadline)
			}
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
			defer cancel()
			res, err := supervise.Supervise(ctx, osManager(t), "arms", o)
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != supervise.StatusNoWinner || res.Reason != tc.wantReason {
				t.Fatalf("status %s reason %s (error %+v), want no-winner %s", res.Status, res.Reason, res.Error, tc.wantReason)
			}
			if d := cmp.Diff(tc.wantErr, res.Error); d != "" {
				t.Fatalf("error (-want +got):\n%s", d)
			}
			if res.Spent.TokensKnown != (len(gapsOn(res.SpendGaps, "tokens")) == 0) {
				t.Fatalf("behaviour 43: tokensKnown=%v with gaps %+v", res.Spent.TokensKnown, res.SpendGaps)
			}
		})
	}
}

// Restore child: the re-executed test binary runs a supervisor in the
// run dir named by osRestoreDir, completes worker a, starts worker b
// (which never ends), writes osReadyFile and waits to be SIGKILLed.
const (
	osRestoreChild = "AGENTRT_OS11_RESTORE_CHILD"
	osRestoreDir   = "AGENTRT_OS11_RESTORE_DIR"
	osRestoreDL    = "AGENTRT_OS11_RESTORE_DEADLINE" // unix ns, optional
	osReadyFile    = "ready"
	osOutRefFile   = "a.outref"
	osStartFile    = "start" // unix ns of the child's run start
)

var (
	osBudget    = ledger.Budget{Tokens: osI64(5_000), Iterations: osI64(10), MicroUSD: osI64(1_000_000)}
	osPerWorker = ledger.Budget{Tokens: osI64(300), Iterations: osI64(1), MicroUSD: osI64(10_000)}
	osSpentA    = ledger.Spend{Tokens: osI64(40), Iterations: osI64(1), MicroUSD: osI64(400)}
	// b's ceiling: per-spawn over the per-worker default.
	osBTokens, osBIters, osBUSD = int64(700), int64(2), 0.05
)

// countingGate counts executions per task and runs them on a gate.
type countingGate struct {
	*gatedExecutor
	mu    sync.Mutex
	calls map[string]int
}

func (c *countingGate) Execute(ctx context.Context, w supervise.Work) (supervise.WorkResult, error) {
	c.mu.Lock()
	c.calls[w.Task]++
	c.mu.Unlock()
	if w.Task == "task a" {
		return supervise.WorkResult{Text: "DONE", Spent: osSpentA}, nil
	}
	return c.gatedExecutor.Execute(ctx, w)
}

func (c *countingGate) count(task string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls[task]
}

// outsideRestoreChildFromEnv runs the restore child when its env says
// so (called from TestMain).
func outsideRestoreChildFromEnv() (bool, error) {
	if os.Getenv(osRestoreChild) == "" {
		return false, nil
	}
	dir := os.Getenv(osRestoreDir)
	side := filepath.Dir(dir)
	var deadline time.Time
	if s := os.Getenv(osRestoreDL); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return true, err
		}
		deadline = time.Unix(0, n)
	}
	if err := os.WriteFile(filepath.Join(side, osStartFile), []byte(strconv.FormatInt(time.Now().UnixNano(), 10)), 0o600); err != nil {
		return true, err
	}
	exec := &countingGate{gatedExecutor: newGated(), calls: map[string]int{}}
	brain := funcBrain(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		if _, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "worker", Task: "task a", Label: "a", Key: "a"}); err != nil {
			return supervise.BrainReport{}, err
		}
		ev, err := c.Await(ctx, supervise.AwaitArgs{TimeoutMS: 60_000})
		if err != nil || ev.Event == nil {
			return supervise.BrainReport{}, fmt.Errorf("await a: %+v %v", ev, err)
		}
		if err := os.WriteFile(filepath.Join(side, osOutRefFile), []byte(ev.Event.OutRef), 0o600); err != nil {
			return supervise.BrainReport{}, err
		}
		usd := osBUSD
		rb, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "worker", Task: "task b", Label: "b",
			Budget: &supervise.SpawnBudget{Tokens: &osBTokens, Iterations: &osBIters, USD: &usd}})
		if err != nil {
			return supervise.BrainReport{}, err
		}
		_, started := exec.gate(rb.WorkerID)
		select {
		case <-started:
		case <-time.After(time.Minute):
			return supervise.BrainReport{}, errors.New("worker b never started")
		}
		if err := os.WriteFile(filepath.Join(side, osReadyFile), nil, 0o600); err != nil {
			return supervise.BrainReport{}, err
		}
		<-ctx.Done()
		return supervise.BrainReport{}, errors.New("the child's run ended before it was killed")
	})
	manager, err := profile.Parse([]byte(osManagerDoc()))
	if err != nil {
		return true, err
	}
	worker, err := profile.Parse([]byte(osWorkerProfile))
	if err != nil {
		return true, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := supervise.Supervise(ctx, manager, "restore", supervise.Options{
		Budget: osBudget, PerWorker: osPerWorker, Deadline: deadline,
		Profiles:    map[string]*profile.Profile{"worker": worker},
		Deliverable: passCheck, Executor: exec, Brain: brain, RunDir: dir, RunID: "restore",
	})
	return true, fmt.Errorf("the restore child ended instead of being killed: %+v %v", res, err)
}

// startKilledChild runs the restore child and SIGKILLs it once worker a
// committed and worker b started. It returns the run dir and a's outRef.
func startKilledChild(t *testing.T, deadline time.Time) (dir, outRef string, start time.Time) {
	t.Helper()
	side := t.TempDir()
	dir = filepath.Join(side, "run")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), osRestoreChild+"=1", osRestoreDir+"="+dir)
	if !deadline.IsZero() {
		cmd.Env = append(cmd.Env, osRestoreDL+"="+strconv.FormatInt(deadline.UnixNano(), 10))
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	limit := time.After(90 * time.Second)
	for {
		if _, err := os.Stat(filepath.Join(side, osReadyFile)); err == nil {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("the child ended before it was ready: %v\n%s", err, stderr.String())
		case <-limit:
			_ = cmd.Process.Kill()
			t.Fatalf("the child was not ready in 90 s:\n%s", stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err == nil || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("child: %v, want killed", err)
	}
	b, err := os.ReadFile(filepath.Join(side, osOutRefFile))
	if err != nil || len(b) == 0 {
		t.Fatalf("a's outRef: %q %v", b, err)
	}
	s, err := os.ReadFile(filepath.Join(side, osStartFile))
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.ParseInt(string(s), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return dir, string(b), time.Unix(0, n)
}

// TestOutsideRestoreAfterSIGKILL (behaviours 40, 43, 46, 47): a
// supervisor process is SIGKILLed with worker a committed and worker b
// started. A rerun without Resume is refused and leaves the journal
// byte-identical; the resume replays a (not executed again, same
// outRef), charges b at its full ceiling as a never-settled gap on every
// channel, and settles with a as the winner.
func TestOutsideRestoreAfterSIGKILL(t *testing.T) {
	dir, outRef, _ := startKilledChild(t, time.Time{})
	journalPath := filepath.Join(dir, "spawn-journal.jsonl")
	before, err := os.ReadFile(journalPath)
	if err != nil {
		t.Fatal(err)
	}
	workers := map[string]*profile.Profile{"worker": osProfile(t, osWorkerProfile)}
	exec := &countingGate{gatedExecutor: newGated(), calls: map[string]int{}}
	var ran atomic.Bool
	rerun := supervise.Options{Budget: osBudget, PerWorker: osPerWorker, Profiles: workers, Deliverable: passCheck,
		Executor: exec, RunDir: dir, RunID: "restore",
		Brain: funcBrain(func(context.Context, *supervise.Coordinator, string) (supervise.BrainReport, error) {
			ran.Store(true)
			return supervise.BrainReport{}, nil
		})}
	_, err = supervise.Supervise(t.Context(), osManager(t), "restore", rerun)
	var exists *supervise.RunExistsError
	if !errors.As(err, &exists) || ran.Load() {
		t.Fatalf("behaviour 47: rerun without Resume: %v (brain ran %v), want *RunExistsError", err, ran.Load())
	}
	if after, _ := os.ReadFile(journalPath); !bytes.Equal(before, after) {
		t.Fatalf("behaviour 47: the refused rerun changed the journal (%d -> %d bytes)", len(before), len(after))
	}

	wantCharged := *osSpentA.Tokens + osBTokens
	var seen struct {
		event      *supervise.Event
		again      supervise.SpawnResult
		readout    ledger.Readout
		readoutErr error
	}
	resume := rerun
	resume.Resume = true
	resume.Brain = funcBrain(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		seen.readout = c.Readout()
		seen.readoutErr = conserved(seen.readout)
		ev, err := c.Await(ctx, supervise.AwaitArgs{Kinds: []string{"settled"}, TimeoutMS: 30_000})
		if err != nil {
			return supervise.BrainReport{}, err
		}
		seen.event = ev.Event
		seen.again, err = c.Spawn(ctx, supervise.SpawnArgs{Profile: "worker", Task: "task a", Label: "a", Key: "a"})
		return supervise.BrainReport{}, err
	})
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	res, err := supervise.Supervise(ctx, osManager(t), "restore", resume)
	if err != nil {
		t.Fatal(err)
	}
	if n := exec.count("task a") + exec.count("task b"); n != 0 {
		t.Fatalf("behaviour 46: the resume executed %d workers (a %d, b %d), want none", n, exec.count("task a"), exec.count("task b"))
	}
	if seen.readoutErr != nil {
		t.Fatalf("behaviour 36 on resume: %v", seen.readoutErr)
	}
	if tok := seen.readout.Channels["tokens"]; tok.Reserved+tok.Committed != wantCharged {
		t.Fatalf("behaviour 40: resumed pool holds tokens reserved %d + committed %d, want a's 40 + b's ceiling %d", tok.Reserved, tok.Committed, osBTokens)
	}
	if usd := seen.readout.Channels["usd"]; usd.Reserved+usd.Committed != *osSpentA.MicroUSD+int64(osBUSD*1e6) {
		t.Fatalf("behaviour 40: resumed pool holds usd reserved %d + committed %d, want %d", usd.Reserved, usd.Committed, *osSpentA.MicroUSD+int64(osBUSD*1e6))
	}
	if seen.event == nil || seen.event.OutRef != outRef {
		t.Fatalf("behaviour 46: replayed settlement %+v, want a's outRef %s", seen.event, outRef)
	}
	if seen.again.Resumed != supervise.ResumedCompleted {
		t.Fatalf("keyed respawn of a: %+v, want resumed completed", seen.again)
	}
	if res.Status != supervise.StatusWinner || res.Winner == nil || res.Winner.OutRef != outRef {
		t.Fatalf("behaviour 46: result %s %s winner %+v, want winner with outRef %s", res.Status, res.Reason, res.Winner, outRef)
	}
	if res.Spent.Tokens != wantCharged || res.Spent.TokensKnown || res.Spent.USDKnown || res.Spent.IterationsKnown {
		t.Fatalf("behaviour 40/43: spentTotal %+v, want tokens %d, every channel unknown", res.Spent, wantCharged)
	}
	var never []supervise.SpendGap
	for _, g := range res.SpendGaps {
		if g.Kind == supervise.GapNeverSettled {
			never = append(never, g)
		}
	}
	if len(never) != 1 {
		t.Fatalf("behaviour 43: gaps %+v, want one never-settled (b)", res.SpendGaps)
	}
	chans := slices.Sorted(slices.Values(never[0].Channels))
	if d := cmp.Diff([]string{"iterations", "tokens", "usd"}, chans); d != "" {
		t.Fatalf("behaviour 43: never-settled b's channels (-want +got):\n%s", d)
	}
}

// TestOutsideRestoreKeepsOriginalDeadline (behaviour 40): a run with a
// short absolute deadline, SIGKILLed and resumed before that deadline —
// once without a deadline, once with a fresh far one — ends at the
// ORIGINAL deadline, budget-exhausted, its ms counted from the original
// start.
func TestOutsideRestoreKeepsOriginalDeadline(t *testing.T) {
	for _, fresh := range []time.Duration{0, 10 * time.Minute} {
		t.Run(fmt.Sprint("resume deadline ", fresh), func(t *testing.T) {
			original := time.Now().Add(12 * time.Second)
			dir, outRef, start := startKilledChild(t, original)
			if time.Now().After(original) {
				t.Fatalf("the child was ready only after its deadline: the machine is too slow for this scenario")
			}
			// Resume half way to the deadline, so a run that counted its
			// time from the resume would be told apart by ms.
			time.Sleep(time.Until(start.Add(6 * time.Second)))
			exec := &countingGate{gatedExecutor: newGated(), calls: map[string]int{}}
			var brainDeadline time.Time
			o := supervise.Options{Budget: osBudget, PerWorker: osPerWorker,
				Profiles: map[string]*profile.Profile{"worker": osProfile(t, osWorkerProfile)}, Deliverable: passCheck,
				Executor: exec, RunDir: dir, RunID: "restore", Resume: true,
				Brain: funcBrain(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
					brainDeadline, _ = ctx.Deadline()
					for {
						r, err := c.Await(ctx, supervise.AwaitArgs{TimeoutMS: 5_000})
						if err != nil || r.Stopped || ctx.Err() != nil {
							return supervise.BrainReport{}, err
						}
					}
				})}
			if fresh > 0 {
				o.Deadline = time.Now().Add(fresh)
			}
			ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
			defer cancel()
			res, err := supervise.Supervise(ctx, osManager(t), "", o)
			ended := time.Now()
			var mismatch *supervise.ResumeMismatchError
			if fresh > 0 && errors.As(err, &mismatch) {
				t.Logf("a fresh deadline on resume is refused: %v", err)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if ended.Before(original) {
				t.Fatalf("the resumed run ended %v before its original deadline", original.Sub(ended))
			}
			if ended.After(original.Add(time.Minute)) {
				t.Fatalf("the resumed run ended %v after its original deadline: it did not keep it", ended.Sub(original))
			}
			if !brainDeadline.IsZero() && brainDeadline.After(original.Add(time.Second)) {
				t.Fatalf("the resumed brain's context deadline %v is past the original %v", brainDeadline, original)
			}
			// a delivered before the deadline, so the run's candidate
			// may win; else the deadline makes it budget-exhausted.
			switch {
			case res.Status == supervise.StatusWinner && res.Winner.OutRef == outRef:
			case res.Status == supervise.StatusNoWinner && res.Reason == supervise.ReasonBudgetExhausted:
			default:
				t.Fatalf("result %s %s %+v, want a's win or no-winner budget-exhausted", res.Status, res.Reason, res.Error)
			}
			// The child wrote start just before its run started.
			if min := original.Sub(start).Milliseconds() - 1000; res.MS < min {
				t.Fatalf("spentTotal ms %d, want at least %d (from the original start)", res.MS, min)
			}
			if exec.count("task a") != 0 {
				t.Fatalf("a executed again")
			}
		})
	}
}

// superviseHeld runs run "held" of the worker profile osWorkerProfile,
// journaled in st, with exec and brain, bounded by two minutes: the run
// of the held-store scenarios.
func superviseHeld(t *testing.T, st store.Store, exec supervise.Executor, brain supervise.Brain) (supervise.SupervisedResult, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	return supervise.Supervise(ctx, osManager(t), "held", supervise.Options{
		Budget: osBudget, PerWorker: osPerWorker, Profiles: map[string]*profile.Profile{"worker": osProfile(t, osWorkerProfile)},
		Deliverable: passCheck, Executor: exec, Brain: brain, RunID: "held", SpawnStore: st,
	})
}

// heldStore is a store.Store whose appends of a settled record wait,
// once armed, until the test lets them through: the slow side of a
// settlement (a store that is slow to make it durable).
type heldStore struct {
	store.Store
	kind    string // the record kind held; "" is settled
	refuse  bool   // refuse the held append instead of letting it through
	armed   atomic.Bool
	holding chan struct{} // closed when an append of a settled record is held
	let     chan struct{} // closed to let it through
	once    sync.Once
}

func (h *heldStore) AppendEvents(ctx context.Context, f store.Fence, events []store.NewEvent) ([]store.Event, error) {
	if h.armed.Load() {
		for _, e := range events {
			kind := h.kind
			if kind == "" {
				kind = supervise.KindSettled
			}
			if strings.Contains(string(canonjson.Marshal(e.Body)), `"kind":"`+kind+`"`) {
				h.once.Do(func() { close(h.holding) })
				select {
				case <-h.let:
				case <-ctx.Done():
					return nil, ctx.Err()
				}
				if h.refuse {
					h.armed.Store(false)
					return nil, errors.New("the disk is full")
				}
				break
			}
		}
	}
	return h.Store.AppendEvents(ctx, f, events)
}

// TestOutsideManagerNeverSeesAnUnjournaledSettlement (the "scheduler
// left behind" class, §3.6 "Journal appends happen only after the event
// is observed-committed"): while a worker's settled record is held in a
// slow store journal, what the manager reads — await_event, observe_agent,
// read_journal and the pool's readout — must not run ahead of it.
func TestOutsideManagerNeverSeesAnUnjournaledSettlement(t *testing.T) {
	st := &heldStore{Store: memory.New(nil), holding: make(chan struct{}), let: make(chan struct{})}
	exec := newGated()
	var seen []string
	brain := funcBrain(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		most := int64(4_900) // of 5,000: a second such spawn fits only once this one settled
		r, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "worker", Task: "t", Label: "w", Budget: &supervise.SpawnBudget{Tokens: &most}})
		if err != nil {
			return supervise.BrainReport{}, err
		}
		_, started := exec.gate(r.WorkerID)
		<-started
		before := c.Readout()
		st.armed.Store(true)
		exec.release(r.WorkerID, osRelease{text: "DONE", spent: ledger.Spend{Tokens: osI64(10), Iterations: osI64(1), MicroUSD: osI64(5)}})
		select {
		case <-st.holding:
		case <-time.After(60 * time.Second):
			return supervise.BrainReport{}, errors.New("the settled record never reached the store")
		}
		// The settled record is not durable: nothing may show it.
		aw, err := c.Await(ctx, supervise.AwaitArgs{TimeoutMS: 300})
		if err != nil {
			return supervise.BrainReport{}, err
		}
		if aw.Event != nil {
			seen = append(seen, "await_event returned the settlement")
		}
		if ob, err := c.Observe(r.WorkerID); err == nil && (ob.Status == supervise.StateDone || ob.Delivered || ob.OutRef != "") {
			seen = append(seen, fmt.Sprintf("observe_agent says %s delivered=%v outRef=%q", ob.Status, ob.Delivered, ob.OutRef))
		}
		for _, rw := range c.Reentry().Settled {
			if rw.ID == r.WorkerID {
				seen = append(seen, fmt.Sprintf("Reentry lists it settled (outRef %q)", rw.OutRef))
			}
		}
		for _, row := range c.ReadJournal(supervise.JournalArgs{Kinds: []string{supervise.KindSettled}}).Rows {
			seen = append(seen, "read_journal holds "+row.Kind)
		}
		// The pool is the committing side (§3.6: an append follows the
		// event's commit), so its readout may already hold the charge;
		// what matters is that nothing it frees is spent ahead of the
		// record, which the spawn below checks.
		if after := c.Readout(); after.Channels["tokens"].Committed != before.Channels["tokens"].Committed {
			t.Logf("the readout holds the charge before its record: %+v", after.Channels["tokens"])
		}
		// A spawn the unjournaled settlement's freed budget would fund
		// must not be admitted ahead of that settlement's record.
		spawned := make(chan error, 1)
		go func() {
			_, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "worker", Task: "t2", Label: "w2", Budget: &supervise.SpawnBudget{Tokens: &most}})
			spawned <- err
		}()
		select {
		case err := <-spawned:
			seen = append(seen, fmt.Sprintf("a spawn funded by the unjournaled settlement returned first: %v", err))
			spawned <- err
		case <-time.After(300 * time.Millisecond):
		}
		close(st.let)
		if err := <-spawned; err != nil {
			return supervise.BrainReport{}, fmt.Errorf("the second spawn once the settlement landed: %w", err)
		}
		w2 := supervise.NodeID(string(r.WorkerID[:len(r.WorkerID)-1]) + "2")
		_, started2 := exec.gate(w2)
		<-started2
		exec.release(w2, osRelease{text: "no", spent: ledger.Spend{Tokens: osI64(1), Iterations: osI64(1), MicroUSD: osI64(1)}})
		for range 2 {
			aw, err = c.Await(ctx, supervise.AwaitArgs{TimeoutMS: 30_000})
			if err != nil || aw.Event == nil {
				return supervise.BrainReport{}, fmt.Errorf("after the record landed: %+v %v", aw, err)
			}
		}
		return supervise.BrainReport{}, nil
	})
	res, err := superviseHeld(t, st, exec, brain)
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) > 0 {
		t.Fatalf("the manager saw a settlement its journal did not hold yet:\n%s", strings.Join(seen, "\n"))
	}
	if res.Status != supervise.StatusWinner {
		t.Fatalf("result %s %s", res.Status, res.Reason)
	}
}

// TestOutsideNoWorkerRunsAheadOfItsSpawnRecord (the same class, the
// spawn side; §3.6 "every admitted spawn reserves its ceiling before
// anything runs", journal before visible): while a spawn's record is
// held in a slow store journal, its worker must not start (a crash
// would leave work running, and spending, that no journal names) and
// spawn_worker must not answer.
func TestOutsideNoWorkerRunsAheadOfItsSpawnRecord(t *testing.T) {
	st := &heldStore{Store: memory.New(nil), kind: supervise.KindSpawned, holding: make(chan struct{}), let: make(chan struct{})}
	exec := newGated()
	var seen []string
	brain := funcBrain(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		st.armed.Store(true)
		spawned := make(chan supervise.SpawnResult, 1)
		go func() {
			r, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "worker", Task: "t", Label: "w"})
			if err != nil {
				t.Errorf("spawn: %v", err)
			}
			spawned <- r
		}()
		select {
		case <-st.holding:
		case <-time.After(60 * time.Second):
			return supervise.BrainReport{}, errors.New("the spawned record never reached the store")
		}
		id := supervise.NodeID("held:s1")
		_, started := exec.gate(id)
		select {
		case <-started:
			seen = append(seen, "the worker started before its spawned record was durable")
		case <-spawned:
			seen = append(seen, "spawn_worker answered before its spawned record was durable")
		case <-time.After(300 * time.Millisecond):
		}
		if ob, err := c.Observe(id); err == nil {
			// Known, not fixed here: the node is in the scope (pending)
			// before its record is durable; see
			// TestOutsideRefusedSpawnLeavesNothingVisible.
			t.Logf("observe_agent knows the worker before its spawned record is durable: %s", ob.Status)
		}
		close(st.let)
		r := <-spawned
		<-started
		exec.release(r.WorkerID, osRelease{text: "DONE", spent: ledger.Spend{Tokens: osI64(1), Iterations: osI64(1), MicroUSD: osI64(1)}})
		_, err := c.Await(ctx, supervise.AwaitArgs{TimeoutMS: 30_000})
		return supervise.BrainReport{}, err
	})
	res, err := superviseHeld(t, st, exec, brain)
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) > 0 {
		t.Fatalf("the run ran ahead of a spawn its journal did not hold yet:\n%s", strings.Join(seen, "\n"))
	}
	if res.Status != supervise.StatusWinner {
		t.Fatalf("result %s %s", res.Status, res.Reason)
	}
}

// TestOutsideRefusedSpawnLeavesNothingVisible (§3.6 Durability: a spawn
// whose record the journal refused failed and nothing happened): once
// the store refused the spawned record, spawn_worker fails, the worker
// never ran, and neither observe_agent nor the pool's readout knows it.
// On main the refused spawn stayed in the scope as a cancelled node
// ("journal-failed"): observe_agent reported it, the result's tree
// named it and counted it down, so a throwing driver's run ended
// all-children-down instead of driver-failed (behaviour 42).
func TestOutsideRefusedSpawnLeavesNothingVisible(t *testing.T) {
	st := &heldStore{Store: memory.New(nil), kind: supervise.KindSpawned, refuse: true, holding: make(chan struct{}), let: make(chan struct{})}
	close(st.let)
	exec := newGated()
	var seen []string
	brain := funcBrain(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		before := c.Readout()
		st.armed.Store(true)
		_, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "worker", Task: "t", Label: "w"})
		if err == nil {
			seen = append(seen, "spawn_worker succeeded though its record was refused")
		}
		if ob, err := c.Observe("held:s1"); err == nil {
			seen = append(seen, fmt.Sprintf("observe_agent knows the refused worker: %s", ob.Status))
		}
		if d := cmp.Diff(before, c.Readout()); d != "" {
			seen = append(seen, "the pool holds the refused spawn:\n"+d)
		}
		aw, err := c.Await(ctx, supervise.AwaitArgs{TimeoutMS: 200})
		if err == nil && (aw.Event != nil || len(aw.Live) > 0) {
			seen = append(seen, fmt.Sprintf("await_event: %+v", aw))
		}
		return supervise.BrainReport{}, errors.New("the journal is failing, so I give up")
	})
	res, err := superviseHeld(t, st, exec, brain)
	t.Logf("Supervise: %v", err)
	// Behaviour 42: no child went down (none was spawned), so the
	// throwing driver's run is driver-failed.
	if res.Reason != supervise.ReasonDriverFailed || res.DownCount != 0 || len(res.Tree) != 0 {
		seen = append(seen, fmt.Sprintf("result %s %s downCount %d tree %+v, want driver-failed with an empty tree", res.Status, res.Reason, res.DownCount, res.Tree))
	}
	exec.mu.Lock()
	ran := len(exec.started)
	exec.mu.Unlock()
	if ran > 0 {
		seen = append(seen, fmt.Sprintf("%d workers started", ran))
	}
	if len(seen) > 0 {
		t.Fatalf("a refused spawn left traces:\n%s", strings.Join(seen, "\n"))
	}
}

// TestOutsideRunResumesAfterATransientlyRefusedSpawn (§3.6 node ids are
// deterministic; behaviour 46): a store journal refuses one spawn's
// record once, the manager spawns again and that spawn is journaled;
// the run is interrupted (its caller's context) and resumed. The resume
// must replay the journal — on main the refused spawn had used up id
// s1, the journaled spawn was s2, and the replay, which gives it s1,
// refused the run ("replayed spawn got id … s1, journal says … s2").
func TestOutsideRunResumesAfterATransientlyRefusedSpawn(t *testing.T) {
	st := &heldStore{Store: memory.New(nil), kind: supervise.KindSpawned, refuse: true, holding: make(chan struct{}), let: make(chan struct{})}
	close(st.let)
	exec := newGated()
	workers := map[string]*profile.Profile{"worker": osProfile(t, osWorkerProfile)}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var second supervise.SpawnResult
	first := funcBrain(func(bctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		st.armed.Store(true)
		if _, err := c.Spawn(bctx, supervise.SpawnArgs{Profile: "worker", Task: "t", Label: "w"}); err == nil {
			return supervise.BrainReport{}, errors.New("the refused spawn succeeded")
		}
		var err error
		second, err = c.Spawn(bctx, supervise.SpawnArgs{Profile: "worker", Task: "t", Label: "w"})
		if err != nil {
			return supervise.BrainReport{}, err
		}
		_, started := exec.gate(second.WorkerID)
		<-started
		exec.release(second.WorkerID, osRelease{text: "DONE", spent: ledger.Spend{Tokens: osI64(3), Iterations: osI64(1), MicroUSD: osI64(3)}})
		if _, err := c.Await(bctx, supervise.AwaitArgs{TimeoutMS: 30_000}); err != nil {
			return supervise.BrainReport{}, err
		}
		cancel() // the host stops: interrupted, not ended
		<-bctx.Done()
		return supervise.BrainReport{}, bctx.Err()
	})
	o := supervise.Options{Budget: osBudget, PerWorker: osPerWorker, Profiles: workers, Deliverable: passCheck,
		Executor: exec, Brain: first, RunID: "transient", SpawnStore: st}
	res, err := supervise.Supervise(ctx, osManager(t), "transient", o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Reason != supervise.ReasonAborted {
		t.Fatalf("first process: %s %s, want no-winner aborted (interrupted)", res.Status, res.Reason)
	}
	var replayed *supervise.Event
	o.Resume, o.Executor = true, newGated()
	o.Brain = funcBrain(func(bctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		aw, err := c.Await(bctx, supervise.AwaitArgs{TimeoutMS: 30_000})
		replayed = aw.Event
		return supervise.BrainReport{}, err
	})
	rctx, rcancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer rcancel()
	res, err = supervise.Supervise(rctx, osManager(t), "", o)
	if err != nil {
		t.Fatalf("behaviour 46: the resume refused the run: %v", err)
	}
	if replayed == nil || replayed.WorkerID != second.WorkerID {
		t.Fatalf("the resume replayed %+v, want %s's settlement", replayed, second.WorkerID)
	}
	if res.Status != supervise.StatusWinner || res.Winner.Node != second.WorkerID {
		t.Fatalf("resumed result %s %s %+v", res.Status, res.Reason, res.Winner)
	}
}
