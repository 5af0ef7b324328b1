package supervise_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/memory"
	"github.com/agentrt/agentrt/store/postgres"
	"github.com/agentrt/agentrt/store/sqlite"
	"github.com/agentrt/agentrt/supervise"
)

// The child of the finished-record kill tests: it runs a whole
// supervised run and SIGKILLs itself as soon as the run's result is
// final — after the finished record, before its caller could record the
// end anywhere else (as delegation's store row).
const (
	finishedChildEnv = "AGENTRT_SUPERVISE_FINISHED_CHILD"
	// finishedJournal names where the child keeps its spawn journal:
	// "file", "sqlite:<path>" or "postgres:<conn>".
	finishedJournal = "AGENTRT_SUPERVISE_FINISHED_JOURNAL"
)

// killOnEnd is an Observer that SIGKILLs its process when the run ends.
type killOnEnd struct{}

func (killOnEnd) RunStarted(ctx context.Context, _ supervise.RunStart) context.Context { return ctx }
func (killOnEnd) NodeStarted(ctx context.Context, _ supervise.NodeInfo) (context.Context, kernel.Observer) {
	return ctx, nil
}
func (killOnEnd) NodeSettled(context.Context, supervise.NodeSettled) {}
func (killOnEnd) RunEnded(context.Context, supervise.SupervisedResult) {
	_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {} // the signal takes the process before anything else runs
}

// countingBrain is the replay-safe pipeline brain counting its drives.
type countingBrain struct {
	drives atomic.Int64
	inner  supervise.Brain
}

func (b *countingBrain) Drive(ctx context.Context, c *supervise.Coordinator, task string) (supervise.BrainReport, error) {
	b.drives.Add(1)
	return b.inner.Drive(ctx, c, task)
}

// finishedOptions are the options of every process of the finished-kill
// tests: two workers, alpha (delivered) and beta (not).
func finishedOptions(exec supervise.Executor, brain supervise.Brain, dir string) (supervise.Options, error) {
	o, err := processOptions(exec, dir)
	if err != nil {
		return o, err
	}
	o.Brain, o.ReturnEnded = brain, true
	return o, nil
}

// openJournalStore opens the store a journal spec names (nil for
// "file").
func openJournalStore(ctx context.Context, spec string) (store.Store, func(), error) {
	switch kind, arg, _ := strings.Cut(spec, ":"); kind {
	case "file":
		return nil, func() {}, nil
	case "sqlite":
		st, err := sqlite.Open(ctx, arg, sqlite.Options{})
		if err != nil {
			return nil, nil, err
		}
		return st, func() { st.Close() }, nil
	case "postgres":
		st, err := postgres.Open(ctx, arg, postgres.Options{})
		if err != nil {
			return nil, nil, err
		}
		return st, func() { st.Close() }, nil
	default:
		return nil, nil, fmt.Errorf("unknown journal %q", spec)
	}
}

// finishedChild is the child: it runs the run and is killed by its own
// observer once the finished record is journaled.
func finishedChild(dir, spec string) error {
	ctx := context.Background()
	var s scripted.Script
	if err := json.Unmarshal([]byte(workerScript), &s); err != nil {
		return err
	}
	exec := &supervise.KernelExecutor{Provider: scripted.New(&s, scripted.Options{}), Store: memory.New(nil)}
	o, err := finishedOptions(exec, pipeline("write alpha", "write beta"), dir)
	if err != nil {
		return err
	}
	st, closeStore, err := openJournalStore(ctx, spec)
	if err != nil {
		return err
	}
	defer closeStore()
	if st != nil {
		o.SpawnStore, o.SpawnLeaseTTL = st, kernel.MinLeaseTTL
	}
	o.Observer = killOnEnd{}
	manager, err := processManager()
	if err != nil {
		return err
	}
	_, err = supervise.Supervise(ctx, manager, "t", o)
	return err
}

// resultOpts compares results across processes: the wall clock and the
// in-memory replay marks differ by construction.
var resultOpts = cmp.Options{
	cmpopts.IgnoreFields(supervise.SupervisedResult{}, "MS", "Resumed"),
	cmpopts.IgnoreFields(supervise.WorkerSummary{}, "Replayed"),
	cmpopts.EquateEmpty(),
	cmp.Comparer(canonjson.Equal),
}

