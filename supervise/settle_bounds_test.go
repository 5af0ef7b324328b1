package supervise_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt/internal/journaltest"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/supervise"
)

// boundsOptions is a one-worker run on exec with check, driven by a
// brain that spawns one worker and awaits its settlement.
func boundsOptions(t *testing.T, dir string, exec supervise.Executor, check func(context.Context, supervise.Output) (kernel.Verdict, error)) supervise.Options {
	t.Helper()
	tokens, iters := int64(1000), int64(10)
	return supervise.Options{Budget: ledger.Budget{Tokens: &tokens, Iterations: &iters}, RunDir: dir, RunID: "r",
		PerWorker:   ledger.Budget{Tokens: new(int64(100)), Iterations: new(int64(1))},
		Profiles:    map[string]*profile.Profile{"w": {Name: new("w")}},
		Deliverable: supervise.Deliverable{Check: check}, Executor: exec,
		Brain: supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
			if _, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "w", Task: "go"}); err != nil {
				return supervise.BrainReport{}, err
			}
			_, err := c.Await(ctx, supervise.AwaitArgs{TimeoutMS: 60000})
			return supervise.BrainReport{}, err
		})}
}

func spent() ledger.Spend {
	return ledger.Spend{Tokens: new(int64(10)), Iterations: new(int64(1)), MicroUSD: new(int64(0))}
}

// A worker's failure, a check's error and a verdict's reason of any size
// are journaled, clipped to MaxReasonBytes: a 2 MiB error used to make
// the settlement too large for the journal, losing it (the run then
// reported a journal loss, and a resume found the worker in doubt).
func TestHugeReasonsAreClippedNotLost(t *testing.T) {
	huge := strings.Repeat("é", 1<<20) // 2 MiB, multi-byte at every cut
	pass := func(context.Context, supervise.Output) (kernel.Verdict, error) {
		return kernel.Verdict{Passed: true}, nil
	}
	for _, tc := range []struct {
		name  string
		exec  supervise.ExecutorFunc
		check func(context.Context, supervise.Output) (kernel.Verdict, error)
		field func(supervise.Record) string
	}{
		{name: "executor error", check: pass,
			exec: func(context.Context, supervise.Work) (supervise.WorkResult, error) {
				return supervise.WorkResult{Spent: spent()}, errors.New(huge)
			},
			field: func(r supervise.Record) string { return r.Reason }},
		{name: "check error",
			exec: func(context.Context, supervise.Work) (supervise.WorkResult, error) {
				return supervise.WorkResult{Text: "out", Spent: spent()}, nil
			},
			check: func(context.Context, supervise.Output) (kernel.Verdict, error) {
				return kernel.Verdict{}, errors.New(huge)
			},
			field: func(r supervise.Record) string { return r.CheckError }},
		{name: "verdict reason",
			exec: func(context.Context, supervise.Work) (supervise.WorkResult, error) {
				return supervise.WorkResult{Text: "out", Spent: spent()}, nil
			},
			check: func(context.Context, supervise.Output) (kernel.Verdict, error) {
				return kernel.Verdict{Passed: true, Reason: huge}, nil
			},
			field: func(r supervise.Record) string { return r.Verdict.Reason }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			_, err := supervise.Supervise(context.Background(), &profile.Profile{Name: new("m")}, "t", boundsOptions(t, dir, tc.exec, tc.check))
			if err != nil {
				t.Fatalf("Supervise: %v (a clipped settlement loses nothing)", err)
			}
			recs, _, err := supervise.ReadRunDir(context.Background(), dir)
			if err != nil {
				t.Fatal(err)
			}
			var settled *supervise.Record
			for i := range recs {
				if recs[i].Kind == supervise.KindSettled {
					settled = &recs[i]
				}
			}
			if settled == nil {
				t.Fatal("no settled record journaled")
			}
			got := tc.field(*settled)
			if len(got) > supervise.MaxReasonBytes+len("…") || !strings.HasSuffix(got, "…") || !strings.HasPrefix(huge, strings.TrimSuffix(got, "…")) {
				t.Errorf("journaled text: %d bytes, want a valid prefix of at most %d bytes marked …", len(got), supervise.MaxReasonBytes)
			}
		})
	}
}

