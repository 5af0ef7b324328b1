package supervise_test

import (
	"context"
	"errors"
	"iter"
	"sync"
	"testing"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/memory"
	"github.com/agentrt/agentrt/supervise"
)

// leftTurnProvider is a worker provider whose turns run until their
// context ends. It records what a provider whose work outlives its
// caller (providers/remote) acts on: the cause each turn's context
// ended with — one that does not match contract.ErrLeaseLost is a
// caller leaving on purpose, and the turn is cancelled on the server —
// and each Destroy of an environment, which ends its turn as surely.
type leftTurnProvider struct {
	contract.Provider
	started   chan struct{}
	startOnce sync.Once

	mu        sync.Mutex
	causes    []error
	destroyed int
}

func (p *leftTurnProvider) Create(ctx context.Context, in *contract.CreateInput) (contract.Environment, error) {
	env, err := p.Provider.Create(ctx, in)
	if err != nil {
		return nil, err
	}
	return &leftTurnEnv{Environment: env, p: p}, nil
}

type leftTurnEnv struct {
	contract.Environment
	p *leftTurnProvider
}

func (e *leftTurnEnv) Stream(ctx context.Context, _ *contract.TurnInput) iter.Seq2[contract.EnvironmentEvent, error] {
	return func(yield func(contract.EnvironmentEvent, error) bool) {
		e.p.startOnce.Do(func() { close(e.p.started) })
		<-ctx.Done()
		e.p.mu.Lock()
		e.p.causes = append(e.p.causes, context.Cause(ctx))
		e.p.mu.Unlock()
		yield(contract.EnvironmentEvent{}, context.Cause(ctx))
	}
}

func (e *leftTurnEnv) Destroy(ctx context.Context) error {
	e.p.mu.Lock()
	e.p.destroyed++
	e.p.mu.Unlock()
	return e.Environment.Destroy(ctx)
}

// A supervisor whose store spawn journal is taken over while a worker's
// turn runs (issue 13; RES-01, RES-06) no longer owns the run: its
// successor may be recovering that very execution (KindExecutionBound,
// recoverInDoubt). So the worker is cut with a cause that matches
// contract.ErrLeaseLost as well as ErrSpawnLogLost: its provider leaves
// the turn running instead of cancelling it, the worker's environment
// is not destroyed, and its kernel run is recorded interrupted — what
// the kernel records when its own lease is lost — never cancelled,
// which a successor's recovery would settle as the work's end.
func TestWorkerOfALostStoreJournalIsLeftToTheNextHolder(t *testing.T) {
	manager, err := processManager()
	if err != nil {
		t.Fatal(err)
	}
	journal, runs := memory.New(nil), memory.New(nil)
	p := &leftTurnProvider{Provider: workerProvider(t), started: make(chan struct{})}
	o, err := processOptions(&supervise.KernelExecutor{Provider: p, Store: runs}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	o.Brain = pipeline("write slow")
	o.SpawnStore, o.SpawnLeaseTTL = journal, kernel.MinLeaseTTL
	superviseTakenOver(t, manager, o, journal, p.started, "the worker's turn")

	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.causes) != 1 || !errors.Is(p.causes[0], contract.ErrLeaseLost) || !errors.Is(p.causes[0], supervise.ErrSpawnLogLost) {
		t.Errorf("the worker's turn ended with causes %v; want one matching contract.ErrLeaseLost and ErrSpawnLogLost, so that its provider leaves the turn to the run's next holder", p.causes)
	}
	if p.destroyed != 0 {
		t.Errorf("the worker's environment was destroyed %d times; want 0: the run's next holder may be recovering it", p.destroyed)
	}
	recs, _, err := supervise.ReadStoreSpawnLog(context.Background(), journal, "run1", "")
	if err != nil {
		t.Fatal(err)
	}
	var execution string
	for _, r := range recs {
		if r.Kind == supervise.KindExecutionBound {
			execution = r.Execution
		}
	}
	if execution == "" {
		t.Fatal("the journal names no execution of the worker")
	}
	run, err := runs.GetRun(context.Background(), execution)
	if err != nil || run.Status != store.StatusInterrupted {
		t.Errorf("the worker's kernel run %s is %s (%v); want interrupted, as a run whose lease was lost", execution, run.Status, err)
	}
}
