package supervise_test

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/sqlite"
	"github.com/agentrt/agentrt/supervise"
)

// holdSettlement is a real store that holds the append of the first
// settlement record until release is closed, telling held when it does.
type holdSettlement struct {
	store.Store
	held, release chan struct{}
	once          sync.Once
}

func (s *holdSettlement) AppendEvents(ctx context.Context, f store.Fence, evs []store.NewEvent) ([]store.Event, error) {
	if len(evs) > 0 && evs[0].Type == supervise.KindSettled {
		first := false
		s.once.Do(func() { first = true })
		if first {
			close(s.held)
			select {
			case <-s.release:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
	}
	return s.Store.AppendEvents(ctx, f, evs)
}

// §9 stop racing a settlement (RES-03, behaviour 46), with the spawn
// journal in SQLite: the run is stopped while alpha's settlement is
// being appended, and the append lands as the stop is called ("raced")
// or never answers until its bound ("timed-out"). The run ends in
// bounded time; a settlement shown delivered is durable or named lost
// (JournalLossError), and a resume of the ended run (ReturnEnded)
// returns the same result, its loss included, without running anything
// again.
func TestStopRacingAStoreJournaledSettlement(t *testing.T) {
	for _, mode := range []string{"raced", "timed-out"} {
		t.Run(mode, func(t *testing.T) { stopRacingSettlement(t, mode == "raced") })
	}
}

func stopRacingSettlement(t *testing.T, raced bool) {
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
	hold := &holdSettlement{Store: st, held: make(chan struct{}), release: make(chan struct{})}
	stopped := make(chan struct{})
	var stopOnce sync.Once
	brain := supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		if _, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "writer", Task: "write alpha"}); err != nil {
			return supervise.BrainReport{}, err
		}
		select {
		case <-hold.held:
		case <-ctx.Done():
			return supervise.BrainReport{}, ctx.Err()
		}
		// Stop is called while the settlement's append is in flight;
		// the append is let go as it is called, so either may land
		// first.
		stopOnce.Do(func() { close(stopped) })
		_, err := c.Stop(supervise.StopArgs{Reason: "enough"})
		return supervise.BrainReport{}, err
	})
	go func() {
		if raced {
			select {
			case <-stopped:
			case <-ctx.Done():
			}
		} else {
			<-ctx.Done() // the append's own bound ends it
		}
		close(hold.release)
	}()
	exec := newCounting(t, workerProvider(t))
	o, err := processOptions(exec, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	o.Brain, o.SpawnStore, o.SpawnLeaseTTL = brain, hold, storeKillLease
	start := time.Now()
	first, err := supervise.Supervise(ctx, manager, "t", o)
	took := time.Since(start)
	if err != nil && !errors.Is(err, supervise.ErrJournalIncomplete) {
		t.Fatalf("stopped run: %v", err)
	}
	if took > time.Minute {
		t.Errorf("the stopped run took %v", took)
	}
	recs, rerr := readWholeStoreJournal(ctx, st, "run1")
	if rerr != nil {
		t.Fatal(rerr)
	}
	durable := false
	for _, r := range recs {
		durable = durable || (r.Kind == supervise.KindSettled && r.Node == "run1:s1")
	}
	if len(first.Tree) != 1 {
		t.Fatalf("tree %+v, want alpha", first.Tree)
	}
	var loss *supervise.JournalLossError
	if a := first.Tree[0]; (a.Delivered || first.Winner != nil) && !durable && !errors.As(err, &loss) {
		t.Errorf("alpha shown delivered (%v, winner %+v) but its settlement is not in the journal, and the run does not say it lost it: %v", a.Delivered, first.Winner, err)
	}
	t.Logf("stopped run after %v: %s %s, alpha %s delivered=%v durable=%v, err %v", took.Round(time.Millisecond), first.Status, first.Reason, first.Tree[0].State, first.Tree[0].Delivered, durable, err)

	again := newCounting(t, workerProvider(t))
	o2, err := processOptions(again, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	o2.Brain, o2.SpawnStore, o2.SpawnLeaseTTL, o2.ReturnEnded = brain, st, storeKillLease, true
	res, err := supervise.Supervise(ctx, manager, "t", o2)
	if err != nil && !errors.Is(err, supervise.ErrJournalIncomplete) {
		t.Fatalf("resume: %v", err)
	}
	if again.count("alpha") != 0 {
		t.Errorf("the resume of the ended run ran alpha %d times", again.count("alpha"))
	}
	if !durable && !errors.As(err, &loss) {
		t.Errorf("the resume does not report the stopped run's lost settlement again: %v", err)
	}
	if res.Status != first.Status || res.Reason != first.Reason || (res.Winner == nil) != (first.Winner == nil) ||
		(res.Winner != nil && res.Winner.OutRef != first.Winner.OutRef) {
		t.Errorf("resumed %s %s winner %+v; the stopped run was %s %s winner %+v", res.Status, res.Reason, res.Winner, first.Status, first.Reason, first.Winner)
	}
}
