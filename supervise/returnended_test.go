package supervise_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/supervise"
)

// errProcessStopping is the cause a stopping host gives its runs.
var errProcessStopping = errors.New("the host process is stopping")

// spawnAlphaThen spawns alpha under key "a", awaits its settlement and
// then does what after says.
func spawnAlphaThen(after func(ctx context.Context) (supervise.BrainReport, error)) supervise.BrainFunc {
	return func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		if _, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "writer", Task: "write alpha", Key: "a"}); err != nil {
			return supervise.BrainReport{}, err
		}
		if _, err := c.Await(ctx, supervise.AwaitArgs{TimeoutMS: 60_000, Kinds: []string{supervise.EventSettled}}); err != nil {
			return supervise.BrainReport{}, err
		}
		return after(ctx)
	}
}

// finishedCount is how many finished records dir's journal holds.
func finishedCount(t *testing.T, dir string) int {
	t.Helper()
	return len(slices.DeleteFunc(kinds(t, dir), func(k string) bool { return k != supervise.KindFinished }))
}

// Behaviour 46 with ReturnEnded, at its edge: a run its caller's
// context cancelled (the host stopping, as a delegation queue's Close
// does) journals a finished record, but that record is an interruption,
// not an end — a resume with ReturnEnded drives the brain on over the
// replayed journal (alpha replayed, not executed again) to a winner, and
// only a resume after that winner returns it without a drive.
func TestReturnEndedDrivesOnACallerCancelledRunBehaviour46(t *testing.T) {
	manager, err := processManager()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	o, err := processOptions(newCounting(t, workerProvider(t)), dir)
	if err != nil {
		t.Fatal(err)
	}
	o.ReturnEnded = true
	o.Brain = spawnAlphaThen(func(bctx context.Context) (supervise.BrainReport, error) {
		cancel(errProcessStopping) // the host stops while the manager thinks
		<-bctx.Done()
		return supervise.BrainReport{}, bctx.Err()
	})
	first, err := supervise.Supervise(ctx, manager, "t", o)
	if err != nil {
		t.Fatal(err)
	}
	if first.Status != supervise.StatusNoWinner || first.Reason != supervise.ReasonAborted ||
		first.Cancellation == nil || first.Cancellation.Source != supervise.CancelSourceContext || first.Cancellation.OperationID != "" {
		t.Fatalf("first process: %s %s %+v, want no-winner aborted by its context", first.Status, first.Reason, first.Cancellation)
	}
	if n := finishedCount(t, dir); n != 1 {
		t.Fatalf("%d finished records after the interrupted process, want 1", n)
	}

	// The next process resumes it: the brain is driven again, alpha is
	// replayed (its key completed), and the run ends with alpha winning.
	exec := newCounting(t, workerProvider(t))
	brain := &countingBrain{inner: spawnAlphaThen(func(context.Context) (supervise.BrainReport, error) {
		return supervise.BrainReport{Text: "alpha is it"}, nil
	})}
	o, err = processOptions(exec, dir)
	if err != nil {
		t.Fatal(err)
	}
	o.ReturnEnded, o.Brain = true, brain
	second, err := supervise.Supervise(context.Background(), manager, "t", o)
	if err != nil {
		t.Fatal(err)
	}
	if n := brain.drives.Load(); n != 1 {
		t.Errorf("the resume drove the brain %d times, want 1 (an interrupted run is driven on)", n)
	}
	if n := exec.count("alpha"); n != 0 {
		t.Errorf("the resume executed alpha %d times, want 0 (replayed)", n)
	}
	if !second.Resumed || second.Status != supervise.StatusWinner || second.Winner == nil || second.Winner.Node != "run1:s1" {
		t.Fatalf("second process: resumed %v %s %+v, want alpha (run1:s1) the winner", second.Resumed, second.Status, second.Winner)
	}
	if n := finishedCount(t, dir); n != 2 {
		t.Fatalf("%d finished records after the resumed end, want 2", n)
	}

	// That winner is an end: a third process returns it without a drive.
	exec = newCounting(t, workerProvider(t))
	brain = &countingBrain{inner: spawnAlphaThen(func(context.Context) (supervise.BrainReport, error) {
		return supervise.BrainReport{}, errors.New("must not be driven")
	})}
	o, err = processOptions(exec, dir)
	if err != nil {
		t.Fatal(err)
	}
	o.ReturnEnded, o.Brain = true, brain
	third, err := supervise.Supervise(context.Background(), manager, "t", o)
	if err != nil {
		t.Fatal(err)
	}
	if n := brain.drives.Load(); n != 0 || exec.count("alpha") != 0 {
		t.Errorf("the resume of the ended run drove the brain %d times and ran alpha %d times, want 0 and 0", n, exec.count("alpha"))
	}
	if diff := cmp.Diff(second, third, resultOpts); diff != "" {
		t.Errorf("the ended run's resume (-ended +resumed):\n%s", diff)
	}
	if n := finishedCount(t, dir); n != 2 {
		t.Errorf("%d finished records after returning the ended run, want 2 (none appended)", n)
	}
}

