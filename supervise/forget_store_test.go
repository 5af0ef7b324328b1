package supervise_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/sqlite"
	"github.com/agentrt/agentrt/supervise"
)

// landsUnknown is a real store whose append of a record mentioning word
// lands and is then reported with an unknown outcome (store.ErrUnknownOutcome:
// the acknowledgement of a commit was lost, a timeout after the store
// committed) — once.
type landsUnknown struct {
	store.Store
	word  string
	fired bool
}

func (s *landsUnknown) AppendEvents(ctx context.Context, f store.Fence, evs []store.NewEvent) ([]store.Event, error) {
	got, err := s.Store.AppendEvents(ctx, f, evs)
	if err != nil || s.fired {
		return got, err
	}
	for _, e := range evs {
		if strings.Contains(string(canonjson.Marshal(e.Body)), s.word) {
			s.fired = true
			return nil, fmt.Errorf("append: %w", store.ErrUnknownOutcome)
		}
	}
	return got, nil
}

// §3.6 Durability with the spawn journal in SQL (RES-03): a spawn whose
// record append ends with an unknown outcome fails the verb (its worker
// never starts), but the record may have landed. Giving its node id back
// (Scope.forget) would then hand the same id to the next spawn: the
// journal would hold two spawns of one node, and a resume could not
// tell them apart. Every spawn the journal holds has its own node id,
// and a resume of the ended run returns its result.
func TestSpawnOfUnknownOutcomeKeepsItsNodeID(t *testing.T) {
	for _, key := range []string{"", "k-1"} {
		t.Run(fmt.Sprintf("key=%q", key), func(t *testing.T) { unknownOutcomeSpawn(t, key) })
	}
}

// unknownOutcomeSpawn is TestSpawnOfUnknownOutcomeKeepsItsNodeID with
// extra and beta spawned under key.
func unknownOutcomeSpawn(t *testing.T, key string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "runs.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	manager, err := processManager()
	if err != nil {
		t.Fatal(err)
	}
	brain := supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		for _, task := range []string{"write alpha", "write extra", "write beta"} {
			a := supervise.SpawnArgs{Profile: "writer", Task: task}
			if task != "write alpha" {
				a.Key = key
			}
			if _, err := c.Spawn(ctx, a); err != nil {
				if task == "write extra" {
					continue // its record's outcome is unknown: the verb failed
				}
				return supervise.BrainReport{}, err
			}
			if _, err := c.Await(ctx, supervise.AwaitArgs{TimeoutMS: 60_000, Kinds: []string{supervise.EventSettled}}); err != nil {
				return supervise.BrainReport{}, err
			}
		}
		return supervise.BrainReport{}, nil
	})
	run := func(s store.Store) (supervise.SupervisedResult, *countingExecutor, error) {
		exec := newCounting(t, workerProvider(t))
		o, err := processOptions(exec, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		o.Brain, o.SpawnStore, o.SpawnLeaseTTL = brain, s, storeKillLease
		res, err := supervise.Supervise(ctx, manager, "t", o)
		return res, exec, err
	}
	first, _, err := run(&landsUnknown{Store: st, word: "write extra"})
	if err != nil {
		t.Fatalf("first run: %v", err)
	}
	for _, w := range first.Tree {
		if w.ID == "run1:s2" { // write extra
			if !w.InDoubt || !strings.Contains(w.InDoubtReason, "unknown") {
				t.Errorf("the spawn of unknown outcome reads in doubt %v, reason %q; want in doubt, saying why", w.InDoubt, w.InDoubtReason)
			}
		}
	}
	recs, err := readWholeStoreJournal(ctx, st, "run1")
	if err != nil {
		t.Fatal(err)
	}
	spawned := map[supervise.NodeID][]string{}
	for _, r := range recs {
		if r.Kind == supervise.KindSpawned {
			spawned[r.Node] = append(spawned[r.Node], r.Task)
		}
	}
	for id, tasks := range spawned {
		if len(tasks) > 1 {
			t.Errorf("the journal holds %d spawns of node %s: %q", len(tasks), id, tasks)
		}
	}
	again, exec, err := run(st)
	if err != nil {
		t.Fatalf("resume of the ended run: %v", err)
	}
	if exec.count("alpha")+exec.count("beta") != 0 {
		t.Errorf("the resume of an ended run executed alpha %d, beta %d times", exec.count("alpha"), exec.count("beta"))
	}
	if again.Status != first.Status || (first.Winner == nil) != (again.Winner == nil) ||
		(first.Winner != nil && (again.Winner.Node != first.Winner.Node || again.Winner.OutRef != first.Winner.OutRef)) {
		t.Errorf("resumed %s %+v, first %s %+v", again.Status, again.Winner, first.Status, first.Winner)
	}
}