// A result that passed its check but could not be stored is not
// delivered (a resume would find no text behind it) and is a journal
// loss; a journaled delivered result whose blob is gone is not a winner
// on resume, never a winner with an empty text.
func TestUnstoredResultIsNotDelivered(t *testing.T) {
	pass := func(context.Context, supervise.Output) (kernel.Verdict, error) {
		return kernel.Verdict{Passed: true}, nil
	}
	t.Run("blob write fails", func(t *testing.T) {
		dir := t.TempDir()
		exec := supervise.ExecutorFunc(func(context.Context, supervise.Work) (supervise.WorkResult, error) {
			// The blob directory becomes a file: the result cannot be stored.
			blobs := filepath.Join(dir, "blobs")
			if err := os.RemoveAll(blobs); err != nil {
				return supervise.WorkResult{}, err
			}
			if err := os.WriteFile(blobs, nil, 0o600); err != nil {
				return supervise.WorkResult{}, err
			}
			return supervise.WorkResult{Text: "the answer", Spent: spent()}, nil
		})
		res, err := supervise.Supervise(context.Background(), &profile.Profile{Name: new("m")}, "t", boundsOptions(t, dir, exec, pass))
		var loss *supervise.JournalLossError
		if !errors.As(err, &loss) || loss.Lost[0].Kind != "result-blob" {
			t.Fatalf("err = %v, want a JournalLossError naming the result blob", err)
		}
		if res.Status == supervise.StatusWinner || len(res.Tree) != 1 || res.Tree[0].Delivered {
			t.Errorf("status %s, tree %+v; want no winner, the worker not delivered", res.Status, res.Tree)
		}
	})
	t.Run("blob lost before resume", func(t *testing.T) {
		dir := t.TempDir()
		exec := supervise.ExecutorFunc(func(context.Context, supervise.Work) (supervise.WorkResult, error) {
			return supervise.WorkResult{Text: "the answer", Spent: spent()}, nil
		})
		o := boundsOptions(t, dir, exec, pass)
		if res, err := supervise.Supervise(context.Background(), &profile.Profile{Name: new("m")}, "t", o); err != nil || res.Status != supervise.StatusWinner {
			t.Fatalf("first run: %v %s", err, res.Status)
		}
		journaltest.KeepThrough(t, dir, supervise.KindSettled, 1)
		if err := os.RemoveAll(filepath.Join(dir, "blobs")); err != nil {
			t.Fatal(err)
		}
		o.Resume = true
		res, err := supervise.Supervise(context.Background(), &profile.Profile{Name: new("m")}, "t", o)
		if err != nil {
			t.Fatal(err)
		}
		if res.Status == supervise.StatusWinner {
			t.Errorf("resumed over a lost blob: winner %+v; want none", res.Winner)
		}
	})
}

// An oversized or malformed spawn is a §3.6 refusal ({error, reason}),
// checked before it takes a node id: a 2 MiB task used to fail as the
// journal's raw record-size error and use up the next worker's id.
func TestOversizedSpawnRefusedWithoutTakingAnID(t *testing.T) {
	pass := func(context.Context, supervise.Output) (kernel.Verdict, error) {
		return kernel.Verdict{Passed: true}, nil
	}
	exec := supervise.ExecutorFunc(func(context.Context, supervise.Work) (supervise.WorkResult, error) {
		return supervise.WorkResult{Text: "ok", Spent: spent()}, nil
	})
	o := boundsOptions(t, t.TempDir(), exec, pass)
	var refusals []string
	var next supervise.SpawnResult
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		for _, a := range []supervise.SpawnArgs{
			{Profile: "w", Task: strings.Repeat("x", 2<<20)},
			{Profile: "w", Task: "bad \xff utf-8"},
			{Profile: "w", Task: "go", Label: strings.Repeat("l", supervise.MaxSpawnName+1)},
			{Profile: "w", Task: "go", Key: strings.Repeat("k", supervise.MaxSpawnName+1)},
		} {
			_, err := c.Spawn(ctx, a)
			var r *supervise.Refusal
			if !errors.As(err, &r) {
				return supervise.BrainReport{}, fmt.Errorf("spawn of %d task bytes: %v, want a refusal", len(a.Task), err)
			}
			refusals = append(refusals, string(r.Code))
		}
		var err error
		if next, err = c.Spawn(ctx, supervise.SpawnArgs{Profile: "w", Task: "go"}); err != nil {
			return supervise.BrainReport{}, err
		}
		_, err = c.Await(ctx, supervise.AwaitArgs{TimeoutMS: 60000})
		return supervise.BrainReport{}, err
	})
	res, err := supervise.Supervise(context.Background(), &profile.Profile{Name: new("m")}, "t", o)
	if err != nil || res.Error != nil {
		t.Fatalf("%v %+v", err, res.Error)
	}
	if want := []string{"preflight-refused", "preflight-refused", "invalid-identity", "invalid-identity"}; !slices.Equal(refusals, want) {
		t.Errorf("refusals %v, want %v", refusals, want)
	}
	if next.WorkerID != "r:s1" {
		t.Errorf("the first admitted worker is %s, want r:s1: a refused spawn takes no id", next.WorkerID)
	}
}