// Behaviours 46 and 50 with ReturnEnded: a run a CancelRun request
// ended is ended (a decision about the run, unlike a caller's context):
// its resume returns the journaled cancellation, with its source and
// operation id, without driving the brain.
func TestReturnEndedKeepsARunCancelRequestBehaviour50(t *testing.T) {
	manager, err := processManager()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	o, err := processOptions(newCounting(t, workerProvider(t)), dir)
	if err != nil {
		t.Fatal(err)
	}
	o.ReturnEnded = true
	o.Brain = spawnAlphaThen(func(bctx context.Context) (supervise.BrainReport, error) {
		if _, err := supervise.CancelRun(bctx, dir, "op-end", supervise.RunCancelOptions{Source: "operator", Reason: "enough"}); err != nil {
			return supervise.BrainReport{}, err
		}
		<-bctx.Done() // the run's control scan applies it
		return supervise.BrainReport{}, bctx.Err()
	})
	first, err := supervise.Supervise(ctx, manager, "t", o)
	if err != nil {
		t.Fatal(err)
	}
	want := &supervise.Cancellation{Source: "operator", Reason: "enough", OperationID: "op-end"}
	if first.Reason != supervise.ReasonCancelled || !cmp.Equal(first.Cancellation, want) {
		t.Fatalf("first process: %s %s %+v, want cancelled by %+v", first.Status, first.Reason, first.Cancellation, want)
	}

	exec := newCounting(t, workerProvider(t))
	brain := &countingBrain{inner: pipeline("write alpha")}
	o, err = processOptions(exec, dir)
	if err != nil {
		t.Fatal(err)
	}
	o.ReturnEnded, o.Brain = true, brain
	got, err := supervise.Supervise(ctx, manager, "t", o)
	if err != nil {
		t.Fatal(err)
	}
	if n := brain.drives.Load(); n != 0 || exec.count("alpha") != 0 {
		t.Errorf("the resume drove the brain %d times and ran alpha %d times, want 0 and 0", n, exec.count("alpha"))
	}
	if diff := cmp.Diff(first, got, resultOpts); diff != "" {
		t.Errorf("the cancelled run's resume (-ended +resumed):\n%s", diff)
	}
}

// Behaviour 46's edge: a finished record whose outcome is not a result
// a run can return (a winner without its winner, a no-winner without a
// reason, an unknown status, a loss count short of the records it
// names) is refused as a *ResumeError wrapping an *OutcomeError with the
// JSON pointer of the member at fault — never returned as the run's
// result.
func TestReturnEndedRefusesAnOutcomeThatIsNotAResult(t *testing.T) {
	const total = `{"tokens":5,"iterations":1,"microUsd":0,"tokensKnown":true,"iterationsKnown":true,"usdKnown":true}`
	const totals = `"spent":` + total + `,"driverInference":` + total + `,"childWork":` + total + `,"ms":3`
	cases := []struct{ result, path string }{
		{`{"status":"winner",` + totals + `}`, "/result/winner"},
		{`{"status":"winner","reason":"aborted","winner":{"node":"run1:s1","outRef":""},` + totals + `}`, "/result/reason"},
		{`{"status":"no-winner",` + totals + `}`, "/result/reason"},
		{`{"status":"no-winner","reason":"driver-failed",` + totals + `}`, "/result/error"},
		{`{"status":"no-winner","reason":"cancelled",` + totals + `}`, "/result/cancellation"},
		{`{"status":"maybe",` + totals + `}`, "/result/status"},
		{`{"status":"no-winner","reason":"aborted","lostCount":1,"lost":[{"kind":"settled"},{"kind":"metered"}],` + totals + `}`, "/result/lost"},
		{`{"status":"no-winner","reason":"aborted","lostCount":-1,` + totals + `}`, "/result/lostCount"},
	}
	for _, tc := range cases {
		t.Run(tc.path, func(t *testing.T) {
			dir := t.TempDir()
			journal := `{"kind":"run-started","runId":"run1","startedAtMs":1,"task":"t"}` + "\n" + `{"kind":"finished","result":` + tc.result + "}\n"
			if err := os.WriteFile(filepath.Join(dir, supervise.SpawnJournalFile), []byte(journal), 0o600); err != nil {
				t.Fatal(err)
			}
			brain := &countingBrain{inner: pipeline("write alpha")}
			o, err := processOptions(newCounting(t, workerProvider(t)), dir)
			if err != nil {
				t.Fatal(err)
			}
			o.ReturnEnded, o.Brain = true, brain
			res, err := supervise.Supervise(context.Background(), mustProcessManager(t), "t", o)
			var re *supervise.ResumeError
			var oe *supervise.OutcomeError
			if !errors.As(err, &re) || !errors.As(err, &oe) || oe.Path != tc.path {
				t.Fatalf("err %v (result %s), want a *ResumeError over an *OutcomeError at %s", err, res.Status, tc.path)
			}
			if brain.drives.Load() != 0 {
				t.Error("the brain was driven over a journal that cannot be resumed")
			}
		})
	}
}

func mustProcessManager(t *testing.T) *profile.Profile {
	t.Helper()
	p, err := processManager()
	if err != nil {
		t.Fatal(err)
	}
	return p
}
