package supervise_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/memory"
	"github.com/agentrt/agentrt/store/sqlite"
	"github.com/agentrt/agentrt/supervise"
)

// childEnv makes the re-executed test binary run a supervisor in the run
// dir childDir names, until it is killed.
const (
	childEnv = "AGENTRT_SUPERVISE_CHILD"
	childDir = "AGENTRT_SUPERVISE_DIR"
	// childStore, when set, names a SQLite file the child keeps its
	// spawn journal in (Options.SpawnStore, a one-second lease).
	childStore = "AGENTRT_SUPERVISE_STORE"
	// childHonoursCtx, when set, makes the child's slow worker end when
	// its context does (a paused child, resumed, must wind down).
	childHonoursCtx = "AGENTRT_SUPERVISE_HONOUR_CTX"
)

func TestMain(m *testing.M) {
	if os.Getenv(controlEnv) != "" {
		if err := controlFromChild(os.Getenv(controlEnv), os.Getenv(childDir)); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if os.Getenv(nestedKillEnv) != "" {
		err := nestedKillChild(os.Getenv(childDir), os.Getenv(finishedJournal))
		fmt.Fprintln(os.Stderr, "the nested child was not killed mid-tree:", err)
		os.Exit(1)
	}
	if os.Getenv(finishedChildEnv) != "" {
		err := finishedChild(os.Getenv(childDir), os.Getenv(finishedJournal))
		fmt.Fprintln(os.Stderr, "the child outlived its run's end:", err)
		os.Exit(1)
	}
	if os.Getenv(transcriptKillEnv) != "" {
		err := transcriptKillChild(os.Getenv(childDir))
		fmt.Fprintln(os.Stderr, "the transcript child was not killed mid-run:", err)
		os.Exit(1)
	}
	// Each of these runs its child when the environment names it.
	for _, child := range []func() (bool, error){
		steerWindowFromEnv, driverKillFromEnv, nestedSteerWindowFromEnv, storeKillFromEnv,
		hx14ThreeChildFromEnv, hx14ChildFromEnv, outsideRestoreChildFromEnv,
	} {
		if ran, err := child(); ran {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	if os.Getenv(childEnv) == "" {
		os.Exit(m.Run())
	}
	if err := superviseUntilKilled(os.Getenv(childDir)); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(3) // the parent kills the child before it can end
}

// pipeline is a replay-safe caller brain: it spawns each task in turn
// and awaits its settlement.
func pipeline(tasks ...string) supervise.Brain {
	return supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		for _, task := range tasks {
			if _, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "writer", Task: task}); err != nil {
				return supervise.BrainReport{}, err
			}
			if _, err := c.Await(ctx, supervise.AwaitArgs{TimeoutMS: 60_000, Kinds: []string{supervise.EventSettled}}); err != nil {
				return supervise.BrainReport{}, err
			}
		}
		return supervise.BrainReport{}, nil
	})
}

var pipelineTasks = []string{"write alpha", "write slow", "write beta"}

// processOptions are the options of every process of the kill test.
func processOptions(exec supervise.Executor, dir string) (supervise.Options, error) {
	writer, err := profile.Parse([]byte(writerProfile))
	if err != nil {
		return supervise.Options{}, err
	}
	tokens, iterations, perTokens, perIterations := int64(10_000), int64(10), int64(1_000), int64(1)
	return supervise.Options{
		Budget:    ledger.Budget{Tokens: &tokens, Iterations: &iterations},
		PerWorker: ledger.Budget{Tokens: &perTokens, Iterations: &perIterations},
		Profiles:  map[string]*profile.Profile{"writer": writer}, Deliverable: doneCheck, Executor: exec,
		Brain: pipeline(pipelineTasks...), RunDir: dir, RunID: "run1", Resume: true,
	}, nil
}

func processManager() (*profile.Profile, error) {
	return profile.Parse([]byte(`{"name": "manager", "harness": "cli-base", "tools": {"agent_runtime_coordination_spawn_worker": true}}`))
}

