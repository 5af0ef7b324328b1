package supervise_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/supervise"
)

// §3.6 Durability (RES-03, behaviour 46): a settlement the journal
// refused because this process no longer holds the run is not shown to
// the manager. The lease the run is driven under (Options.Held) is lost
// while a worker runs; the worker then settles, its record is refused,
// and the brain's await_event answers stopped, saying why — never the
// settlement, which the run's next holder will execute again.
func TestNoSettlementHeardAfterTheJournalIsLost(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	manager, err := processManager()
	if err != nil {
		t.Fatal(err)
	}
	var lost atomic.Bool
	gate := make(chan struct{})
	var heard supervise.AwaitResult
	var awaitErr error
	brain := supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		if _, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "writer", Task: "write alpha"}); err != nil {
			return supervise.BrainReport{}, err
		}
		lost.Store(true) // the caller's lease ran out while the worker runs
		close(gate)
		heard, awaitErr = c.Await(ctx, supervise.AwaitArgs{TimeoutMS: 20_000, Kinds: []string{supervise.EventSettled}})
		return supervise.BrainReport{}, nil
	})
	o, err := processOptions(&heldExecutor{inner: newCounting(t, workerProvider(t)), gate: gate}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	o.Brain, o.Resume = brain, false
	o.Held = func() error {
		if lost.Load() {
			return fmt.Errorf("the test's lease: %w", contract.ErrLeaseLost)
		}
		return nil
	}
	res, err := supervise.Supervise(ctx, manager, "t", o)
	if !errors.Is(err, supervise.ErrSpawnLogLost) {
		t.Errorf("Supervise = %v, want ErrSpawnLogLost", err)
	}
	if res.Winner != nil {
		t.Errorf("a winner delivered after the journal was lost: %+v", res.Winner)
	}
	if awaitErr != nil {
		t.Fatalf("await_event: %v", awaitErr)
	}
	if heard.Event != nil {
		t.Fatalf("the manager heard a settlement whose record the lost journal refused: %+v", *heard.Event)
	}
	if !heard.Stopped || heard.Reason == "" {
		t.Errorf("await_event after the loss = %+v, want stopped with a reason", heard)
	}
}