// RES-03, behaviour 46 at the run's end: a supervisor SIGKILLed right
// after its finished record, before its caller recorded the end, is
// resumed to the same result — the same winner outRef and spentTotal —
// without driving its brain again or running a worker (brain and
// executor call counts stay 0), whether its journal is the run dir's
// file, SQLite or PostgreSQL.
func TestKilledAfterFinishedRecordResumesOutcomeBehaviour46(t *testing.T) {
	if testing.Short() {
		t.Skip("re-executes the test binary")
	}
	manager, err := processManager()
	if err != nil {
		t.Fatal(err)
	}
	// The uninterrupted run.
	o, err := finishedOptions(newCounting(t, workerProvider(t)), &countingBrain{inner: pipeline("write alpha", "write beta")}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	want, err := supervise.Supervise(context.Background(), manager, "t", o)
	if err != nil || want.Winner == nil {
		t.Fatalf("uninterrupted run: %v %+v", err, want)
	}

	for _, j := range killJournals {
		t.Run(j.name, func(t *testing.T) {
			exec := newCounting(t, workerProvider(t))
			brain := &countingBrain{inner: pipeline("write alpha", "write beta")}
			got := killThenResume(t, j, " at its end", finishedChildEnv, manager, func(dir string) (supervise.Options, error) {
				return finishedOptions(exec, brain, dir)
			})
			if n := brain.drives.Load(); n != 0 {
				t.Errorf("the resumed run drove its brain %d times; want 0", n)
			}
			if exec.count("alpha") != 0 || exec.count("beta") != 0 {
				t.Errorf("the resumed run executed alpha %d, beta %d times; want 0, 0", exec.count("alpha"), exec.count("beta"))
			}
			if !got.Resumed {
				t.Error("the result does not say it was resumed")
			}
			if diff := cmp.Diff(want, got, resultOpts); diff != "" {
				t.Errorf("resumed result differs from the uninterrupted run's (-want +got):\n%s", diff)
			}
		})
	}
}

// Behaviour 46 and §3.6 Result: every arm a finished record journals
// comes back from a resume of the ended run as it was returned, and the
// run's brain is not driven again: a worker's winner, a submitted
// winner, driver-failed with its error, all-children-down.
func TestFinishedRunResumesEachArmBehaviour46(t *testing.T) {
	manager, err := processManager()
	if err != nil {
		t.Fatal(err)
	}
	arms := []struct {
		name  string
		brain supervise.BrainFunc
	}{
		{"worker winner", pipeline("write alpha", "write beta").(supervise.BrainFunc)},
		{"submitted winner", func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
			_, err := c.Submit(ctx, supervise.SubmitArgs{Result: "all DONE here"})
			return supervise.BrainReport{Text: "submitted"}, err
		}},
		{"driver failed", func(context.Context, *supervise.Coordinator, string) (supervise.BrainReport, error) {
			return supervise.BrainReport{}, errors.New("the manager's model went away")
		}},
		{"all children down", pipeline("write beta").(supervise.BrainFunc)},
	}
	for _, a := range arms {
		t.Run(a.name, func(t *testing.T) {
			dir := t.TempDir()
			brain := &countingBrain{inner: a.brain}
			o, err := finishedOptions(newCounting(t, workerProvider(t)), brain, dir)
			if err != nil {
				t.Fatal(err)
			}
			want, err := supervise.Supervise(context.Background(), manager, "t", o)
			if err != nil {
				t.Fatal(err)
			}
			exec := newCounting(t, workerProvider(t))
			o, err = finishedOptions(exec, brain, dir)
			if err != nil {
				t.Fatal(err)
			}
			got, err := supervise.Supervise(context.Background(), manager, "t", o)
			if err != nil {
				t.Fatal(err)
			}
			if n := brain.drives.Load(); n != 1 {
				t.Errorf("the brain was driven %d times over both processes; want 1", n)
			}
			if exec.count("alpha")+exec.count("beta") != 0 {
				t.Error("the resume executed a worker")
			}
			if diff := cmp.Diff(want, got, resultOpts); diff != "" {
				t.Errorf("resumed result (-first +resumed):\n%s", diff)
			}
			if got.MS != want.MS {
				t.Errorf("resumed spentTotal.ms %d, want the journaled %d", got.MS, want.MS)
			}
		})
	}
}
