package supervise_test

import (
	"context"
	"os/exec"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/supervise"
)

// A supervisor is SIGKILLed while its "slow" worker runs and is resumed
// on the same run dir: that worker started and has no terminal record,
// and this executor names no execution to recover, so it is in doubt.
// An external manager that only awaits must learn it: await_event's idle
// answer names it (a probe saw a bare {idle: true}, so the manager never
// knew its worker was lost), and observe_agent on it says it is in doubt
// and why.
func TestResumedAwaitNamesTheWorkerInDoubt(t *testing.T) {
	if testing.Short() {
		t.Skip("re-executes the test binary")
	}
	manager, err := processManager()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cmd, stderr := startSlowChild(t, childEnv+"=1", childDir+"="+dir)
	if err := cmd.Process.Kill(); err != nil { // SIGKILL
		t.Fatal(err)
	}
	if err := cmd.Wait(); err == nil {
		t.Fatalf("the child ended by itself; stderr:\n%s", stderr)
	} else if _, ok := err.(*exec.ExitError); !ok {
		t.Fatal(err)
	}

	var (
		answers []supervise.AwaitResult
		obs     supervise.Observation
		obsErr  error
	)
	o, err := processOptions(newCounting(t, workerProvider(t)), dir)
	if err != nil {
		t.Fatal(err)
	}
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		// What the manager learns by awaiting alone: the replayed
		// settlement of run1:s1, then the end of what it can wait for.
		for range 4 {
			res, err := c.Await(ctx, supervise.AwaitArgs{TimeoutMS: 5_000})
			if err != nil {
				return supervise.BrainReport{}, err
			}
			answers = append(answers, res)
			if res.Event == nil {
				break
			}
		}
		obs, obsErr = c.Observe("run1:s2")
		return supervise.BrainReport{}, nil
	})
	if _, err := supervise.Supervise(context.Background(), manager, "t", o); err != nil {
		t.Fatal(err)
	}
	last := answers[len(answers)-1]
	if last.Event != nil || !last.Idle || len(last.InDoubt) != 1 || last.InDoubt[0] != "run1:s2" {
		t.Errorf("await_event once nothing more can settle: %+v, want {idle: true, inDoubt: [run1:s2]}", last)
	}
	if obsErr != nil || !obs.InDoubt || obs.Reason == "" || !strings.Contains(obs.Reason, "spawn the work again") {
		t.Errorf("observe_agent run1:s2: %v %+v, want it in doubt, saying why and what to do", obsErr, obs)
	}
}
