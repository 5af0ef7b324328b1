package supervise_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/internal/pgtest"
	"github.com/agentrt/agentrt/journal"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/memory"
	"github.com/agentrt/agentrt/store/postgres"
	"github.com/agentrt/agentrt/store/sqlite"
	"github.com/agentrt/agentrt/supervise"
)

// spawnLogHome is one home of a spawn journal: open opens the one log
// every call of it names (another process's open, as far as ownership
// goes).
type spawnLogHome struct {
	name string
	open func(t *testing.T) (supervise.SpawnLog, error)
	// st is the store of a store home (nil for the file).
	st store.Store
}

const spawnLogRun = "run-contract"

func storeHome(name string, st store.Store) spawnLogHome {
	return spawnLogHome{name: name, st: st, open: func(t *testing.T) (supervise.SpawnLog, error) {
		l, err := supervise.OpenStoreSpawnLog(context.Background(), st, spawnLogRun, supervise.StoreSpawnLogOptions{Owner: "test/" + t.Name()})
		if err != nil {
			return nil, err
		}
		return l, nil
	}}
}

// spawnLogHomes are the file journal and the store journal on memory,
// SQLite and PostgreSQL, each made fresh inside its subtest (PostgreSQL
// needs AGENTRT_TEST_DATABASE_URL, see internal/pgtest; without it only
// that subtest is skipped, or failed under AGENTRT_REQUIRE_POSTGRES=1).
var spawnLogHomes = []struct {
	name string
	make func(t *testing.T) spawnLogHome
}{
	{"file", func(t *testing.T) spawnLogHome {
		dir := t.TempDir()
		return spawnLogHome{name: "file", open: func(*testing.T) (supervise.SpawnLog, error) { return supervise.OpenFileSpawnLog(dir) }}
	}},
	{"memory", func(*testing.T) spawnLogHome { return storeHome("memory", memory.New(nil)) }},
	{"sqlite", func(t *testing.T) spawnLogHome {
		st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "runs.db"), sqlite.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return storeHome("sqlite", st)
	}},
	{"postgres", func(t *testing.T) spawnLogHome {
		st, err := postgres.Open(context.Background(), pgtest.Schema(t), postgres.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return storeHome("postgres", st)
	}},
}

func mustOpen(t *testing.T, h spawnLogHome) supervise.SpawnLog {
	t.Helper()
	l, err := h.open(t)
	if err != nil {
		t.Fatalf("%s: open: %v", h.name, err)
	}
	return l
}

// noData: the contract records carry no note payload (a canonjson.Value
// go-cmp cannot look into).
var noData = cmpopts.IgnoreFields(supervise.Record{}, "Data", "ProfileDoc")

var contractRecords = []supervise.Record{
	{Kind: supervise.KindRunStarted, RunID: spawnLogRun, StartedAtMS: 1_796_000_000_000, Task: "ship"},
	{Kind: supervise.KindSpawned, Node: spawnLogRun + ":s1", Profile: "writer", Task: "write alpha", Reserved: &supervise.BudgetRecord{Tokens: i64(1000)}},
	{Kind: supervise.KindSettled, Node: spawnLogRun + ":s1", State: supervise.StateDone, Spent: &supervise.SpendRecord{Tokens: i64(120)}, OutRef: "sha256:00"},
	{Kind: supervise.KindMetered, Node: spawnLogRun, Spent: &supervise.SpendRecord{Tokens: nil, Iterations: i64(0)}},
}

