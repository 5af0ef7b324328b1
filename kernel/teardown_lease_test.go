package kernel_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/memory"
)

// renewalOutage is a store whose fenced updates (the lease renewals, the
// terminal write) fail once out is set: the store stopped answering this
// process, as when it is partitioned away.
type renewalOutage struct {
	store.Store
	out atomic.Bool
}

var errRenewalOutage = errors.New("injected: the store does not answer")

func (s *renewalOutage) UpdateFenced(ctx context.Context, f store.Fence, fn func(*store.Run) error) (store.Run, error) {
	if s.out.Load() {
		return store.Run{}, errRenewalOutage
	}
	return s.Store.UpdateFenced(ctx, f, fn)
}

// slowDestroyProvider's environments' Destroy starts the store's outage
// and then does not answer until its context ends, whose cause it sends
// on causes.
type slowDestroyProvider struct {
	contract.Provider
	st     *renewalOutage
	causes chan error
}

func (p *slowDestroyProvider) Create(ctx context.Context, in *contract.CreateInput) (contract.Environment, error) {
	env, err := p.Provider.Create(ctx, in)
	if err != nil {
		return nil, err
	}
	return &slowDestroyEnv{Environment: env, p: p}, nil
}

type slowDestroyEnv struct {
	contract.Environment
	p *slowDestroyProvider
}

func (e *slowDestroyEnv) Destroy(ctx context.Context) error {
	e.p.st.out.Store(true)
	<-ctx.Done()
	e.p.causes <- context.Cause(ctx)
	return context.Cause(ctx)
}

// ENV-06 with a lease (behaviour 46's fencing, for teardown): a run's
// destroy of its environment cannot outlive the run's lease. Once the
// lease, no longer renewed, lapses, another process may take the run
// over and re-attach to that environment; a destroy landing then would
// end the successor's turn. So the destroy's context ends when the lease
// as last renewed runs out, its cause the *kernel.LeaseLostError, not at
// the teardown window's end (a half of CleanupTimeout, here 10s, far
// past the 1s lease); the environment is reported not confirmed
// destroyed.
func TestDestroyEndsWithTheLease(t *testing.T) {
	st := &renewalOutage{Store: memory.New(nil)}
	p := &slowDestroyProvider{Provider: scripted.New(mustScript(t, `{"turns":[{"steps":[{"text":"A note."}]}]}`), scripted.Options{}),
		st: st, causes: make(chan error, 1)}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	done := make(chan error, 1)
	var res *kernel.Result
	go func() {
		var err error
		res, err = kernel.Execute(ctx, kernel.Request{Profile: mustProfile(t, noteWriter), Task: "t", Provider: p, Store: st, Check: nonEmpty,
			RunID: "destroy-past-lease", LeaseTTL: kernel.MinLeaseTTL, CleanupTimeout: 20 * time.Second})
		done <- err
	}()
	select {
	case cause := <-p.causes:
		if !errors.Is(cause, contract.ErrLeaseLost) {
			t.Errorf("the destroy's context ended with %v; want the lost lease (contract.ErrLeaseLost)", cause)
		}
	case <-ctx.Done():
		t.Fatal("the destroy's context had not ended a minute later")
	}
	select {
	case err := <-done:
		re, ok := errors.AsType[*kernel.RunError](err)
		if !ok || re.Status != store.StatusInterrupted || re.Reason != kernel.ReasonLeaseLost {
			t.Errorf("err %v; want the run interrupted, its lease lost", err)
		}
		if res == nil || !strings.Contains(res.TeardownUnconfirmed, res.EnvironmentID) {
			t.Errorf("result %+v; want the environment reported not confirmed destroyed", res)
		}
	case <-ctx.Done():
		t.Fatal("the run had not ended a minute later")
	}
}
