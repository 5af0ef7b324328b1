package supervise_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/sqlite"
	"github.com/agentrt/agentrt/supervise"
)

// failOnAppend is a real SQLite store whose event appends fail with err
// while their first event is of kind (times of them; <0: every one):
// a journal that stops taking records of one kind and then answers
// again.
type failOnAppend struct {
	store.Store
	kind  string
	err   error
	times atomic.Int64
	hits  atomic.Int64
}

func (s *failOnAppend) AppendEvents(ctx context.Context, f store.Fence, events []store.NewEvent) ([]store.Event, error) {
	if len(events) > 0 && events[0].Type == s.kind && s.times.Add(-1) >= 0 {
		s.hits.Add(1)
		return nil, s.err
	}
	return s.Store.AppendEvents(ctx, f, events)
}

func openSQLite(t *testing.T) store.Store {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "runs.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// storeOptions runs the alpha pipeline with its journal in st.
func storeOptions(t *testing.T, st store.Store, obs supervise.Observer) supervise.Options {
	t.Helper()
	o, err := processOptions(newCounting(t, workerProvider(t)), "")
	if err != nil {
		t.Fatal(err)
	}
	o.Brain, o.SpawnStore, o.SpawnLeaseTTL, o.Observer = pipeline("write alpha"), st, kernel.MinLeaseTTL, obs
	return o
}

func (o *recordingObserver) count(hook string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := 0
	for _, h := range o.hooks {
		if h == hook {
			n++
		}
	}
	return n
}

// §10 supervisor hooks: every return of Supervise after the observer saw
// the run start tells it the run ended, exactly once — also where
// Supervise returns ErrSpawnLogLost (the journal fenced mid-run, so the
// lease check before delivery fails; or fenced at the finished record)
// or a result beside ErrOutcomeNotJournaled.
func TestObserverSeesRunEndedOnEveryReturn(t *testing.T) {
	manager, err := processManager()
	if err != nil {
		t.Fatal(err)
	}
	fenced := fmt.Errorf("the lease moved on: %w", store.ErrFenced)
	cases := []struct {
		name    string
		kind    string
		err     error
		wantErr error
		winner  bool
	}{
		{"fenced at a settlement", supervise.KindSettled, fenced, supervise.ErrSpawnLogLost, false},
		{"fenced at the finished record", supervise.KindFinished, fenced, supervise.ErrSpawnLogLost, false},
		{"finished record not taken", supervise.KindFinished, errors.New("disk full"), supervise.ErrOutcomeNotJournaled, true},
		{"settlement not taken", supervise.KindSettled, errors.New("disk full"), supervise.ErrJournalIncomplete, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			st := &failOnAppend{Store: openSQLite(t), kind: tc.kind, err: tc.err}
			st.times.Store(1)
			obs := &recordingObserver{}
			res, err := supervise.Supervise(ctx, manager, "t", storeOptions(t, st, obs))
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err %v, want %v", err, tc.wantErr)
			}
			if st.hits.Load() != 1 {
				t.Fatalf("the store failed %d appends, want 1", st.hits.Load())
			}
			if got := res.Status == supervise.StatusWinner; got != tc.winner {
				t.Errorf("result %s, winner %v; want winner %v", res.Status, got, tc.winner)
			}
			if n, m := obs.count("run-started"), obs.count("run-ended"); n != 1 || m != 1 {
				t.Errorf("the observer saw run-started %d and run-ended %d times, want 1 and 1 (hooks %v)", n, m, obs.hooks)
			}
			if last := obs.hooks[len(obs.hooks)-1]; last != "run-ended" {
				t.Errorf("the last hook is %s, want run-ended", last)
			}
		})
	}
}

// §3.6 "Persistence & resume" and §6 "Restore", behaviour 46: a run
// whose journal failed to take the settlement of its winning worker (the
// store stopped answering for that one append, then answered again)
// returns its winner — the worker was delivered — together with a
// *JournalLossError naming the lost settled record, never a silent
// success. The finished record carries the loss, so a resume with
// ReturnEnded returns the same winner and the same loss.
func TestLostSettlementReportedBesideTheWinnerBehaviour46(t *testing.T) {
	manager, err := processManager()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	st := &failOnAppend{Store: openSQLite(t), kind: supervise.KindSettled, err: errors.New("the store did not answer")}
	st.times.Store(1)
	o := storeOptions(t, st, nil)
	o.ReturnEnded = true
	res, err := supervise.Supervise(ctx, manager, "t", o)
	var loss *supervise.JournalLossError
	if !errors.As(err, &loss) || !errors.Is(err, supervise.ErrJournalIncomplete) {
		t.Fatalf("err %v, want a *JournalLossError", err)
	}
	want := []supervise.LostRecord{{Kind: supervise.KindSettled, Node: "run1:s1"}}
	if diff := cmp.Diff(want, loss.Lost); diff != "" || loss.Count != 1 || loss.Err == nil {
		t.Errorf("loss count %d err %v, lost (-want +got):\n%s", loss.Count, loss.Err, diff)
	}
	if res.Status != supervise.StatusWinner || res.Winner == nil || res.Winner.Node != "run1:s1" {
		t.Fatalf("result %s %+v, want alpha (run1:s1) the winner", res.Status, res.Winner)
	}

	// The journal has the finished record but no settlement: a resume
	// returns the recorded result and says the journal is incomplete.
	kinds := journalKinds(t, ctx, st.Store)
	if slices.Contains(kinds, supervise.KindSettled) || !slices.Contains(kinds, supervise.KindFinished) {
		t.Fatalf("journal kinds %v, want a finished record and no settled one", kinds)
	}
	o = storeOptions(t, st.Store, nil)
	o.ReturnEnded, o.Resume = true, true
	brain := &countingBrain{inner: pipeline("write alpha")}
	o.Brain = brain
	again, err := supervise.Supervise(ctx, manager, "t", o)
	var again2 *supervise.JournalLossError
	if !errors.As(err, &again2) || again2.Count != 1 || !cmp.Equal(again2.Lost, want) {
		t.Errorf("resume err %v, want the same loss", err)
	}
	if brain.drives.Load() != 0 {
		t.Errorf("the resume drove the brain %d times, want 0", brain.drives.Load())
	}
	if again.Winner == nil || again.Winner.OutRef != res.Winner.OutRef {
		t.Errorf("resumed winner %+v, want %+v", again.Winner, res.Winner)
	}
}

// journalKinds lists the kinds of run1's journal in st.
func journalKinds(t *testing.T, ctx context.Context, st store.Store) []string {
	t.Helper()
	evs, err := st.Events(ctx, "run1", "", 10_000)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range evs {
		out = append(out, e.Type)
	}
	return out
}
