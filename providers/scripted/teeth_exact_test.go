package scripted_test

import (
	"context"
	"errors"
	"iter"
	"sync"

	"github.com/agentrt/agentrt/contract"
)

// The exact-process faults of TestScenarioFamiliesHaveTeeth: each wrapper
// below breaks one rule of the exact-process contract and keeps the rest
// of the honest provider's behaviour.

// ExactProcess wraps the honest facet.
func (b *broken) ExactProcess() contract.ExactProcessProvider {
	f := b.Provider.ExactProcess()
	if f == nil {
		return nil
	}
	return &brokenExact{ExactProcessProvider: f, b: b}
}

type brokenExact struct {
	contract.ExactProcessProvider
	b *broken

	mu   sync.Mutex
	keys map[string]bool
}

func (x *brokenExact) wrap(env contract.ExactProcessEnvironment) contract.ExactProcessEnvironment {
	if env == nil {
		return nil
	}
	return &brokenExactEnv{ExactProcessEnvironment: env, b: x.b}
}

func (x *brokenExact) Create(ctx context.Context, in *contract.CreateExactProcessInput) (contract.ExactProcessEnvironment, error) {
	cp := *in
	switch x.b.fault {
	case faultWeakenedEgress:
		// EXP-10: never weaken. This one runs a strict request as blocked.
		cp.Egress = contract.EgressPolicy{Mode: contract.EgressBlocked}
	case faultSecondExactEnv:
		// EXP-11: a retried key provisions again.
		x.mu.Lock()
		if x.keys == nil {
			x.keys = map[string]bool{}
		}
		if x.keys[in.IdempotencyKey] {
			cp.IdempotencyKey += "-again"
		}
		x.keys[in.IdempotencyKey] = true
		x.mu.Unlock()
	}
	env, err := x.ExactProcessProvider.Create(ctx, &cp)
	if x.b.fault == faultChangedExactInput && errors.Is(err, contract.ErrIdempotencyConflict) {
		// EXP-11: the changed input is served anyway.
		cp.IdempotencyKey += "-changed"
		env, err = x.ExactProcessProvider.Create(ctx, &cp)
	}
	if err == nil && x.b.fault == faultNotFresh {
		// EXP-03: the environment is not fresh.
		if list, _ := env.Processes().List(ctx); len(list) == 0 {
			if _, err := env.Processes().Spawn(ctx, exactOptions().Launch); err != nil {
				return nil, err
			}
		}
	}
	return x.wrap(env), err
}

func (x *brokenExact) Get(ctx context.Context, id string) (contract.ExactProcessEnvironment, error) {
	env, err := x.ExactProcessProvider.Get(ctx, id)
	return x.wrap(env), err
}

func (x *brokenExact) List(ctx context.Context, q *contract.ExactProcessEnvironmentQuery) ([]contract.ExactProcessEnvironment, error) {
	if x.b.fault == faultListIgnoresMetadata {
		q = nil
	}
	list, err := x.ExactProcessProvider.List(ctx, q)
	for i, env := range list {
		list[i] = x.wrap(env)
	}
	return list, err
}

type brokenExactEnv struct {
	contract.ExactProcessEnvironment
	b *broken
}

func (e *brokenExactEnv) ReadFile(ctx context.Context, path string, maxBytes int64) ([]byte, error) {
	if e.b.fault == faultReadPastMax {
		// EXP-06: the bound is not applied.
		maxBytes = 1 << 20
	}
	return e.ExactProcessEnvironment.ReadFile(ctx, path, maxBytes)
}

func (e *brokenExactEnv) Destroy(ctx context.Context) error {
	if e.b.fault == faultDestroyedListed {
		return nil // reports success, destroys nothing
	}
	return e.ExactProcessEnvironment.Destroy(ctx)
}

func (e *brokenExactEnv) Processes() contract.ExactProcessManager {
	return &brokenProcs{ExactProcessManager: e.ExactProcessEnvironment.Processes(), b: e.b}
}

type brokenProcs struct {
	contract.ExactProcessManager
	b *broken
}

func (m *brokenProcs) Spawn(ctx context.Context, l *contract.ExactProcessLaunch) (contract.ExactProcess, error) {
	p, err := m.ExactProcessManager.Spawn(ctx, l)
	if err != nil {
		return nil, err
	}
	return &brokenProc{ExactProcess: p, b: m.b}, nil
}

func (m *brokenProcs) Get(ctx context.Context, pid int64) (contract.ExactProcess, error) {
	p, err := m.ExactProcessManager.Get(ctx, pid)
	if err != nil || p == nil {
		return nil, err
	}
	return &brokenProc{ExactProcess: p, b: m.b, recovered: true}, nil
}

type brokenProc struct {
	contract.ExactProcess
	b         *broken
	recovered bool
}

func (p *brokenProc) Status(ctx context.Context) (*contract.ExactProcessStatus, error) {
	st, err := p.ExactProcess.Status(ctx)
	if err == nil && p.b.fault == faultStatusDisagrees && st.Termination != nil && st.Termination.ExitCode != nil {
		// EXP-09: the terminal reason is not the one Wait reports.
		code := *st.Termination.ExitCode + 1
		t := *st.Termination
		t.ExitCode, st.ExitCode, st.Termination = &code, code, &t
	}
	return st, err
}

func (p *brokenProc) Kill(ctx context.Context) error {
	if p.b.fault == faultKillAfterExitFails {
		if st, err := p.ExactProcess.Status(ctx); err == nil && !st.Running {
			return errors.New("no such process")
		}
	}
	return p.ExactProcess.Kill(ctx)
}

func (p *brokenProc) Stdout(ctx context.Context) iter.Seq2[[]byte, error] {
	seq := p.ExactProcess.Stdout(ctx)
	if !p.recovered || p.b.fault != faultRecoveredReplay {
		return seq
	}
	// EXP-09: a recovered handle replays only what arrives from now on.
	return func(yield func([]byte, error) bool) {
		first := true
		for chunk, err := range seq {
			if first && err == nil {
				first = false
				continue
			}
			if !yield(chunk, err) {
				return
			}
		}
	}
}
