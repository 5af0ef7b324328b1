package delegation_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/delegation"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/store/memory"
	"github.com/agentrt/agentrt/store/sqlite"
	"github.com/agentrt/agentrt/supervise"
)

// The child of TestKilledAfterFinishedRecordIsNotRerunBehaviour46: a
// delegation server process on a SQLite queue that SIGKILLs itself the
// moment its supervised run's result is final (its finished record
// journaled), before the queue recorded the delegation's end in the
// store.
const (
	finishedChildEnv = "AGENTRT_DELEGATION_FINISHED_CHILD"
	finishedDBEnv    = "AGENTRT_DELEGATION_FINISHED_DB"
	finishedDirEnv   = "AGENTRT_DELEGATION_FINISHED_DIR"
)

func TestMain(m *testing.M) {
	if os.Getenv(finishedChildEnv) != "" {
		err := finishedChild(os.Getenv(finishedDBEnv), os.Getenv(finishedDirEnv))
		fmt.Fprintln(os.Stderr, "the child outlived its run's end:", err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// killOnEnd is an Observer that SIGKILLs its process when the run ends.
type killOnEnd struct{}

func (killOnEnd) RunStarted(ctx context.Context, _ supervise.RunStart) context.Context { return ctx }
func (killOnEnd) NodeStarted(ctx context.Context, _ supervise.NodeInfo) (context.Context, kernel.Observer) {
	return ctx, nil
}
func (killOnEnd) NodeSettled(context.Context, supervise.NodeSettled) {}
func (killOnEnd) RunEnded(context.Context, supervise.SupervisedResult) {
	_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {}
}

// countingModel counts the manager's model turns.
type countingModel struct {
	inner contract.ChatModel
	turns *atomic.Int64
}

func (m countingModel) Turn(ctx context.Context, msgs []contract.ChatMessage, tools []contract.Tool) iter.Seq2[contract.ChatEvent, error] {
	m.turns.Add(1)
	return m.inner.Turn(ctx, msgs, tools)
}

var finishedRequest = delegation.Request{Intent: "write alpha", IdempotencyKey: "finished-1"}

// finishedConfig is both processes' queue: a manager that spawns the
// writer, awaits it and ends (plan), its model turns counted.
func finishedConfig(st *sqlite.Store, runDir string, exec supervise.Executor, turns *atomic.Int64) (delegation.Config, error) {
	manager, err := profile.Parse([]byte(`{"name": "manager", "harness": "cli-base", "model": {"default": "scripted/manager"},
		"tools": {"agent_runtime_coordination_spawn_worker": true, "agent_runtime_coordination_await_event": true}}`))
	if err != nil {
		return delegation.Config{}, err
	}
	writer, err := profile.Parse([]byte(`{"name": "writer", "harness": "cli-base", "model": {"provider": "scripted", "default": "scripted/writer"}}`))
	if err != nil {
		return delegation.Config{}, err
	}
	return delegation.Config{
		Store: st, Manager: manager, Profiles: map[string]*profile.Profile{"writer": writer}, Executor: exec,
		Router: func(task string) (contract.ChatModel, error) {
			return countingModel{inner: scripted.NewChatModel(plan(task)), turns: turns}, nil
		},
		Deliverable: supervise.Deliverable{Describe: "says DONE", Check: func(_ context.Context, out supervise.Output) (kernel.Verdict, error) {
			return kernel.Verdict{Passed: strings.Contains(out.Text, "DONE"), Reason: "the result says DONE"}, nil
		}},
		Caps:     delegation.Budget{Tokens: 10_000, Iterations: 10},
		RunDir:   runDir,
		ClaimTTL: 3 * time.Second, ScanInterval: 200 * time.Millisecond, SettleGrace: 2 * time.Second,
	}, nil
}

func finishedExecutor() (*countingExecutor, error) {
	var script scripted.Script
	if err := json.Unmarshal([]byte(workerScript), &script); err != nil {
		return nil, err
	}
	return &countingExecutor{inner: &supervise.KernelExecutor{Provider: scripted.New(&script, scripted.Options{}), Store: memory.New(nil)}}, nil
}

// finishedChild submits the delegation and runs it until its own
// observer kills it.
func finishedChild(db, runDir string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	st, err := sqlite.Open(ctx, db, sqlite.Options{})
	if err != nil {
		return err
	}
	exec, err := finishedExecutor()
	if err != nil {
		return err
	}
	cfg, err := finishedConfig(st, runDir, exec, new(atomic.Int64))
	if err != nil {
		return err
	}
	cfg.Observer = func() supervise.Observer { return killOnEnd{} }
	q, err := delegation.Open(cfg)
	if err != nil {
		return err
	}
	sub, err := q.Submit(ctx, finishedRequest)
	if err != nil {
		return err
	}
	_, err = q.Wait(ctx, sub.TaskID, time.Minute)
	return errors.Join(err, errors.New("the run ended and the process was not killed"))
}

// RES-03, behaviour 46 at the delegation's end: a delegation server
// killed between its supervised run's finished record and the store's
// end of the delegation is taken over by the next server, which ends the
// delegation with the journaled result — the same winner — without a
// worker run (executor count 0) and without the manager's model asked
// again (model turns 0).
func TestKilledAfterFinishedRecordIsNotRerunBehaviour46(t *testing.T) {
	if testing.Short() {
		t.Skip("re-executes the test binary")
	}
	ctx := deadline(t)
	db, runDir := filepath.Join(t.TempDir(), "queue.db"), t.TempDir()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), finishedChildEnv+"=1", finishedDBEnv+"="+db, finishedDirEnv+"="+runDir)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err := cmd.Run()
	if ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus); !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("the child was not killed at its run's end (%v); stderr:\n%s", err, stderr.String())
	}

	st, err := sqlite.Open(ctx, db, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	exec, err := finishedExecutor()
	if err != nil {
		t.Fatal(err)
	}
	var turns atomic.Int64
	cfg, err := finishedConfig(st, runDir, exec, &turns)
	if err != nil {
		t.Fatal(err)
	}
	q := open(t, cfg)
	sub, err := q.Submit(ctx, finishedRequest)
	if err != nil {
		t.Fatal(err)
	}
	if !sub.Reused {
		t.Fatalf("the child's delegation is not in the store: %+v", sub)
	}
	before, err := q.Get(ctx, sub.TaskID)
	if err != nil {
		t.Fatal(err)
	}
	if before.State.Terminal() {
		t.Fatalf("the child ended the delegation (%s) before it was killed; the test kills too late", before.State)
	}
	d := settle(t, ctx, q, sub.TaskID)
	if d.State != delegation.StateCompleted || d.Result == nil || d.Result.Status != string(supervise.StatusWinner) {
		t.Fatalf("delegation %+v, want completed with a winner", d)
	}
	if !strings.Contains(d.Result.Out, "alpha: DONE") || d.Result.OutRef == "" {
		t.Errorf("result out %q outRef %q, want the writer's alpha: DONE", d.Result.Out, d.Result.OutRef)
	}
	if !d.Resumed || d.Attempts != 2 {
		t.Errorf("resumed %v after %d attempts, want resumed on attempt 2", d.Resumed, d.Attempts)
	}
	if n := exec.runs.Load(); n != 0 {
		t.Errorf("the second server ran %d workers; want 0", n)
	}
	if n := turns.Load(); n != 0 {
		t.Errorf("the second server asked the manager's model %d turns; want 0 (the manager re-ran)", n)
	}
	// The journal holds one finished record: the resume appended none.
	recs, _, err := supervise.ReadRunDir(ctx, d.RunDir)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	var recorded *supervise.OutcomeRecord
	for _, r := range recs {
		if r.Kind == supervise.KindFinished {
			n++
			recorded = r.Result
		}
	}
	if n != 1 || recorded == nil {
		t.Fatalf("%d finished records, want 1 with its outcome", n)
	}
	// The delegation's result is the one the dead process recorded.
	if recorded.Winner == nil || d.Result.OutRef != recorded.Winner.OutRef || d.Result.Status != string(recorded.Status) {
		t.Errorf("delegation result %s %s, want the journaled %s %+v", d.Result.Status, d.Result.OutRef, recorded.Status, recorded.Winner)
	}
	if tk := d.Result.SpentTotal.Tokens; tk == nil || *tk != recorded.Spent.Tokens || !recorded.Spent.TokensKnown {
		t.Errorf("delegation spent tokens %v, want the journaled %d", deref(tk), recorded.Spent.Tokens)
	}
}
