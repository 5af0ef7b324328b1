package kernel_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/memory"
)

// stallingStore is a store whose calls, once stall is set, block until
// their context ends — what pgx does when PostgreSQL stops answering.
// Only the calls selected by which stall; the others answer.
type stallingStore struct {
	store.Store
	stall atomic.Bool
	which func(call string) bool
	// after, when positive, sets stall once that many event appends
	// succeeded.
	after  int64
	events atomic.Int64
	// stalled counts calls that blocked.
	stalled atomic.Int64
}

func (s *stallingStore) block(ctx context.Context, call string) error {
	if !s.stall.Load() || (s.which != nil && !s.which(call)) {
		return nil
	}
	s.stalled.Add(1)
	<-ctx.Done()
	return fmt.Errorf("store stalled in %s: %w", call, ctx.Err())
}

func (s *stallingStore) GetRun(ctx context.Context, id string) (store.Run, error) {
	if err := s.block(ctx, "GetRun"); err != nil {
		return store.Run{}, err
	}
	return s.Store.GetRun(ctx, id)
}

func (s *stallingStore) UpdateRun(ctx context.Context, id string, fn func(*store.Run) error) (store.Run, error) {
	if err := s.block(ctx, "UpdateRun"); err != nil {
		return store.Run{}, err
	}
	return s.Store.UpdateRun(ctx, id, fn)
}

func (s *stallingStore) UpdateFenced(ctx context.Context, f store.Fence, fn func(*store.Run) error) (store.Run, error) {
	if err := s.block(ctx, "UpdateFenced"); err != nil {
		return store.Run{}, err
	}
	return s.Store.UpdateFenced(ctx, f, fn)
}

func (s *stallingStore) AppendEvents(ctx context.Context, f store.Fence, events []store.NewEvent) ([]store.Event, error) {
	if err := s.block(ctx, "AppendEvents"); err != nil {
		return nil, err
	}
	out, err := s.Store.AppendEvents(ctx, f, events)
	if err == nil && s.after > 0 && s.events.Add(1) >= s.after {
		s.stall.Store(true)
	}
	return out, err
}

func (s *stallingStore) AppendLedger(ctx context.Context, f store.Fence, bodies []canonjson.Value, at time.Time) ([]store.LedgerEntry, error) {
	if err := s.block(ctx, "AppendLedger"); err != nil {
		return nil, err
	}
	return s.Store.AppendLedger(ctx, f, bodies, at)
}

// slowScript says a few words, then works for a minute.
const slowScript = `{"turns":[{"steps":[{"text":"first words"},{"usage":{"inputTokens":9,"outputTokens":2},"mode":"cumulative"},{"delayMs":60000},{"text":" never said"}]}]}`

// A heartbeat whose renewals stall past the lease (the store stopped
// answering them) loses the lease: the run is cancelled at once, the
// store refuses what it would still record, and Execute reports the run
// interrupted — never completed — within the lease plus the cleanup
// bound. Readers see it interrupted, with what it recorded before.
func TestLeaseLostWhenRenewalsStall(t *testing.T) {
	mem := memory.New(nil)
	st := &stallingStore{Store: mem, after: 2, which: func(call string) bool { return call == "UpdateFenced" || call == "GetRun" }}
	provider := scripted.New(mustScript(t, slowScript), scripted.Options{})
	start := time.Now()
	res, err := kernel.Execute(context.Background(), kernel.Request{
		Profile: mustProfile(t, noteWriter), Task: "t", Provider: provider, Store: st, Check: nonEmpty,
		RunID: "stalled-heartbeat", LeaseTTL: kernel.MinLeaseTTL, CleanupTimeout: 300 * time.Millisecond,
	})
	took := time.Since(start)
	re, ok := errors.AsType[*kernel.RunError](err)
	if !ok || re.Status != store.StatusInterrupted || re.Reason != kernel.ReasonLeaseLost {
		t.Fatalf("err %v; want an interrupted run (lease lost)", err)
	}
	if _, ok := errors.AsType[*kernel.LeaseLostError](err); !ok {
		t.Errorf("err %v does not wrap the *LeaseLostError", err)
	}
	if res == nil || res.Status != store.StatusInterrupted || res.Delivered {
		t.Fatalf("result %+v; want interrupted, not delivered", res)
	}
	// The slack is for scheduling on a loaded machine under the race
	// detector (2.38 s was seen against a 2.3 s bound); the script's turn
	// would otherwise run for a minute.
	if bound := kernel.MinLeaseTTL + 300*time.Millisecond + 3*time.Second; took > bound {
		t.Errorf("Execute returned after %v; want within the lease and the cleanup bound (%v)", took, bound)
	}
	if res.Text != "first words" {
		t.Errorf("text %q; the text streamed before the loss is kept", res.Text)
	}
	if u := res.Usage.InputTokens; !u.Reported || u.Complete || u.Value != 9 {
		t.Errorf("input tokens %s; want the reported 9 as a floor", u)
	}
	// The store answers again: it shows the run interrupted, with the
	// events and spend recorded before the loss and nothing after.
	st.stall.Store(false)
	run, err := mem.GetRun(context.Background(), "stalled-heartbeat")
	if err != nil || run.Status != store.StatusInterrupted {
		t.Fatalf("recorded %s (%v); want interrupted", run.Status, err)
	}
	events, _ := mem.Events(context.Background(), "stalled-heartbeat", "", 0)
	if len(events) != res.Events || len(events) < 2 {
		t.Errorf("%d events recorded, the result says %d", len(events), res.Events)
	}
	entries, _ := mem.Ledger(context.Background(), "stalled-heartbeat")
	for _, e := range entries {
		if k, _ := e.Body.Get("kind"); k.Str() != kernel.LedgerProgress {
			t.Errorf("ledger entry %s after the lease was lost", canonjson.Marshal(e.Body))
		}
	}
	if len(entries) == 0 {
		t.Error("the spend reported before the loss has no ledger entry")
	}
	if m, _ := run.Doc.Get("requestedModel"); m.Str() != "scripted/note-writer" {
		t.Errorf("the interrupted run's document names requested model %s", canonjson.Marshal(m))
	}
}

