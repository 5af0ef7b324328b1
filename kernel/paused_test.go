package kernel_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"sync"
	"testing"
	"time"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/memory"
)

// watchedProvider records what a run did to the environments it
// created: whether it destroyed them, and why its turns' contexts ended.
type watchedProvider struct {
	contract.Provider
	mu        sync.Mutex
	destroyed int
	causes    []error
	// afterFirst, when set, is called once a turn's first event was
	// read: a test acts on the run while its turn is live.
	afterFirst func()
}

func (p *watchedProvider) Create(ctx context.Context, in *contract.CreateInput) (contract.Environment, error) {
	env, err := p.Provider.Create(ctx, in)
	if err != nil {
		return nil, err
	}
	return &watchedEnv{Environment: env, p: p}, nil
}

type watchedEnv struct {
	contract.Environment
	p *watchedProvider
}

func (e *watchedEnv) Stream(ctx context.Context, in *contract.TurnInput) iter.Seq2[contract.EnvironmentEvent, error] {
	inner := e.Environment.Stream(ctx, in)
	return func(yield func(contract.EnvironmentEvent, error) bool) {
		defer func() {
			if ctx.Err() != nil {
				e.p.mu.Lock()
				e.p.causes = append(e.p.causes, context.Cause(ctx))
				e.p.mu.Unlock()
			}
		}()
		first := true
		for ev, err := range inner {
			if !yield(ev, err) {
				return
			}
			if first && e.p.afterFirst != nil {
				e.p.afterFirst()
			}
			first = false
		}
	}
}

func (e *watchedEnv) Destroy(ctx context.Context) error {
	e.p.mu.Lock()
	e.p.destroyed++
	e.p.mu.Unlock()
	return e.Environment.Destroy(ctx)
}

// A process paused past its run's lease (here: its renewals stall until
// the lease lapsed, which is what the store sees of a paused process)
// has lost the run, and with it the run's environment: another process
// may have taken the run over and re-attached to the environment and its
// live turn (fleet, on a remote server). So the run ends interrupted
// without destroying the environment, and its turn's context ends with
// a cause that matches contract.ErrLeaseLost, which tells a provider
// whose turns outlive their caller to leave the turn alone rather than
// cancel it (spec/runtime.md §5; RES-01, RES-06: the resume identity and
// the work stay the new holder's).
func TestLeaseLostLeavesTheEnvironmentToTheNextHolder(t *testing.T) {
	mem := memory.New(nil)
	st := &stallingStore{Store: mem, after: 2, which: func(call string) bool { return call == "UpdateFenced" || call == "GetRun" }}
	provider := &watchedProvider{Provider: scripted.New(mustScript(t, slowScript), scripted.Options{})}
	res, err := kernel.Execute(context.Background(), kernel.Request{
		Profile: mustProfile(t, noteWriter), Task: "t", Provider: provider, Store: st, Check: nonEmpty,
		RunID: "paused-holder", LeaseTTL: kernel.MinLeaseTTL, CleanupTimeout: 300 * time.Millisecond,
	})
	if re, ok := errors.AsType[*kernel.RunError](err); !ok || re.Reason != kernel.ReasonLeaseLost || res == nil || res.Status != store.StatusInterrupted {
		t.Fatalf("result %+v, err %v; want interrupted, lease lost", res, err)
	}
	if !errors.Is(err, contract.ErrLeaseLost) {
		t.Errorf("err %v does not match contract.ErrLeaseLost", err)
	}
	provider.mu.Lock()
	defer provider.mu.Unlock()
	if provider.destroyed != 0 {
		t.Errorf("the run destroyed its environment %d times after it lost the lease; want 0: it may be the next holder's", provider.destroyed)
	}
	if len(provider.causes) != 1 || !errors.Is(provider.causes[0], contract.ErrLeaseLost) {
		t.Errorf("the turn's context ended with causes %v; want one matching contract.ErrLeaseLost", provider.causes)
	}
}

