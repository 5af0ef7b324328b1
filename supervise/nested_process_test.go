package supervise_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"syscall"
	"testing"

	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/store/memory"
	"github.com/agentrt/agentrt/supervise"
)

// nestedKillEnv makes the test binary the child of
// TestNestedSupervisorKilledMidTreeResumes: its lead SIGKILLs the
// process once its first child's settlement is durable.
const nestedKillEnv = "AGENTRT_SUPERVISE_NESTED_KILL_CHILD"

// nestedLeadPipeline is a replay-safe nested manager brain: it spawns
// each task in turn and awaits its settlement, and calls killAfter (when
// set) once the first settlement came back, then answers DONE.
func nestedLeadPipeline(killAfter func(), tasks ...string) supervise.Brain {
	return goLead(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		for i, task := range tasks {
			if _, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "writer", Task: task}); err != nil {
				return supervise.BrainReport{}, err
			}
			if r, err := c.Await(ctx, supervise.AwaitArgs{TimeoutMS: 60_000, Kinds: []string{supervise.EventSettled}}); err != nil || r.Event == nil {
				return supervise.BrainReport{}, errors.Join(err, errors.New("the lead's await returned no settlement"))
			}
			if i == 0 && killAfter != nil {
				killAfter()
			}
		}
		return supervise.BrainReport{Text: "lead DONE"}, nil
	})
}

// nestedKillOptions are the options of every process of the nested kill
// test: a root pipeline spawning one lead, whose brain is lead.
func nestedKillOptions(exec supervise.Executor, lead supervise.Brain, dir string) (supervise.Options, error) {
	o, err := processOptions(exec, dir)
	if err != nil {
		return o, err
	}
	leadP, err := profile.Parse([]byte(`{"name": "lead", "harness": "cli-base", "tools": {"agent_runtime_coordination_spawn_worker": true, "agent_runtime_coordination_await_event": true}}`))
	if err != nil {
		return o, err
	}
	o.Profiles["lead"] = leadP
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		// The lead's grant holds its two writers (1,000 tokens and 1
		// iteration each): its subtree draws on it.
		tokens, iterations := int64(2_000), int64(2)
		grant := &supervise.SpawnBudget{Tokens: &tokens, Iterations: &iterations}
		if _, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "lead", Task: "lead the writers", Key: "lead-1", Budget: grant}); err != nil {
			return supervise.BrainReport{}, err
		}
		_, err := c.Await(ctx, supervise.AwaitArgs{TimeoutMS: 60_000, Kinds: []string{supervise.EventSettled}})
		return supervise.BrainReport{}, err
	})
	o.ManagerBrain = func(*profile.Profile) supervise.Brain { return lead }
	return o, nil
}

// nestedKillChild is the child process: it runs the tree on the journal
// spec names until its lead kills it.
func nestedKillChild(dir, spec string) error {
	ctx := context.Background()
	kill := func() {
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // the signal takes the process before anything else runs
	}
	var s scripted.Script
	if err := json.Unmarshal([]byte(workerScript), &s); err != nil {
		return err
	}
	exec := &supervise.KernelExecutor{Provider: scripted.New(&s, scripted.Options{}), Store: memory.New(nil)}
	o, err := nestedKillOptions(exec, nestedLeadPipeline(kill, "write alpha", "write beta"), dir)
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
	manager, err := processManager()
	if err != nil {
		return err
	}
	_, err = supervise.Supervise(ctx, manager, "t", o)
	return err
}

// Issue 13 "Done when" and behaviour 46 at depth: a real supervisor
// process is SIGKILLed mid-tree — its lead (a nested manager, spawned
// with a key) has one settled child and none started after — and a new
// process resumes the run on the same file, SQLite or PostgreSQL
// journal: the lead is driven again under its id, the root's repeated
// keyed spawn re-attaches to it, the settled child is not executed again
// (executor counts), and the winner's outRef equals an uninterrupted
// run's.
func TestNestedSupervisorKilledMidTreeResumes(t *testing.T) {
	manager, err := processManager()
	if err != nil {
		t.Fatal(err)
	}
	refExec := newCounting(t, workerProvider(t))
	o, err := nestedKillOptions(refExec, nestedLeadPipeline(nil, "write alpha", "write beta"), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	want, err := supervise.Supervise(context.Background(), manager, "t", o)
	if err != nil || want.Winner == nil || want.Winner.Node != "run1:s1" {
		t.Fatalf("uninterrupted run: %v %+v", err, want.Winner)
	}
	for _, j := range killJournals {
		t.Run(j.name, func(t *testing.T) {
			second := newCounting(t, workerProvider(t))
			got := killThenResume(t, j, " mid-tree", nestedKillEnv, manager, func(dir string) (supervise.Options, error) {
				return nestedKillOptions(second, nestedLeadPipeline(nil, "write alpha", "write beta"), dir)
			})
			if second.count("alpha") != 0 || second.count("beta") != 1 {
				t.Errorf("the resumed process executed alpha %d, beta %d times; want 0 and 1", second.count("alpha"), second.count("beta"))
			}
			if got.Error != nil || got.Status != supervise.StatusWinner {
				t.Errorf("resumed run %s, error %+v; want a winner (the root's repeated keyed spawn re-attached)", got.Status, got.Error)
			}
			if got.Winner == nil || got.Winner.Node != want.Winner.Node || got.Winner.OutRef != want.Winner.OutRef {
				t.Fatalf("resumed winner %+v, want %+v", got.Winner, want.Winner)
			}
			if len(got.Tree) != 3 || got.Tree[0].ID != "run1:s1" || got.Tree[0].Replayed || !got.Tree[1].Replayed || got.Tree[2].Replayed {
				t.Errorf("tree %+v, want the lead driven again, alpha replayed, beta run", got.Tree)
			}
		})
	}
}
