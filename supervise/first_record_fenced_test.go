package supervise_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/memory"
	"github.com/agentrt/agentrt/supervise"
)

// fencedAppends is a store whose every event append is refused by the
// fence: another process took the run over between this one's claim
// and its first record.
type fencedAppends struct{ store.Store }

func (s fencedAppends) AppendEvents(_ context.Context, f store.Fence, _ []store.NewEvent) ([]store.Event, error) {
	return nil, &store.FenceError{RunID: f.RunID, Generation: f.Generation, Current: f.Generation + 1,
		Reason: store.FenceSuperseded, Status: store.StatusRunning}
}

// A run whose journal is taken over before its run-started record lands
// was never this process's: Supervise returns ErrSpawnLogLost, as for a
// loss later in the run, so its caller says the run is another's (not
// a bare journal failure), and no worker runs. §9, behaviour 46.
func TestSuperviseFirstRecordFencedIsLost(t *testing.T) {
	manager, err := processManager()
	if err != nil {
		t.Fatal(err)
	}
	ran := 0
	exec := supervise.ExecutorFunc(func(context.Context, supervise.Work) (supervise.WorkResult, error) {
		ran++
		return supervise.WorkResult{}, errors.New("no worker may run")
	})
	o, err := processOptions(exec, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	o.SpawnStore, o.SpawnLeaseTTL = fencedAppends{memory.New(time.Now)}, time.Minute
	_, err = supervise.Supervise(context.Background(), manager, "t", o)
	if !errors.Is(err, supervise.ErrSpawnLogLost) || !errors.Is(err, store.ErrFenced) {
		t.Fatalf("Supervise = %v, want ErrSpawnLogLost with the fence's refusal", err)
	}
	if ran != 0 {
		t.Errorf("%d workers ran for a run this process never held", ran)
	}
}
