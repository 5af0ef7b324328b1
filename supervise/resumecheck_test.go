package supervise_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/supervise"
)

// taskRecorder is a caller-owned brain that records the task it was
// given and the pool it saw, spawns one worker on the task with the
// given label, awaits it and answers.
type taskRecorder struct {
	mu      sync.Mutex
	tasks   []string
	readout ledger.Readout
	driven  int
}

func (b *taskRecorder) brain(label string) supervise.BrainFunc {
	return func(ctx context.Context, c *supervise.Coordinator, task string) (supervise.BrainReport, error) {
		b.mu.Lock()
		b.tasks = append(b.tasks, task)
		b.readout = c.Readout()
		b.driven++
		b.mu.Unlock()
		if _, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "writer", Task: "write alpha for " + task, Label: label}); err != nil {
			return supervise.BrainReport{}, err
		}
		if _, err := c.Await(ctx, supervise.AwaitArgs{TimeoutMS: 60_000}); err != nil {
			return supervise.BrainReport{}, err
		}
		return supervise.BrainReport{Text: "done"}, nil
	}
}

// startedRun runs one supervised run to its end in a fresh run dir on
// task "ship" with baseOptions' budget, and returns the dir.
func startedRun(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	rec := &taskRecorder{}
	o := baseOptions(t, newCounting(t, workerProvider(t)), nil)
	o.RunDir, o.Brain = dir, rec.brain("first")
	res, err := supervise.Supervise(context.Background(), managerProfile(t, verbs2...), "ship", o)
	if err != nil || res.Status != supervise.StatusWinner {
		t.Fatalf("first run: %v %+v", err, res)
	}
	return dir
}

