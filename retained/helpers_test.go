package retained_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/internal/storetest"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/retained"
	"github.com/agentrt/agentrt/store"
)

// forEachStore runs fn on SQLite and on PostgreSQL (storetest.Each).
func forEachStore(t *testing.T, fn func(t *testing.T, open func(t *testing.T) store.Store)) {
	storetest.Each(t, fn)
}

func ptr[T any](v T) *T { return &v }

// testCtx bounds a test's waits.
func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// script plays "first", pauses for pause, then "second" and completes.
func script(pause time.Duration) *scripted.Script {
	first, second := "first", "second"
	ms := pause.Milliseconds()
	return &scripted.Script{Turns: []scripted.Turn{{Repeat: true, Steps: []scripted.Step{
		{Text: &first}, {DelayMS: &ms}, {Text: &second}}}}}
}

// startOptions are the options of one retained run under key and turn.
func startOptions(p contract.Provider, s store.Store, key, turn string, hook retained.AdmissionHook) retained.StartOptions {
	return retained.StartOptions{Provider: p, Store: s,
		Environment: &contract.CreateInput{IdempotencyKey: &key, Profile: profile.Ref{CatalogID: "retained-worker"}},
		Turn:        contract.TurnInput{TurnID: &turn, Prompt: ptr("do the long job")},
		OnAdmission: hook}
}

// recorder is an admission hook that keeps what it saw.
type recorder struct {
	mu   sync.Mutex
	seen []retained.Admission
	// fail, when set, makes the hook fail on that kind.
	fail retained.AdmissionKind
	// check, when set, runs inside the hook.
	check func(ctx context.Context, a retained.Admission) error
}

func (r *recorder) hook(ctx context.Context, a retained.Admission) error {
	r.mu.Lock()
	r.seen = append(r.seen, a)
	r.mu.Unlock()
	if r.check != nil {
		if err := r.check(ctx, a); err != nil {
			return err
		}
	}
	if a.Kind == r.fail {
		return errors.New("the hook refuses " + string(a.Kind))
	}
	return nil
}

func (r *recorder) kinds() []retained.AdmissionKind {
	r.mu.Lock()
	defer r.mu.Unlock()
	var ks []retained.AdmissionKind
	for _, a := range r.seen {
		ks = append(ks, a.Kind)
	}
	return ks
}

// collect reads a run's events after a cursor to their end.
func collect(t *testing.T, ctx context.Context, run *retained.Run, after retained.Cursor) ([]retained.Event, error) {
	t.Helper()
	var out []retained.Event
	for ev, err := range run.Events(ctx, after) {
		if err != nil {
			return out, err
		}
		out = append(out, ev)
	}
	return out, nil
}

// countingProvider counts every call the runtime makes to a provider.
type countingProvider struct {
	*scripted.Provider
	mu    sync.Mutex
	calls int
	// caps, when set, replaces the capability document.
	caps func(*contract.Capabilities)
	// getErr, when set, is what Get returns.
	getErr error
}

func (c *countingProvider) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls
}

func (c *countingProvider) add() {
	c.mu.Lock()
	c.calls++
	c.mu.Unlock()
}

func (c *countingProvider) Capabilities(ctx context.Context) (*contract.Capabilities, error) {
	c.add()
	caps, err := c.Provider.Capabilities(ctx)
	if err == nil && c.caps != nil {
		cp := *caps
		c.caps(&cp)
		caps = &cp
	}
	return caps, err
}

func (c *countingProvider) Create(ctx context.Context, in *contract.CreateInput) (contract.Environment, error) {
	c.add()
	return c.Provider.Create(ctx, in)
}

func (c *countingProvider) Get(ctx context.Context, id string) (contract.Environment, error) {
	c.add()
	if c.getErr != nil {
		return nil, c.getErr
	}
	return c.Provider.Get(ctx, id)
}