// superviseUntilKilled is the child: its "slow" worker announces itself
// and then never returns.
func superviseUntilKilled(dir string) error {
	var s scripted.Script
	if err := json.Unmarshal([]byte(workerScript), &s); err != nil {
		return err
	}
	inner := &supervise.KernelExecutor{Provider: scripted.New(&s, scripted.Options{}), Store: memory.New(nil)}
	exec := supervise.ExecutorFunc(func(ctx context.Context, w supervise.Work) (supervise.WorkResult, error) {
		if strings.Contains(w.Task, "slow") {
			if err := os.WriteFile(filepath.Join(dir, "slow-started"), nil, 0o600); err != nil {
				return supervise.WorkResult{}, err
			}
			if os.Getenv(childHonoursCtx) == "" {
				select {}
			}
			<-ctx.Done()
			return supervise.WorkResult{}, context.Cause(ctx)
		}
		return inner.Execute(ctx, w)
	})
	o, err := processOptions(exec, dir)
	if err != nil {
		return err
	}
	if path := os.Getenv(childStore); path != "" {
		st, err := sqlite.Open(context.Background(), path, sqlite.Options{})
		if err != nil {
			return err
		}
		defer st.Close()
		o.SpawnStore, o.SpawnLeaseTTL = st, kernel.MinLeaseTTL
	}
	manager, err := processManager()
	if err != nil {
		return err
	}
	_, err = supervise.Supervise(context.Background(), manager, "t", o)
	return err
}