// RES-03 and P7 (restart never mints capacity, spec runtime §1, §6), behaviour
// 46 (a resumed run continues its journal): a resume given no budget,
// no per-worker default and no task runs with the journaled ones — the
// pool's totals are the original run's and conserve, the brain is
// driven on the original task, and a new spawn reserves the journaled
// per-worker ceiling.
func TestResumeAdoptsTheJournaledBudgetAndTaskBehaviour46(t *testing.T) {
	dir := startedRun(t)
	start, err := supervise.ReadRunStarted(context.Background(), supervise.Options{RunDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if start.Task != "ship" || start.Budget == nil || start.PerWorker == nil || !strings.HasPrefix(start.ManagerDigest, "sha256:") {
		t.Fatalf("run-started record %+v: want task ship, the budget, the per-worker default and the manager digest", start)
	}

	rec := &taskRecorder{}
	o := baseOptions(t, newCounting(t, workerProvider(t)), nil)
	o.Budget, o.PerWorker = ledger.Budget{}, ledger.Budget{}
	o.RunDir, o.Resume, o.Brain = dir, true, rec.brain("second")
	res, err := supervise.Supervise(context.Background(), managerProfile(t, verbs2...), "", o)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Resumed || res.Status != supervise.StatusWinner {
		t.Fatalf("resumed %v status %s; want a resumed winner", res.Resumed, res.Status)
	}
	if diff := cmp.Diff([]string{"ship"}, rec.tasks); diff != "" {
		t.Errorf("the resumed brain's task (-journaled +given):\n%s", diff)
	}
	want := map[string]int64{ledger.ChannelTokens: 10_000, ledger.ChannelIterations: 10, ledger.ChannelUSD: 1_000_000}
	for ch, total := range want {
		b := rec.readout.Channels[ch]
		if b.Total != total {
			t.Errorf("resumed pool %s total %d, want the journaled %d", ch, b.Total, total)
		}
		if b.Free+b.Reserved+b.Committed != b.Total {
			t.Errorf("resumed pool %s: free %d + reserved %d + committed %d != total %d", ch, b.Free, b.Reserved, b.Committed, b.Total)
		}
		if b.Committed == 0 {
			t.Errorf("resumed pool %s committed nothing: the first run's spend was not restored", ch)
		}
	}
	recs, _, err := supervise.ReadRunDir(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	var second *supervise.Record
	for i := range recs {
		if recs[i].Kind == supervise.KindSpawned && recs[i].Label == "second" {
			second = &recs[i]
		}
	}
	if second == nil || second.Reserved == nil || second.Reserved.Tokens == nil || *second.Reserved.Tokens != 1_000 {
		t.Fatalf("the resumed run's spawn %+v: want it to reserve the journaled per-worker 1000 tokens", second)
	}
	if n := strings.Count(string(readJournal(t, dir)), `"kind":"run-started"`); n != 1 {
		t.Errorf("%d run-started records, want 1", n)
	}
}

// RES-03, P7, behaviour 46: a resume given an option the journal fixed
// otherwise is refused before anything runs — a *ResumeError wrapping a
// *ResumeMismatchError naming the option, the record's pointer and both
// values; the brain is not driven and the journal is unchanged. Equal
// values resume.
func TestResumeRefusesOptionsTheJournalFixedOtherwiseBehaviour46(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(o *supervise.Options, task *string, verbs *[]string)
		want   *supervise.ResumeMismatchError // nil: resumes
	}{
		{"the same options resume", func(*supervise.Options, *string, *[]string) {}, nil},
		{"a larger token budget", func(o *supervise.Options, _ *string, _ *[]string) { o.Budget.Tokens = i64(20_000) },
			&supervise.ResumeMismatchError{Field: "Budget.Tokens", Pointer: "/budget/tokens", Journaled: "10000", Given: "20000"}},
		{"more iterations, tokens adopted", func(o *supervise.Options, _ *string, _ *[]string) {
			o.Budget = ledger.Budget{Iterations: i64(11)}
		}, &supervise.ResumeMismatchError{Field: "Budget.Iterations", Pointer: "/budget/iterations", Journaled: "10", Given: "11"}},
		{"a smaller dollar budget", func(o *supervise.Options, _ *string, _ *[]string) { o.Budget.MicroUSD = i64(1) },
			&supervise.ResumeMismatchError{Field: "Budget.MicroUSD", Pointer: "/budget/microUsd", Journaled: "1000000", Given: "1"}},
		{"a resource the run never had", func(o *supervise.Options, _ *string, _ *[]string) {
			o.Budget.Resources = map[string]int64{"gpu/s": 5}
		}, &supervise.ResumeMismatchError{Field: "Budget.Resources[gpu/s]", Pointer: "/budget/resources/gpu~1s", Journaled: "none", Given: "5"}},
		{"another per-worker default", func(o *supervise.Options, _ *string, _ *[]string) { o.PerWorker.Tokens = i64(5_000) },
			&supervise.ResumeMismatchError{Field: "PerWorker.Tokens", Pointer: "/perWorker/tokens", Journaled: "1000", Given: "5000"}},
		{"another task", func(_ *supervise.Options, task *string, _ *[]string) { *task = "sail" },
			&supervise.ResumeMismatchError{Field: "Task", Pointer: "/task", Journaled: `"ship"`, Given: `"sail"`}},
		{"another manager profile", func(_ *supervise.Options, _ *string, verbs *[]string) {
			*verbs = append(*verbs, supervise.VerbStop)
		}, &supervise.ResumeMismatchError{Field: "manager", Pointer: "/managerDigest"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := startedRun(t)
			before := readJournal(t, dir)
			rec := &taskRecorder{}
			o := baseOptions(t, newCounting(t, workerProvider(t)), nil)
			o.RunDir, o.Resume, o.Brain = dir, true, rec.brain("second")
			task, verbs := "ship", append([]string(nil), verbs2...)
			tc.change(&o, &task, &verbs)
			_, err := supervise.Supervise(context.Background(), managerProfile(t, verbs...), task, o)
			if tc.want == nil {
				if err != nil || rec.driven != 1 {
					t.Fatalf("resume with the journal's own options: err %v, driven %d times", err, rec.driven)
				}
				return
			}
			var mismatch *supervise.ResumeMismatchError
			var resume *supervise.ResumeError
			if !errors.As(err, &mismatch) || !errors.As(err, &resume) {
				t.Fatalf("err = %v; want a *ResumeError wrapping a *ResumeMismatchError", err)
			}
			got := *mismatch
			if tc.want.Field == "manager" {
				if !strings.HasPrefix(got.Journaled, "sha256:") || !strings.HasPrefix(got.Given, "sha256:") || got.Journaled == got.Given {
					t.Errorf("manager digests journaled %q given %q: want two different digests", got.Journaled, got.Given)
				}
				got.Journaled, got.Given = "", ""
			}
			if diff := cmp.Diff(*tc.want, got); diff != "" {
				t.Errorf("mismatch (-want +got):\n%s", diff)
			}
			if !strings.Contains(err.Error(), tc.want.Field) {
				t.Errorf("error %q does not name %s", err, tc.want.Field)
			}
			if rec.driven != 0 {
				t.Errorf("the brain was driven %d times; a refused resume runs nothing", rec.driven)
			}
			if !bytes.Equal(before, readJournal(t, dir)) {
				t.Error("a refused resume changed the journal")
			}
		})
	}
}

// Behaviour 46 across versions: a journal written before run-started
// held the budget, the per-worker default and the manager digest still
// resumes, with the caller's budget (then required, and said in a log
// line); its journaled task is still adopted.
func TestResumeOfAnOlderJournalTakesTheCallersBudgetBehaviour46(t *testing.T) {
	dir := startedRun(t)
	path := filepath.Join(dir, supervise.SpawnJournalFile)
	data := readJournal(t, dir)
	first, rest, _ := bytes.Cut(data, []byte("\n"))
	var m map[string]any
	if err := json.Unmarshal(first, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"budget", "perWorker", "managerDigest"} {
		if _, ok := m[k]; !ok {
			t.Fatalf("the run-started record has no %s: %s", k, first)
		}
		delete(m, k)
	}
	old, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, append(append(old, '\n'), rest...), 0o600); err != nil {
		t.Fatal(err)
	}

	// Without a budget it cannot resume: the journal does not hold one.
	o := baseOptions(t, newCounting(t, workerProvider(t)), nil)
	o.Budget = ledger.Budget{}
	o.RunDir, o.Resume, o.Brain = dir, true, (&taskRecorder{}).brain("second")
	if _, err := supervise.Supervise(context.Background(), managerProfile(t, verbs2...), "", o); !errors.Is(err, supervise.ErrInvalidOptions) {
		t.Fatalf("resume of an older journal without a budget: err %v, want ErrInvalidOptions", err)
	}

	var logged bytes.Buffer
	rec := &taskRecorder{}
	o = baseOptions(t, newCounting(t, workerProvider(t)), nil)
	o.Budget.Tokens = i64(12_000)
	o.RunDir, o.Resume, o.Brain = dir, true, rec.brain("second")
	o.Logger = slogTo(&logged)
	res, err := supervise.Supervise(context.Background(), managerProfile(t, verbs2...), "", o)
	if err != nil || !res.Resumed {
		t.Fatalf("resume of an older journal: %v resumed %v", err, res.Resumed)
	}
	if diff := cmp.Diff([]string{"ship"}, rec.tasks); diff != "" {
		t.Errorf("task (-journaled +given):\n%s", diff)
	}
	if got := rec.readout.Channels[ledger.ChannelTokens].Total; got != 12_000 {
		t.Errorf("pool tokens %d, want the caller's 12000 (the journal predates journaled budgets)", got)
	}
	if !strings.Contains(logged.String(), "predates journaled budgets") {
		t.Errorf("no log line says the journal predates journaled budgets:\n%s", logged.String())
	}
}

// A new run still needs its budget: Resume set on an empty run dir is a
// new run, and a zero Budget is refused before anything is journaled.
func TestResumeWithoutAJournalStillNeedsABudget(t *testing.T) {
	dir := t.TempDir()
	o := baseOptions(t, newCounting(t, workerProvider(t)), nil)
	o.Budget = ledger.Budget{}
	o.RunDir, o.Resume, o.Brain = dir, true, (&taskRecorder{}).brain("first")
	if _, err := supervise.Supervise(context.Background(), managerProfile(t, verbs2...), "ship", o); !errors.Is(err, supervise.ErrInvalidOptions) {
		t.Fatalf("err %v, want ErrInvalidOptions", err)
	}
	if _, err := supervise.ReadRunStarted(context.Background(), supervise.Options{RunDir: dir}); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("ReadRunStarted of a run that never started: %v, want fs.ErrNotExist", err)
	}
}

func readJournal(t *testing.T, dir string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, supervise.SpawnJournalFile))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// slogTo is a logger writing text lines to w.
func slogTo(w *bytes.Buffer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, nil))
}