// The control: a run that keeps its lease destroys the environment it
// created once it ends (ENV-06), so the rule above costs nothing to a
// run that was not paused.
func TestRunThatKeepsItsLeaseDestroysItsEnvironment(t *testing.T) {
	provider := &watchedProvider{Provider: scripted.New(mustScript(t, `{"turns":[{"steps":[{"text":"done"}]}]}`), scripted.Options{})}
	res, err := kernel.Execute(context.Background(), kernel.Request{
		Profile: mustProfile(t, noteWriter), Task: "t", Provider: provider, Store: memory.New(nil), Check: nonEmpty,
		RunID: "kept-lease", LeaseTTL: kernel.MinLeaseTTL,
	})
	if err != nil || res.Status != store.StatusCompleted {
		t.Fatalf("result %+v, err %v; want completed", res, err)
	}
	provider.mu.Lock()
	defer provider.mu.Unlock()
	if provider.destroyed != 1 || len(provider.causes) != 0 {
		t.Errorf("destroyed %d times, turn contexts ended with %v; want destroyed once, no turn cut short", provider.destroyed, provider.causes)
	}
}

// A run whose caller's context ends, mid-turn, because the caller lost
// the lease it held the run under (a supervisor whose spawn journal was
// taken over, a fleet worker whose claim was; the cause matches
// contract.ErrLeaseLost) is no longer this process's either: its
// caller's successor may have re-attached to the run's environment and
// live turn (issue 13, RES-01, RES-06). So it ends exactly as a run
// whose own lease was lost: recorded interrupted, never cancelled (which
// a successor's recovery would read as the work's end), its environment
// not destroyed, its turn's context ended with the loss, so a provider
// leaves the turn running. Any other cancellation still cancels the run
// and destroys what it created.
func TestRunCutByItsCallersLostLeaseIsLeftToTheNextHolder(t *testing.T) {
	callerLost := fmt.Errorf("test: the caller's claim was taken over: %w", contract.ErrLeaseLost)
	for _, tc := range []struct {
		name          string
		cause         error
		wantStatus    store.Status
		wantReason    string
		wantDestroyed int
	}{
		{name: "caller lost its lease", cause: callerLost, wantStatus: store.StatusInterrupted, wantReason: kernel.ReasonLeaseLost},
		{name: "caller cancelled", cause: errors.New("test: the caller stopped"), wantStatus: store.StatusCancelled, wantReason: kernel.ReasonCancelled, wantDestroyed: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := memory.New(nil)
			ctx, cancel := context.WithCancelCause(context.Background())
			defer cancel(nil)
			provider := &watchedProvider{Provider: scripted.New(mustScript(t, slowScript), scripted.Options{}),
				afterFirst: func() { cancel(tc.cause) }}
			res, err := kernel.Execute(ctx, kernel.Request{
				Profile: mustProfile(t, noteWriter), Task: "t", Provider: provider, Store: st, Check: nonEmpty,
				RunID: "cut-by-caller", LeaseTTL: kernel.MinLeaseTTL, CleanupTimeout: 300 * time.Millisecond,
			})
			re, ok := errors.AsType[*kernel.RunError](err)
			if !ok || re.Status != tc.wantStatus || re.Reason != tc.wantReason || res == nil || res.Status != tc.wantStatus {
				t.Fatalf("result %+v, err %v; want %s, %s", res, err, tc.wantStatus, tc.wantReason)
			}
			if !errors.Is(err, tc.cause) {
				t.Errorf("err %v does not carry the caller's cause %v", err, tc.cause)
			}
			run, err := st.GetRun(context.Background(), "cut-by-caller")
			if err != nil || run.Status != tc.wantStatus {
				t.Errorf("the store holds the run %s (%v); want it recorded %s", run.Status, err, tc.wantStatus)
			}
			provider.mu.Lock()
			defer provider.mu.Unlock()
			if provider.destroyed != tc.wantDestroyed {
				t.Errorf("the run destroyed its environment %d times; want %d", provider.destroyed, tc.wantDestroyed)
			}
			if len(provider.causes) != 1 || !errors.Is(provider.causes[0], tc.cause) {
				t.Errorf("the turn's context ended with causes %v; want the caller's %v", provider.causes, tc.cause)
			}
		})
	}
}
