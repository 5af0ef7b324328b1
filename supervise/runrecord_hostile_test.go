package supervise_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/memory"
	"github.com/agentrt/agentrt/store/sqlite"
	"github.com/agentrt/agentrt/supervise"
)

// silentAtRecord is a store that stops answering when the run's record
// is written: its CreateRun of a KindSupervise run waits until its
// caller gives up.
type silentAtRecord struct {
	store.Store
}

func (s silentAtRecord) CreateRun(ctx context.Context, r store.Run) (store.Run, error) {
	if r.Kind == supervise.KindSupervise {
		<-ctx.Done()
		return store.Run{}, ctx.Err()
	}
	return s.Store.CreateRun(ctx, r)
}

// A store that stops answering at the record write leaves the result
// standing: Supervise returns it, beside ErrRunNotRecorded, within the
// record write's bound (kernel.DefaultLeaseTTL) and not later.
func TestAStoreSilentAtTheRecordIsBounded(t *testing.T) {
	manager, err := processManager()
	if err != nil {
		t.Fatal(err)
	}
	o, _ := recordOptions(t, memory.New(nil), t.TempDir())
	o.Store = silentAtRecord{memory.New(nil)}
	start := time.Now()
	res, err := supervise.Supervise(context.Background(), manager, "write the notes", o)
	took := time.Since(start)
	if res.Status != supervise.StatusWinner || !errors.Is(err, supervise.ErrRunNotRecorded) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("run: %s, err %v; want a winner beside ErrRunNotRecorded naming the deadline", res.Status, err)
	}
	if took > 30*time.Second {
		t.Errorf("Supervise returned after %v, want within the record write's bound", took)
	}
	t.Logf("returned after %v: %v", took, err)
}

// A tree of 1,000 workers, each answering a long text its check
// refuses, is recorded in a SQLite store: the record's size is
// linear in the workers and bounded per worker, and its write is
// measured.
func TestAThousandWorkerRecord(t *testing.T) {
	if testing.Short() {
		t.Skip("a 1,000-worker run")
	}
	const n = 1000
	long := strings.Repeat("the endpoint said no; ", 1000) // ~22 KB
	exec := supervise.ExecutorFunc(func(context.Context, supervise.Work) (supervise.WorkResult, error) {
		return supervise.WorkResult{Text: long, Spent: fullSpend(1)}, nil
	})
	writer, err := profile.Parse([]byte(writerProfile))
	if err != nil {
		t.Fatal(err)
	}
	manager, err := profile.Parse([]byte(`{"name": "m", "harness": "cli-base", "tools": {"agent_runtime_coordination_spawn_worker": true}}`))
	if err != nil {
		t.Fatal(err)
	}
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "runs.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	o := supervise.Options{Budget: ledger.Budget{Tokens: i64(1 << 40), Iterations: i64(1 << 40), MicroUSD: i64(1 << 40)},
		PerWorker: worker, Profiles: map[string]*profile.Profile{"writer": writer}, Deliverable: doneCheck, Executor: exec,
		Store: st, RunID: "big"}
	var brainDone time.Time
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		for i := range n {
			if _, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "writer", Task: "t", Label: fmt.Sprint("w", i)}); err != nil {
				return supervise.BrainReport{}, err
			}
		}
		for {
			r, err := c.Await(ctx, supervise.AwaitArgs{TimeoutMS: 60_000})
			if err != nil {
				return supervise.BrainReport{}, err
			}
			if r.Idle {
				break
			}
		}
		brainDone = time.Now()
		return supervise.BrainReport{}, nil
	})
	res, err := supervise.Supervise(context.Background(), manager, "t", o)
	if err != nil {
		t.Fatal(err)
	}
	after := time.Since(brainDone)
	run, err := st.GetRun(context.Background(), "big")
	if err != nil {
		t.Fatal(err)
	}
	size := len(canonjson.Marshal(run.Doc))
	rec, err := supervise.RunRecordOf(run)
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Workers) != n || len(res.Tree) != n {
		t.Fatalf("%d recorded workers, %d in the result, want %d", len(rec.Workers), len(res.Tree), n)
	}
	// Each worker: its identity, label, reason and check error clipped
	// to MaxReasonBytes, a verdict and an execution.
	if per := size / n; per > 3*supervise.MaxReasonBytes {
		t.Errorf("the record is %d bytes, %d per worker: more than its clipped reasons", size, per)
	}
	t.Logf("record of %d workers: %d bytes (%d per worker); brain return to Supervise return %v", n, size, size/n, after)
}
