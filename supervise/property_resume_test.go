package supervise_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/supervise"
)

// The crash-and-resume half of issue 13's property test (behaviours 36,
// 40, 46): random runs of spawns and settlements are cut at a random
// point of their journal — the process died there, its torn tail
// dropped — and resumed, up to three times in a row. After the journal
// is replayed, and after every step the resumed run takes, free +
// reserved + committed equals the root total on tokens, usd and
// iterations, and the run ends with a result.
func TestConservationAcrossCrashAndResume(t *testing.T) {
	const seeds = 40
	tasks := []string{"write alpha", "write beta", "write alpha again", "write beta again"}
	resumes := 0
	for seed := range uint64(seeds) {
		rng := rand.New(rand.NewPCG(seed, 0xc4a5))
		plan := make([]string, 2+rng.IntN(4))
		for i := range plan {
			plan[i] = tasks[rng.IntN(len(tasks))]
		}
		dir := t.TempDir()
		where := func(phase string, step int) string { return fmt.Sprintf("seed %d, %s, step %d", seed, phase, step) }
		run := func(phase string, resume bool) supervise.SupervisedResult {
			o := baseOptions(t, newCounting(t, workerProvider(t)), nil)
			o.RunDir, o.Resume = dir, resume
			o.Brain = planBrain(t, plan, func(step int) string { return where(phase, step) })
			res, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o)
			if err != nil {
				t.Fatalf("%s: %v", where(phase, -1), err)
			}
			if res.Status == "" {
				t.Fatalf("%s: no result", where(phase, -1))
			}
			return res
		}
		run("first run", false)
		for crash := range 1 + rng.IntN(3) {
			cutJournal(t, dir, rng)
			res := run(fmt.Sprintf("resume %d", crash+1), true)
			resumes++
			if !res.Resumed {
				t.Fatalf("%s: the run was not resumed", where("resume", -1))
			}
		}
	}
	t.Logf("%d seeds, %d crash-and-resume cycles", seeds, resumes)
}

// cutJournal keeps a random prefix of the run dir's spawn journal (at
// least its first record), as a process killed after that record left
// it, and sometimes a torn half line after it.
func cutJournal(t *testing.T, dir string, rng *rand.Rand) {
	t.Helper()
	path := filepath.Join(dir, supervise.SpawnJournalFile)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(bytes.TrimSuffix(data, []byte("\n")), []byte("\n"))
	keep := 1 + rng.IntN(len(lines))
	out := bytes.Join(lines[:keep], nil)
	if !bytes.HasSuffix(out, []byte("\n")) {
		out = append(out, '\n')
	}
	if keep < len(lines) && rng.IntN(3) == 0 {
		out = append(out, lines[keep][:len(lines[keep])/2]...) // torn
	}
	if err := os.WriteFile(path, out, 0o600); err != nil {
		t.Fatal(err)
	}
}

// checkPoolConserved fails t unless every channel of r holds free +
// reserved + committed = total.
func checkPoolConserved(t *testing.T, r ledger.Readout, where string) {
	t.Helper()
	if len(r.Channels) != 3 {
		t.Fatalf("%s: the pool has channels %v, want tokens, usd and iterations", where, r.Channels)
	}
	for ch, b := range r.Channels {
		if b.Total != b.Free+b.Reserved+b.Committed {
			t.Fatalf("%s: %s does not conserve: %+v", where, ch, b)
		}
	}
}

// planBrain spawns a writer on each task of plan in turn and awaits its
// settlement, checking after every step that the pool is conserved
// (free + reserved + committed = total); where names the step in a
// failure.
func planBrain(t *testing.T, plan []string, where func(step int) string) supervise.Brain {
	return supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		checkPoolConserved(t, c.Readout(), where(0))
		for i, task := range plan {
			if _, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "writer", Task: task}); err != nil {
				return supervise.BrainReport{}, err
			}
			checkPoolConserved(t, c.Readout(), where(2*i+1))
			if _, err := c.Await(ctx, supervise.AwaitArgs{TimeoutMS: 60_000, Kinds: []string{supervise.EventSettled}}); err != nil {
				return supervise.BrainReport{}, err
			}
			checkPoolConserved(t, c.Readout(), where(2*i+2))
		}
		return supervise.BrainReport{}, nil
	})
}
