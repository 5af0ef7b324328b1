package supervise_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/supervise"
)

// Behaviour 46 over §3.6 Durability ("the verb fails and nothing
// happened"): a spawn whose record the journal refused consumed its
// sequence number, and Scope.forget gives it back only when no spawn
// came after it. A journal whose spawn records skip a number — here
// run1:s2's records are gone, as when a refused spawn was not the
// newest — still resumes: the replay takes each worker's id from the
// journal. Before, the resume failed "replayed spawn got id run1:s2,
// journal says run1:s3".
func TestResumeReplaysAJournalWithASpawnSeqGap(t *testing.T) {
	tasks := []string{"write alpha", "write beta", "write slow gamma"}
	brain := supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		if c.Reentry().Resumed {
			return supervise.BrainReport{}, nil
		}
		for _, task := range tasks {
			if _, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "writer", Task: task}); err != nil {
				return supervise.BrainReport{}, err
			}
			if ev, err := c.Await(ctx, supervise.AwaitArgs{TimeoutMS: 60_000, Kinds: []string{supervise.EventSettled}}); err != nil || ev.Event == nil {
				return supervise.BrainReport{}, fmt.Errorf("await after %q: %+v, %v", task, ev, err)
			}
		}
		return supervise.BrainReport{}, nil
	})
	dir := t.TempDir()
	o := baseOptions(t, newCounting(t, workerProvider(t)), nil)
	o.RunDir, o.Brain = dir, brain
	if _, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "ship", o); err != nil {
		t.Fatal(err)
	}
	// Keep the journal up to gamma's settlement, without beta's records.
	path := filepath.Join(dir, supervise.SpawnJournalFile)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var kept [][]byte
	for line := range bytes.Lines(data) {
		if bytes.Contains(line, []byte(`"run1:s2"`)) {
			continue
		}
		kept = append(kept, line)
		if bytes.Contains(line, []byte(`"kind":"settled"`)) && bytes.Contains(line, []byte(`"run1:s3"`)) {
			break
		}
	}
	if err := os.WriteFile(path, bytes.Join(kept, nil), 0o600); err != nil {
		t.Fatal(err)
	}
	again := newCounting(t, workerProvider(t))
	o = baseOptions(t, again, nil)
	o.RunDir, o.Resume, o.Brain = dir, true, brain
	res, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "ship", o)
	var re *supervise.ResumeError
	if errors.As(err, &re) {
		t.Fatalf("the resume refused a journal with a seq gap: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, w := range res.Tree {
		ids = append(ids, string(w.ID))
	}
	if got := strings.Join(ids, " "); got != "run1:s1 run1:s3" {
		t.Errorf("resumed tree %s; want run1:s1 run1:s3, the journal's ids", got)
	}
	if again.count("alpha")+again.count("slow") != 0 {
		t.Errorf("the resume ran a journaled worker again")
	}
}
