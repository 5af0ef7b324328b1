package supervise_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/store/memory"
	"github.com/agentrt/agentrt/supervise"
)

// driverKillEnv makes the re-executed test binary run a supervisor whose
// driver fails once and then waits out an hour's backoff, until killed.
const driverKillEnv = "AGENTRT_SUPERVISE_DRIVER_KILL"

// driverKillFromEnv runs the child of TestDriverLoopKilledInBackoffResumes
// when the environment asks for it.
func driverKillFromEnv() (bool, error) {
	if os.Getenv(driverKillEnv) == "" {
		return false, nil
	}
	return true, fmt.Errorf("the driver-loop child was not killed in its backoff: %v", driverKillChild(os.Getenv(childDir)))
}

func driverKillChild(dir string) error {
	var s scripted.Script
	if err := json.Unmarshal([]byte(workerScript), &s); err != nil {
		return err
	}
	o, err := processOptions(&supervise.KernelExecutor{Provider: scripted.New(&s, scripted.Options{}), Store: memory.New(nil)}, dir)
	if err != nil {
		return err
	}
	o.Brain = &attemptsBrain{steps: []step{{err: errors.New("pi exit unknown")}}}
	o.DriverRetry = supervise.DriverRetry{InitialBackoff: time.Hour}
	o.OnDriverAttempt = func(supervise.DriverAttempt) {
		// Journaled before the observer is told: the parent kills now.
		_ = os.WriteFile(filepath.Join(dir, "in-backoff"), nil, 0o600)
	}
	manager, err := processManager()
	if err != nil {
		return err
	}
	_, err = supervise.Supervise(context.Background(), manager, "t", o)
	return err
}

// §3.6 driverRetry, behaviour 46: a supervisor SIGKILLed while its
// driver loop waits out a backoff is resumed on the same run dir. The
// resumed process's loop starts fresh (its first attempt entered with no
// re-entry, its Continuation counting its own attempts); the earlier
// process's driver-attempt record stays in the journal, read_journal
// returns it, replay passes over it, and the resumed run wins.
func TestDriverLoopKilledInBackoffResumes(t *testing.T) {
	if testing.Short() {
		t.Skip("re-executes the test binary")
	}
	dir := t.TempDir()
	killChildAt(t, filepath.Join(dir, "in-backoff"), "reached its backoff", driverKillEnv+"=1", childDir+"="+dir)

	o, err := processOptions(newCounting(t, workerProvider(t)), dir)
	if err != nil {
		t.Fatal(err)
	}
	var earlier supervise.JournalPage
	inner := &attemptsBrain{steps: []step{{deliver: true}}}
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, task string) (supervise.BrainReport, error) {
		earlier = c.ReadJournal(supervise.JournalArgs{Kinds: []string{supervise.KindDriverAttempt}})
		return inner.Drive(ctx, c, task)
	})
	o.DriverRetry = supervise.DriverRetry{InitialBackoff: time.Millisecond}
	manager, err := processManager()
	if err != nil {
		t.Fatal(err)
	}
	res, err := supervise.Supervise(context.Background(), manager, "t", o)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Resumed || res.Status != supervise.StatusWinner {
		t.Fatalf("resumed %v status %s reason %s error %+v; want a resumed winner", res.Resumed, res.Status, res.Reason, res.Error)
	}
	if len(inner.reentry) != 1 || inner.reentry[0] != nil {
		t.Errorf("the resumed loop entered its driver with %+v, want once with no re-entry", inner.reentry)
	}
	if c := res.Continuation; c == nil || c.Attempts != 1 || c.FailureRetries != 0 || c.Ended != supervise.StopCompleted {
		t.Errorf("continuation %+v, want this process's 1 attempt, completed", c)
	}
	if len(earlier.Rows) != 1 {
		t.Fatalf("read_journal returned %d driver-attempt rows, want the killed process's 1: %+v", len(earlier.Rows), earlier)
	}
	var a supervise.DriverAttempt
	if err := canonjson.FromValue(earlier.Rows[0].Data, &a); err != nil {
		t.Fatalf("the row's data: %v", err)
	}
	if a.Attempt != 1 || a.Class != supervise.FailureTransient || a.RetryInMS == nil || *a.RetryInMS != time.Hour.Milliseconds() {
		t.Errorf("the killed process's attempt %+v", a)
	}
	rows, _, err := supervise.ReadRunDir(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	var n int
	for _, r := range rows {
		if r.Kind == supervise.KindDriverAttempt {
			n++
		}
	}
	if n != 2 {
		t.Errorf("the journal holds %d driver-attempt records, want 2 (one per process)", n)
	}
}
