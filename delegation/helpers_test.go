package delegation_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/delegation"
	"github.com/agentrt/agentrt/internal/pgtest"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/store"
	storememory "github.com/agentrt/agentrt/store/memory"
	"github.com/agentrt/agentrt/store/postgres"
	"github.com/agentrt/agentrt/store/sqlite"
	"github.com/agentrt/agentrt/supervise"
)

// deadline bounds one test; waits inside return as soon as they can.
func deadline(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func parseProfile(t testing.TB, doc string) *profile.Profile {
	t.Helper()
	p, err := profile.Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// workerScript answers "alpha" at once and "slow" after a minute (a
// worker still running when the test acts).
const workerScript = `{"turns": [
	{"match": "alpha", "repeat": true, "steps": [{"text": "alpha: DONE"}, {"usage": {"inputTokens": 10, "outputTokens": 2, "cost": 0.0001}, "mode": "delta"}]},
	{"match": "slow", "repeat": true, "steps": [{"delayMs": 60000}, {"text": "slow: DONE"}, {"usage": {"inputTokens": 10, "outputTokens": 2, "cost": 0.0001}, "mode": "delta"}]}]}`

// countingExecutor counts the workers it runs.
type countingExecutor struct {
	inner supervise.Executor
	runs  atomic.Int64
}

func (e *countingExecutor) ReportsUsage() bool { return true }

func (e *countingExecutor) Execute(ctx context.Context, w supervise.Work) (supervise.WorkResult, error) {
	e.runs.Add(1)
	return e.inner.Execute(ctx, w)
}

// fixture is a queue's fixed configuration over one store.
type fixture struct {
	store  store.Store
	runDir string
	exec   *countingExecutor
}

func newFixture(t testing.TB, s store.Store) *fixture {
	t.Helper()
	var script scripted.Script
	if err := json.Unmarshal([]byte(workerScript), &script); err != nil {
		t.Fatal(err)
	}
	return &fixture{store: s, runDir: t.TempDir(),
		exec: &countingExecutor{inner: &supervise.KernelExecutor{Provider: scripted.New(&script, scripted.Options{}), Store: storememory.New(nil)}}}
}

// config is the queue's fixed configuration; the manager's model spawns
// the writer once on the task, awaits it and ends.
func (f *fixture) config(t testing.TB) delegation.Config {
	t.Helper()
	usd := 1.0
	return delegation.Config{
		Store: f.store,
		Manager: parseProfile(t, `{"name": "manager", "harness": "cli-base", "model": {"default": "scripted/manager"},
			"tools": {"agent_runtime_coordination_spawn_worker": true, "agent_runtime_coordination_await_event": true}}`),
		Profiles: map[string]*profile.Profile{"writer": parseProfile(t, `{"name": "writer", "harness": "cli-base", "model": {"provider": "scripted", "default": "scripted/writer"}}`)},
		Executor: f.exec,
		Router:   func(task string) (contract.ChatModel, error) { return scripted.NewChatModel(plan(task)), nil },
		Deliverable: supervise.Deliverable{Describe: "says DONE", Check: func(_ context.Context, out supervise.Output) (kernel.Verdict, error) {
			return kernel.Verdict{Passed: strings.Contains(out.Text, "DONE"), Reason: "the result says DONE"}, nil
		}},
		Caps:         delegation.Budget{Tokens: 10_000, Iterations: 10, USD: &usd},
		RunDir:       f.runDir,
		ClaimTTL:     3 * time.Second,
		ScanInterval: 200 * time.Millisecond,
		SettleGrace:  2 * time.Second,
	}
}

// plan is the manager's model: spawn the writer on the task under a key,
// await its settlement, end; each turn reports its tokens, none its cost.
func plan(task string) scripted.ChatScript {
	spawn, _ := json.Marshal(map[string]any{"profile": "writer", "task": task, "key": "w1"})
	await, _ := json.Marshal(map[string]any{"timeoutMs": 60_000})
	return scripted.ChatScript{Turns: []scripted.ChatTurn{
		{Events: []contract.ChatEvent{scripted.Call("s1", supervise.ToolPrefix+supervise.VerbSpawnWorker, string(spawn)), scripted.Usage(5, 1, contract.UsageDelta)}},
		{Events: []contract.ChatEvent{scripted.Call("a1", supervise.ToolPrefix+supervise.VerbAwaitEvent, string(await)), scripted.Usage(5, 1, contract.UsageDelta)}},
		{Events: []contract.ChatEvent{scripted.Text("The writer settled."), scripted.Usage(5, 1, contract.UsageDelta)}},
	}}
}

func open(t testing.TB, cfg delegation.Config) *delegation.Queue {
	t.Helper()
	q, err := delegation.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		q.Close(ctx)
	})
	return q
}

// waitFor polls cond every 20ms until it holds or ctx ends.
func waitFor(t *testing.T, ctx context.Context, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v", what, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// settle waits for a delegation to end.
func settle(t *testing.T, ctx context.Context, q *delegation.Queue, id string) delegation.Delegation {
	t.Helper()
	for {
		d, err := q.Wait(ctx, id, 30*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if d.State.Terminal() {
			return d
		}
		if ctx.Err() != nil {
			t.Fatalf("delegation %s still %s", id, d.State)
		}
	}
}

// journaled reports whether the run dir's journal holds a record of
// kind.
func journaled(ctx context.Context, dir, kind string) bool {
	recs, _, err := supervise.ReadRunDir(ctx, dir)
	if err != nil {
		return false
	}
	for _, r := range recs {
		if r.Kind == kind {
			return true
		}
	}
	return false
}

type storeKind struct {
	name string
	open func(t *testing.T) store.Store
}

// stores are the durable adapters a restart is tested on.
func stores() []storeKind {
	return []storeKind{
		{"sqlite", func(t *testing.T) store.Store {
			s, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "agentrt.db"), sqlite.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		}},
		{"postgres", func(t *testing.T) store.Store {
			s, err := postgres.Open(context.Background(), pgtest.Schema(t), postgres.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		}},
	}
}

func canonValue(s string) (canonjson.Value, error) { return canonjson.Decode([]byte(s)) }

func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}

func ptr[T any](v T) *T { return &v }

// must returns v, failing the test on err: must(f())(t).
func must[T any](v T, err error) func(t *testing.T) T {
	return func(t *testing.T) T {
		t.Helper()
		if err != nil {
			t.Fatal(fmt.Errorf("unexpected error: %w", err))
		}
		return v
	}
}