// The completion gate is bounded and ranks only real scores: a check
// that never answers (Deliverable.Timeout) and one whose score is NaN
// or infinite did not pass — the output is not delivered, the check's
// error says why, and the settlement is journaled (a non-finite score
// made it unjournalable, and the finalizer reported all-children-down
// with no child down).
func TestCheckBoundedAndScoresFinite(t *testing.T) {
	exec := supervise.ExecutorFunc(func(context.Context, supervise.Work) (supervise.WorkResult, error) {
		return supervise.WorkResult{Text: "out", Spent: spent()}, nil
	})
	for _, tc := range []struct {
		name    string
		check   func(context.Context, supervise.Output) (kernel.Verdict, error)
		timeout time.Duration
		want    string
	}{
		{name: "hangs", timeout: 50 * time.Millisecond, want: "did not answer within",
			check: func(context.Context, supervise.Output) (kernel.Verdict, error) { select {} }},
		{name: "NaN", want: "non-finite score",
			check: func(context.Context, supervise.Output) (kernel.Verdict, error) {
				return kernel.Verdict{Passed: true, Score: new(math.NaN())}, nil
			}},
		{name: "-Inf", want: "non-finite score",
			check: func(context.Context, supervise.Output) (kernel.Verdict, error) {
				return kernel.Verdict{Passed: true, Score: new(math.Inf(-1))}, nil
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			o := boundsOptions(t, dir, exec, tc.check)
			o.Deliverable.Timeout = tc.timeout
			res, err := supervise.Supervise(context.Background(), &profile.Profile{Name: new("m")}, "t", o)
			if err != nil {
				t.Fatalf("Supervise: %v (the settlement must be journaled)", err)
			}
			if res.Status == supervise.StatusWinner || len(res.Tree) != 1 || res.Tree[0].Delivered {
				t.Errorf("status %s, tree %+v; want no winner, the worker not delivered", res.Status, res.Tree)
			}
			recs, _, err := supervise.ReadRunDir(context.Background(), dir)
			if err != nil {
				t.Fatal(err)
			}
			checkErr := ""
			for _, r := range recs {
				if r.Kind == supervise.KindSettled {
					checkErr = r.CheckError
				}
			}
			if !strings.Contains(checkErr, tc.want) {
				t.Errorf("journaled check error %q, want it saying %q", checkErr, tc.want)
			}
		})
	}
	// A -Inf score is still a score when it is finite: the finalizer
	// picks a delivered child whatever its (finite) score.
	low := func(context.Context, supervise.Output) (kernel.Verdict, error) {
		return kernel.Verdict{Passed: true, Score: new(-math.MaxFloat64)}, nil
	}
	res, err := supervise.Supervise(context.Background(), &profile.Profile{Name: new("m")}, "t", boundsOptions(t, t.TempDir(), exec, low))
	if err != nil || res.Status != supervise.StatusWinner {
		t.Errorf("a delivered child scored -MaxFloat64: %v, status %s; want it the winner", err, res.Status)
	}
}

// submit_result after stop is refused scope-settled: the manager ended
// the run, which takes no result from then on.
func TestSubmitAfterStopIsRefused(t *testing.T) {
	pass := func(context.Context, supervise.Output) (kernel.Verdict, error) {
		return kernel.Verdict{Passed: true}, nil
	}
	exec := supervise.ExecutorFunc(func(context.Context, supervise.Work) (supervise.WorkResult, error) {
		return supervise.WorkResult{Text: "ok", Spent: spent()}, nil
	})
	o := boundsOptions(t, t.TempDir(), exec, pass)
	var refusal *supervise.VerbRefusal
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		if _, err := c.Stop(supervise.StopArgs{Reason: "done"}); err != nil {
			return supervise.BrainReport{}, err
		}
		_, err := c.Submit(ctx, supervise.SubmitArgs{Result: "late"})
		errors.As(err, &refusal)
		return supervise.BrainReport{}, nil
	})
	res, err := supervise.Supervise(context.Background(), &profile.Profile{Name: new("m")}, "t", o)
	if err != nil {
		t.Fatal(err)
	}
	if refusal == nil || refusal.Code != "scope-settled" || res.Status == supervise.StatusWinner {
		t.Errorf("submit after stop: refusal %+v, status %s; want scope-settled and no winner", refusal, res.Status)
	}
}
