package supervise_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/sqlite"
	"github.com/agentrt/agentrt/supervise"
)

// refuseWord is a real store that refuses, with nothing written, every
// append of a record mentioning word (a constraint, a full disk).
type refuseWord struct {
	store.Store
	word string
}

func (s *refuseWord) AppendEvents(ctx context.Context, f store.Fence, evs []store.NewEvent) ([]store.Event, error) {
	for _, e := range evs {
		if strings.Contains(string(canonjson.Marshal(e.Body)), s.word) {
			return nil, errors.New("refused: no space left on device")
		}
	}
	return s.Store.AppendEvents(ctx, f, evs)
}

// §3.6 Durability under a nested manager, with the spawn journal in
// SQLite: a lead's keyed spawn whose record the journal refuses fails
// the verb, and Scope.forget takes it out of the tree, the key registry
// and the lead's carved pool. The lead then spawns another worker under
// the same key. The run, and a resume of it driven again over its
// journal, have the tree, the keys and the pool of a run that never
// asked for the refused spawn.
func TestRefusedNestedSpawnLeavesNoTraceAcrossResume(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	manager, err := processManager()
	if err != nil {
		t.Fatal(err)
	}
	var refused atomic.Int64
	run := func(st store.Store, extra, resume bool) (supervise.SupervisedResult, ledger.Readout, error) {
		var readout ledger.Readout
		lead := nestedLeadBrain(func(ctx context.Context, c *supervise.Coordinator) error {
			for _, a := range []supervise.SpawnArgs{
				{Profile: "writer", Task: "write alpha"},
				{Profile: "writer", Task: "write extra", Key: "w-1"},
				{Profile: "writer", Task: "write beta", Key: "w-1"},
			} {
				if a.Task == "write extra" && !extra {
					continue
				}
				if _, err := c.Spawn(ctx, a); err != nil {
					if a.Task == "write extra" {
						refused.Add(1)
						continue // the journal refused its record
					}
					return fmt.Errorf("spawning %q: %w", a.Task, err)
				}
				if r, err := c.Await(ctx, supervise.AwaitArgs{TimeoutMS: 60_000, Kinds: []string{supervise.EventSettled}}); err != nil || r.Event == nil {
					return errors.Join(err, errors.New("no settlement"))
				}
			}
			return nil
		})
		o, err := nestedKillOptions(newCounting(t, workerProvider(t)), lead, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		root := o.Brain
		o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, task string) (supervise.BrainReport, error) {
			defer func() { readout = c.Readout() }()
			return root.Drive(ctx, c, task)
		})
		o.SpawnStore, o.SpawnLeaseTTL, o.Resume = &refuseWord{Store: st, word: "write extra"}, storeKillLease, resume
		res, err := supervise.Supervise(ctx, manager, "t", o)
		return res, readout, err
	}
	open := func() store.Store {
		st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "runs.db"), sqlite.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}
	want, wantPool, err := run(open(), false, false)
	if err != nil || want.Winner == nil {
		t.Fatalf("the run without the refused spawn: %v %+v", err, want)
	}
	st := open()
	got, gotPool, err := run(st, true, false)
	if err != nil {
		t.Fatalf("the run with the refused spawn: %v", err)
	}
	resumed, resumedPool, err := run(st, true, true)
	if err != nil {
		t.Fatalf("its resume: %v", err)
	}
	// The resume replays the settled lead (its keyed spawn resumed
	// completed) rather than drive it again: the refusal is the run's.
	if n := refused.Load(); n != 1 {
		t.Fatalf("the extra spawn was refused %d times; want once, in the run", n)
	}
	for _, c := range []struct {
		name string
		res  supervise.SupervisedResult
		pool ledger.Readout
	}{{"the run", got, gotPool}, {"its resume", resumed, resumedPool}} {
		if a, b := treeShape(c.res), treeShape(want); a != b {
			t.Errorf("%s's tree:\n%s\nwant (never refused):\n%s", c.name, a, b)
		}
		if c.res.Winner == nil || c.res.Winner.Node != want.Winner.Node || c.res.Winner.OutRef != want.Winner.OutRef {
			t.Errorf("%s's winner %+v, want %+v", c.name, c.res.Winner, want.Winner)
		}
		if err := c.pool.Conserved(); err != nil {
			t.Errorf("%s's pool: %v", c.name, err)
		}
		for _, ch := range []string{ledger.ChannelTokens, ledger.ChannelIterations} {
			if a, b := c.pool.Channels[ch], wantPool.Channels[ch]; a != b {
				t.Errorf("%s's pool %s %+v, want (never refused) %+v", c.name, ch, a, b)
			}
		}
	}
}

// nestedLeadBrain is a nested manager's brain running body, then
// answering DONE.
func nestedLeadBrain(body func(ctx context.Context, c *supervise.Coordinator) error) supervise.Brain {
	return goLead(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		if err := body(ctx, c); err != nil {
			return supervise.BrainReport{}, err
		}
		return supervise.BrainReport{Text: "lead DONE"}, nil
	})
}

// treeShape is res's tree as id, parent, profile, key and state, one
// node a line.
func treeShape(res supervise.SupervisedResult) string {
	var b strings.Builder
	for _, n := range res.Tree {
		fmt.Fprintf(&b, "%s parent=%s %s key=%q %s\n", n.ID, n.Parent, n.Profile, n.Key, n.State)
	}
	return b.String()
}