// A store that stops answering mid-run (every call blocks until its
// context ends): every front door returns within the caller's deadline
// plus the cleanup bound, and nothing is recorded as completed.
func TestFrontDoorsBoundedWhenStoreHangs(t *testing.T) {
	const deadline, cleanup = 700 * time.Millisecond, 300 * time.Millisecond
	// Generous slack for a loaded machine; what is tested is that the
	// calls return at all, long before the minute the script would take.
	const bound = deadline + cleanup + 1500*time.Millisecond
	doors := []struct {
		name string
		run  func(ctx context.Context, st store.Store) error
	}{
		{"Execute", func(ctx context.Context, st store.Store) error {
			_, err := kernel.Execute(ctx, kernel.Request{Profile: mustProfile(t, noteWriter), Task: "t",
				Provider: scripted.New(mustScript(t, slowScript), scripted.Options{}), Store: st, Check: nonEmpty, RunID: "hang",
				CleanupTimeout: cleanup})
			return err
		}},
		{"Stream", func(ctx context.Context, st store.Store) error {
			var last error
			for _, err := range kernel.Stream(ctx, kernel.Request{Profile: mustProfile(t, noteWriter), Task: "t",
				Provider: scripted.New(mustScript(t, slowScript), scripted.Options{}), Store: st, Check: nonEmpty, RunID: "hang",
				CleanupTimeout: cleanup}) {
				last = cmpErr(last, err)
			}
			return last
		}},
		{"RunToolLoop", func(ctx context.Context, st store.Store) error {
			m := model(turn(scripted.Call("c1", "echo", `{}`)), scripted.ChatTurn{Events: []contract.ChatEvent{scripted.Text("first words")}, Hang: true})
			_, err := kernel.RunToolLoop(ctx, kernel.ToolLoopOptions{Model: m, User: "t", Tools: []contract.Tool{echoTool("echo", nil)},
				Store: st, RunID: "hang", CleanupTimeout: cleanup})
			return err
		}},
		{"Rounds", func(ctx context.Context, st store.Store) error {
			_, err := kernel.Rounds(ctx, kernel.RoundsOptions[string, string]{
				Task: "t", RunID: "hang", Store: st, CleanupTimeout: cleanup,
				Driver: kernel.Driver[string, string]{
					Plan: func(context.Context, string, []kernel.Iteration[string, string]) ([]string, error) {
						return []string{"a"}, nil
					},
					Decide: func(context.Context, []kernel.Iteration[string, string]) (kernel.Decision, error) {
						return kernel.DecisionDone, nil
					},
				},
				Agents: []kernel.Agent[string]{{Profile: mustProfile(t, noteWriter)}}, Parse: parseNote,
				Provider: scripted.New(mustScript(t, slowScript), scripted.Options{}),
			})
			return err
		}},
	}
	for _, d := range doors {
		t.Run(d.name, func(t *testing.T) {
			mem := memory.New(nil)
			st := &stallingStore{Store: mem, after: 1}
			ctx, cancel := context.WithTimeout(context.Background(), deadline)
			defer cancel()
			start := time.Now()
			done := make(chan error, 1)
			go func() { done <- d.run(ctx, st) }()
			var err error
			select {
			case err = <-done:
			case <-time.After(bound + 5*time.Second):
				t.Fatalf("%s did not return %v after the deadline (store hung)", d.name, bound+5*time.Second)
			}
			if took := time.Since(start); took > bound {
				t.Errorf("%s returned after %v; want within %v", d.name, took, bound)
			}
			if err == nil {
				t.Fatal("a run whose store hung returned no error")
			}
			if st.stalled.Load() == 0 {
				t.Fatal("the store never stalled: the test tested nothing")
			}
			// The store answers again: whatever it holds is not a
			// completed run.
			st.stall.Store(false)
			runs, _ := mem.ListRuns(context.Background(), store.ListOptions{})
			for _, r := range runs {
				if r.Status == store.StatusCompleted {
					t.Errorf("run %s recorded completed after its store hung", r.ID)
				}
			}
		})
	}
}