// RES-03, behaviour 46 with a real process: a supervisor is killed with
// SIGKILL while its second worker runs; restarted on the same run dir,
// it does not execute the committed worker again (executor call counts),
// charges the worker that was running at its ceiling, and settles with
// the winner outRef of an uninterrupted run.
func TestKilledSupervisorResumesBehaviour46(t *testing.T) {
	if testing.Short() {
		t.Skip("re-executes the test binary")
	}
	manager, err := processManager()
	if err != nil {
		t.Fatal(err)
	}
	// The uninterrupted run.
	o, err := processOptions(newCounting(t, workerProvider(t)), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	want, err := supervise.Supervise(context.Background(), manager, "t", o)
	if err != nil || want.Winner == nil {
		t.Fatalf("uninterrupted run: %v %+v", err, want)
	}

	dir := t.TempDir()
	killChildAt(t, filepath.Join(dir, "slow-started"), "started its slow worker", childEnv+"=1", childDir+"="+dir)

	exec := newCounting(t, workerProvider(t))
	o, err = processOptions(exec, dir)
	if err != nil {
		t.Fatal(err)
	}
	got, err := supervise.Supervise(context.Background(), manager, "t", o)
	if err != nil {
		t.Fatal(err)
	}
	if exec.count("alpha") != 0 || exec.count("slow") != 1 || exec.count("beta") != 1 {
		t.Errorf("restarted process executed alpha %d, slow %d, beta %d times; want 0, 1, 1",
			exec.count("alpha"), exec.count("slow"), exec.count("beta"))
	}
	if got.Winner == nil || got.Winner.OutRef != want.Winner.OutRef || got.Winner.Node != want.Winner.Node {
		t.Fatalf("winner %+v, want %+v", got.Winner, want.Winner)
	}
	gap := supervise.SpendGap{ID: "run1:s2", Kind: supervise.GapNeverSettled, Channels: []string{"tokens", "iterations", "usd"}}
	if len(got.SpendGaps) != 1 || got.SpendGaps[0].ID != gap.ID || got.SpendGaps[0].Kind != gap.Kind {
		t.Errorf("gaps %+v, want the killed worker never-settled", got.SpendGaps)
	}
	// alpha 120 + the killed slow worker at its 1000 ceiling + slow 2 +
	// beta 60.
	if got.Spent.Tokens != 1182 || got.Spent.TokensKnown {
		t.Errorf("spent %+v", got.Spent)
	}
}

// RES-03, behaviour 46 with the spawn journal in SQLite: a supervisor
// keeping its journal in the store (not the run dir's file) is killed
// with SIGKILL while its second worker runs. A process resuming it is
// refused while the dead one's lease lasts, then takes the run over at
// the next lease generation, does not execute the committed worker
// again, and settles with the uninterrupted run's winner.
func TestKilledSupervisorResumesFromSQLiteBehaviour46(t *testing.T) {
	if testing.Short() {
		t.Skip("re-executes the test binary")
	}
	manager, want := uninterruptedRun(t)
	dir, db := t.TempDir(), filepath.Join(t.TempDir(), "runs.db")
	cmd, _ := startSlowChild(t, childEnv+"=1", childDir+"="+dir, childStore+"="+db)
	if err := cmd.Process.Kill(); err != nil { // SIGKILL
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if _, err := os.Stat(filepath.Join(dir, supervise.SpawnJournalFile)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the run dir holds a spawn journal file (%v); the store holds the journal", err)
	}

	st, err := sqlite.Open(context.Background(), db, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	takeOverFromStore(t, manager, st, dir, want)
	run, err := st.GetRun(context.Background(), "run1")
	if err != nil || run.Kind != supervise.SpawnLogRunKind || run.Generation != 2 {
		t.Errorf("the journal's run %+v (%v): want a spawn journal taken over once (generation 2)", run, err)
	}
}

// uninterruptedRun runs the kill tests' supervised run to its end in
// this process: the manager and the result a resumed run must match.
func uninterruptedRun(t *testing.T) (*profile.Profile, supervise.SupervisedResult) {
	t.Helper()
	manager, err := processManager()
	if err != nil {
		t.Fatal(err)
	}
	o, err := processOptions(newCounting(t, workerProvider(t)), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	want, err := supervise.Supervise(context.Background(), manager, "t", o)
	if err != nil || want.Winner == nil {
		t.Fatalf("uninterrupted run: %v %+v", err, want)
	}
	return manager, want
}

// startSlowChild re-executes the test binary as a supervisor with env
// (its childDir among them) and returns once its slow worker started.
func startSlowChild(t *testing.T, env ...string) (*exec.Cmd, *strings.Builder) {
	t.Helper()
	var dir string
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, childDir+"="); ok {
			dir = v
		}
	}
	return startChildAt(t, filepath.Join(dir, "slow-started"), "started its slow worker", env...)
}

// startChildAt re-executes the test binary as a child process with env
// added to this one's, and returns once the child created the file mark
// (reached, for failures, names that moment). It fails the test, the
// child killed, when the mark is not there within waitLimit.
func startChildAt(t *testing.T, mark, reached string, env ...string) (*exec.Cmd, *strings.Builder) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(waitLimit)
	for {
		if _, err := os.Stat(mark); err == nil {
			return cmd, &stderr
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			t.Fatalf("the child never %s; stderr:\n%s", reached, stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// killChildAt starts a child as startChildAt does and SIGKILLs it once
// it created mark: the process dies there, with no chance to clean up.
func killChildAt(t *testing.T, mark, reached string, env ...string) {
	t.Helper()
	cmd, _ := startChildAt(t, mark, reached, env...)
	if err := cmd.Process.Kill(); err != nil { // SIGKILL
		t.Fatal(err)
	}
	_ = cmd.Wait()
}

// takeOverFromStore resumes run1 from its spawn journal in st, with
// runDir as this process's run dir, retrying while the other process's
// lease lasts: the committed worker is not executed again, the one that
// was running is, and the winner is want's.
func takeOverFromStore(t *testing.T, manager *profile.Profile, st store.Store, runDir string, want supervise.SupervisedResult) {
	t.Helper()
	counting := newCounting(t, workerProvider(t))
	o, err := processOptions(counting, runDir)
	if err != nil {
		t.Fatal(err)
	}
	o.SpawnStore, o.SpawnLeaseTTL = st, kernel.MinLeaseTTL
	deadline := time.Now().Add(2 * time.Minute)
	var got supervise.SupervisedResult
	for {
		got, err = supervise.Supervise(context.Background(), manager, "t", o)
		if !errors.Is(err, supervise.ErrSpawnLogHeld) {
			break // held only while the other process's lease lasts
		}
		if time.Now().After(deadline) {
			t.Fatalf("still held: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	if counting.count("alpha") != 0 || counting.count("slow") != 1 || counting.count("beta") != 1 {
		t.Errorf("the taking-over process executed alpha %d, slow %d, beta %d times; want 0, 1, 1",
			counting.count("alpha"), counting.count("slow"), counting.count("beta"))
	}
	if got.Winner == nil || got.Winner.OutRef != want.Winner.OutRef || got.Winner.Node != want.Winner.Node || got.Winner.Text != want.Winner.Text {
		t.Fatalf("winner %+v, want %+v", got.Winner, want.Winner)
	}
}