// The spawn journal contract (§3.6 "Persistence & resume"), over every
// home: what an Append returned for is read back by the next owner, in
// order, with unknown spend still unknown; one owner at a time; a
// closed log is handed over at once.
func TestSpawnLogContract(t *testing.T) {
	ctx := context.Background()
	for _, home := range spawnLogHomes {
		t.Run(home.name, func(t *testing.T) {
			h := home.make(t)
			a := mustOpen(t, h)
			if got, err := a.Records(ctx); err != nil || len(got) != 0 {
				t.Fatalf("a new log holds %v, %v", got, err)
			}
			if err := a.Append(ctx, contractRecords[0]); err != nil {
				t.Fatal(err)
			}
			if err := a.Append(ctx, contractRecords[1:3]...); err != nil {
				t.Fatal(err)
			}

			if b, err := h.open(t); !errors.Is(err, supervise.ErrSpawnLogHeld) {
				if b != nil {
					b.Close()
				}
				t.Fatalf("a second open while the first holds the log: %v, want ErrSpawnLogHeld", err)
			} else if strings.Contains(err.Error(), "lease") && !strings.Contains(err.Error(), "resume again after the lease lapses") {
				t.Errorf("a held lease's refusal %q does not say what to do", err)
			}
			if err := a.Close(); err != nil {
				t.Fatal(err)
			}

			b := mustOpen(t, h)
			got, err := b.Records(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(contractRecords[:3], got, noData); diff != "" {
				t.Errorf("the next owner read (-appended +read):\n%s", diff)
			}
			if err := b.Append(ctx, contractRecords[3]); err != nil {
				t.Fatal(err)
			}
			if err := b.Close(); err != nil {
				t.Fatal(err)
			}
			c := mustOpen(t, h)
			defer c.Close()
			got, err = c.Records(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(contractRecords, got, noData); diff != "" {
				t.Errorf("after two owners (-appended +read):\n%s", diff)
			}
		})
	}
}

// A store journal is owned through the store's lease generation, not a
// local lock: a holder whose lease lapsed (a stalled process) is taken
// over by the next opener, which raises the generation; from then on
// every append of the old holder is refused by the store's fence and
// writes nothing, and its Close does not release the new holder's
// lease.
func TestStoreSpawnLogFencesALapsedHolder(t *testing.T) {
	ctx := context.Background()
	for _, home := range spawnLogHomes {
		if home.name == "file" {
			continue // a file journal cannot lapse: its lock dies with its process
		}
		t.Run(home.name, func(t *testing.T) {
			h := home.make(t)
			old := mustOpen(t, h).(*supervise.StoreSpawnLog)
			if err := old.Append(ctx, contractRecords[0]); err != nil {
				t.Fatal(err)
			}
			// The old holder stalls: its lease runs out.
			lapsed, err := canonjson.ToValue(map[string]int64{supervise.SpawnLogLeaseMember: time.Now().Add(-time.Second).UnixMilli()})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := h.st.UpdateRun(ctx, spawnLogRun, func(r *store.Run) error {
				r.Doc = lapsed
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			next := mustOpen(t, h).(*supervise.StoreSpawnLog)
			defer next.Close()
			if g, o := next.Fence().Generation, old.Fence().Generation; g != o+1 {
				t.Errorf("the takeover holds generation %d, want %d", g, o+1)
			}
			if err := old.Held(); err != nil {
				t.Errorf("Held before the superseded holder learnt of it: %v", err)
			}
			err = old.Append(ctx, contractRecords[1])
			var fe *store.FenceError
			if !errors.As(err, &fe) || fe.Reason != store.FenceSuperseded {
				t.Errorf("the superseded holder's append: %v, want a superseded *store.FenceError", err)
			}
			// What fences the run dir's stream logs: once lost, Held says so.
			if err := old.Held(); !errors.Is(err, store.ErrFenced) {
				t.Errorf("the superseded holder's Held = %v, want ErrFenced", err)
			}
			if err := next.Held(); err != nil {
				t.Errorf("the new holder's Held = %v", err)
			}
			if err := old.Close(); err != nil {
				t.Errorf("closing the superseded holder: %v", err)
			}
			if err := next.Append(ctx, contractRecords[1]); err != nil {
				t.Fatalf("the new holder's append: %v", err)
			}
			if third, err := h.open(t); !errors.Is(err, supervise.ErrSpawnLogHeld) {
				if third != nil {
					third.Close()
				}
				t.Errorf("open after the superseded holder closed: %v, want ErrSpawnLogHeld (the new holder keeps its lease)", err)
			}
			evs, err := h.st.Events(ctx, spawnLogRun, "", 100)
			if err != nil {
				t.Fatal(err)
			}
			if len(evs) != 2 || evs[1].Type != supervise.KindSpawned {
				t.Errorf("the run holds %d events, want the first holder's and the new holder's only", len(evs))
			}
		})
	}
}

// Options are checked before anything is opened.
func TestOpenStoreSpawnLogRefusesBadOptions(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		st    store.Store
		run   string
		lease time.Duration
	}{
		{"no store", nil, "r", 0},
		{"no run id", memory.New(nil), "", 0},
		{"a lease below the minimum", memory.New(nil), "r", time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := supervise.OpenStoreSpawnLog(ctx, tc.st, tc.run, supervise.StoreSpawnLogOptions{LeaseTTL: tc.lease})
			if !errors.Is(err, supervise.ErrInvalidOptions) {
				t.Errorf("err %v, want ErrInvalidOptions", err)
			}
		})
	}
}

// RES-03, behaviour 46 with the spawn journal in SQLite and no run dir:
// a run started again on the same store and run id with Resume replays
// its settled workers without executing them and keeps the winner; and
// without Resume the journal is refused, not overwritten (behaviour 47).
func TestSuperviseResumesFromSQLiteSpawnLogBehaviour46(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "runs.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()

	first := newCounting(t, workerProvider(t))
	o := baseOptions(t, first, sequentialManager())
	o.SpawnStore = st
	want, err := supervise.Supervise(ctx, managerProfile(t, verbs2...), "ship", o)
	if err != nil || want.Status != supervise.StatusWinner {
		t.Fatalf("first run: %v %+v", err, want)
	}

	o = baseOptions(t, newCounting(t, workerProvider(t)), sequentialManager())
	o.SpawnStore = st
	var exists *supervise.RunExistsError
	if _, err := supervise.Supervise(ctx, managerProfile(t, verbs2...), "ship", o); !errors.As(err, &exists) {
		t.Errorf("a second run without Resume: %v, want *RunExistsError", err)
	}

	second := newCounting(t, workerProvider(t))
	o = baseOptions(t, second, sequentialManager())
	o.SpawnStore, o.Resume = st, true
	got, err := supervise.Supervise(ctx, managerProfile(t, verbs2...), "ship", o)
	if err != nil {
		t.Fatal(err)
	}
	if second.count("alpha") != 0 || second.count("beta") != 0 {
		t.Errorf("the resumed run executed alpha %d and beta %d times; want both replayed", second.count("alpha"), second.count("beta"))
	}
	if !got.Resumed || got.Status != supervise.StatusWinner || got.Winner.OutRef != want.Winner.OutRef {
		t.Errorf("resumed %v, %s, winner %+v; want the first run's winner %+v", got.Resumed, got.Status, got.Winner, want.Winner)
	}
	// No run dir on either side (another machine's, say): the winner's
	// output travels with the journal in the store, not in a local file.
	if want.Winner.Text == "" || got.Winner.Text != want.Winner.Text {
		t.Errorf("the resumed winner's text %q, want the first run's %q", got.Winner.Text, want.Winner.Text)
	}
	if diff := cmp.Diff(want.Breakdown.ChildWork, got.Breakdown.ChildWork); diff != "" {
		t.Errorf("child spend (-first +resumed):\n%s", diff)
	}
}

// landsThenFails is a store whose next AppendEvents commits and then
// reports its outcome unknown, as a timeout after the commit does.
type landsThenFails struct {
	store.Store
	armed bool
}

func (s *landsThenFails) AppendEvents(ctx context.Context, f store.Fence, evs []store.NewEvent) ([]store.Event, error) {
	got, err := s.Store.AppendEvents(ctx, f, evs)
	if err == nil && s.armed {
		s.armed = false
		return nil, store.ErrUnknownOutcome
	}
	return got, err
}

// An append whose outcome was unknown but that landed does not poison
// the journal: the next appends take new event ids and land, and the
// reader sees every record once.
func TestStoreSpawnLogAppendAfterUnknownOutcome(t *testing.T) {
	ctx := context.Background()
	st := &landsThenFails{Store: memory.New(time.Now)}
	l, err := supervise.OpenStoreSpawnLog(ctx, st, spawnLogRun, supervise.StoreSpawnLogOptions{Owner: "test"})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := l.Append(ctx, contractRecords[0]); err != nil {
		t.Fatal(err)
	}
	st.armed = true
	if err := l.Append(ctx, contractRecords[1]); !errors.Is(err, store.ErrUnknownOutcome) {
		t.Fatalf("append with an unknown outcome: %v, want store.ErrUnknownOutcome", err)
	}
	for _, r := range contractRecords[2:] {
		if err := l.Append(ctx, r); err != nil {
			t.Fatalf("append after an unknown outcome: %v", err)
		}
	}
	got, _, err := supervise.ReadStoreSpawnLog(ctx, st, spawnLogRun, "")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(contractRecords, got, noData); diff != "" {
		t.Errorf("records (-want +got):\n%s", diff)
	}
}

// writeCounting counts a store's writes.
type writeCounting struct {
	store.Store
	writes atomic.Int64
}

func (s *writeCounting) CreateRun(ctx context.Context, r store.Run) (store.Run, error) {
	s.writes.Add(1)
	return s.Store.CreateRun(ctx, r)
}

func (s *writeCounting) UpdateRun(ctx context.Context, id string, fn func(*store.Run) error) (store.Run, error) {
	s.writes.Add(1)
	return s.Store.UpdateRun(ctx, id, fn)
}

func (s *writeCounting) UpdateFenced(ctx context.Context, f store.Fence, fn func(*store.Run) error) (store.Run, error) {
	s.writes.Add(1)
	return s.Store.UpdateFenced(ctx, f, fn)
}

// A store-journaled run whose run dir another process on this host still
// holds (a paused supervisor keeps its files' locks) is refused before
// the store is touched: taking the run over first fenced the holder out
// and then failed on the run dir, leaving the run to nobody.
func TestStoreJournaledRunDirHeldTakesNothingOver(t *testing.T) {
	dir := t.TempDir()
	held, err := journal.Open(filepath.Join(dir, supervise.CoordinationLogFile), journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	st := &writeCounting{Store: memory.New(time.Now)}
	o := supervise.Options{Budget: ledger.Budget{Tokens: i64(100), Iterations: i64(1)}, RunDir: dir, RunID: "held", SpawnStore: st,
		Brain: supervise.BrainFunc(func(context.Context, *supervise.Coordinator, string) (supervise.BrainReport, error) {
			return supervise.BrainReport{}, nil
		})}
	if _, err := supervise.Supervise(context.Background(), &profile.Profile{Name: new("m")}, "t", o); err == nil {
		t.Fatal("Supervise succeeded on a run dir another holder has")
	}
	if n := st.writes.Load(); n != 0 {
		t.Errorf("%d store writes; want none before the run dir is this process's", n)
	}
}