func cmpErr(a, b error) error {
	if b != nil {
		return b
	}
	return a
}

// unprovenProvider creates environments whose creation it cannot prove
// (Creation ""), or fails Create with an ExecutionError, and counts
// destroys.
type unprovenProvider struct {
	contract.Provider
	fail      error
	destroyed atomic.Int64
}

func (p *unprovenProvider) Create(ctx context.Context, in *contract.CreateInput) (contract.Environment, error) {
	if p.fail != nil {
		return nil, p.fail
	}
	env, err := p.Provider.Create(ctx, in)
	if err != nil {
		return nil, err
	}
	return &unprovenEnv{Environment: env, p: p}, nil
}

type unprovenEnv struct {
	contract.Environment
	p *unprovenProvider
}

func (e *unprovenEnv) Creation() contract.Creation { return "" }

func (e *unprovenEnv) Destroy(ctx context.Context) error {
	e.p.destroyed.Add(1)
	return e.Environment.Destroy(ctx)
}

// ENV-06: an environment whose creation the provider cannot prove is
// never destroyed — another caller may hold it.
func TestUnprovenEnvironmentIsNotDestroyed(t *testing.T) {
	p := &unprovenProvider{Provider: scripted.New(mustScript(t, `{"turns":[{"steps":[{"text":"A note."}]}]}`), scripted.Options{})}
	res, err := kernel.Execute(context.Background(), kernel.Request{Profile: mustProfile(t, noteWriter), Task: "t", Provider: p,
		Store: memory.New(nil), Check: nonEmpty})
	if err != nil || !res.Delivered {
		t.Fatalf("run: %v", err)
	}
	if n := p.destroyed.Load(); n != 0 {
		t.Errorf("destroyed %d environments of unknown creation", n)
	}
}

// ERR-05: a provider's ExecutionError keeps its receipt on the failed
// run's result and record.
func TestExecutionErrorReceiptKept(t *testing.T) {
	in, out := int64(40), int64(3)
	ee, err := contract.NewExecutionError("the sandbox rejected the turn", contract.ExecutionFailureReceipt{
		TokenUsage: &contract.PartialTokenUsage{InputTokens: &in, OutputTokens: &out}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := &unprovenProvider{Provider: scripted.New(mustScript(t, `{"turns":[{"steps":[{"text":"A note."}]}]}`), scripted.Options{}), fail: ee}
	st := memory.New(nil)
	res, err := kernel.Execute(context.Background(), kernel.Request{Profile: mustProfile(t, noteWriter), Task: "t", Provider: p, Store: st, Check: nonEmpty})
	if re, ok := errors.AsType[*kernel.RunError](err); !ok || re.Status != store.StatusFailed {
		t.Fatalf("err %v; want a failed run", err)
	}
	if res.Receipt == nil || res.Receipt.TokenUsage == nil || *res.Receipt.TokenUsage.InputTokens != 40 {
		t.Fatalf("receipt %+v; want the provider's", res.Receipt)
	}
	// The receipt is a lower bound: the run's usage takes it as a floor.
	if res.Usage.InputTokens.String() != "≥ 40" || res.Usage.OutputTokens.String() != "≥ 3" || res.Usage.CostUSD.Reported {
		t.Errorf("usage %+v; want the receipt's counts as floors, cost unknown", res.Usage)
	}
	rec, err := kernel.ReadRun(context.Background(), st, res.RunID)
	if err != nil || rec.Exact == nil || rec.Exact.FailureReceipt == nil || *rec.Exact.FailureReceipt.TokenUsage.OutputTokens != 3 {
		t.Errorf("recorded receipt: %+v (%v)", rec, err)
	}
}
