package kernel_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/memory"
)

// resultEvent is the quickstart's worker event: {type: "result", data:
// {result: ...}} (QSK-10).
func resultEvent(result canonjson.Value) contract.EnvironmentEvent {
	return contract.EnvironmentEvent{Type: "result", Data: map[string]canonjson.Value{"result": result}}
}

func note(text string) canonjson.Value {
	return canonjson.ObjectValue([]canonjson.Member{{Name: "note", Value: canonjson.StringValue(text)}})
}

// echo is an in-process worker answering each prompt with a note about it.
func echo(ctx context.Context, prompt string, _ scripted.PromptContext) ([]contract.EnvironmentEvent, error) {
	return []contract.EnvironmentEvent{resultEvent(note("note: " + prompt))}, nil
}

// parseNote reads the note of the run's result.
func parseNote(out kernel.Outcome) (string, error) {
	n, ok := out.Output.Get("note")
	if !ok || n.Kind() != canonjson.String {
		return "", errors.New("the result has no note")
	}
	return n.Str(), nil
}

func once(task string, history []kernel.Iteration[string, string]) []string {
	if len(history) == 0 {
		return []string{task}
	}
	return nil
}

// QSK-03..09: the quickstart's rounds — plan [task] on an empty history,
// then nothing; decide "done" — give decision done and one iteration whose
// output is the worker's result, sent as Prompt(task).
func TestRoundsQuickstart(t *testing.T) {
	ctx := context.Background()
	st := memory.New(nil)
	var prompts []string
	worker := scripted.InProcess(func(ctx context.Context, prompt string, pc scripted.PromptContext) ([]contract.EnvironmentEvent, error) {
		prompts = append(prompts, prompt)
		return []contract.EnvironmentEvent{resultEvent(note("Shipped one-click restore."))}, nil
	})
	res, err := kernel.Rounds(ctx, kernel.RoundsOptions[string, string]{
		Task: "Write a one-line release note for one-click restore.",
		Driver: kernel.Driver[string, string]{
			Plan: func(ctx context.Context, task string, h []kernel.Iteration[string, string]) ([]string, error) {
				return once(task, h), nil
			},
			Decide: func(context.Context, []kernel.Iteration[string, string]) (kernel.Decision, error) {
				return kernel.DecisionDone, nil
			},
		},
		Agents:   []kernel.Agent[string]{{Profile: mustProfile(t, noteWriter), Prompt: func(task string) string { return "TASK: " + task }}},
		Parse:    parseNote,
		Provider: worker,
		Store:    st,
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Decision != kernel.DecisionDone || len(res.Iterations) != 1 {
		t.Fatalf("decision %q, %d iterations; want done, 1", res.Decision, len(res.Iterations))
	}
	// The rounds run and its iteration read back as typed records.
	rec, err := kernel.ReadRun(ctx, st, res.RunID)
	if err != nil || rec.Rounds == nil || rec.Rounds.Decision != string(kernel.DecisionDone) || rec.Rounds.Iterations != 1 || rec.Rounds.Usage == nil {
		t.Errorf("rounds record %+v (%v)", rec, err)
	}
	irec, err := kernel.ReadRun(ctx, st, res.Iterations[0].RunID)
	if err != nil || irec.Exact == nil || irec.Exact.Task != "TASK: Write a one-line release note for one-click restore." || irec.Kind != "iteration" {
		t.Errorf("iteration record %+v (%v)", irec, err)
	}
	it := res.Iterations[0]
	if diff := cmp.Diff([]string{"TASK: Write a one-line release note for one-click restore."}, prompts); diff != "" {
		t.Errorf("prompts (-want +got):\n%s", diff)
	}
	if !it.HasOutput || it.Output != "Shipped one-click restore." || it.Err != nil || it.Status != store.StatusCompleted {
		t.Errorf("iteration %+v", it)
	}
	if it.Delivered {
		t.Error("delivered without a validator")
	}
	if it.Usage.InputTokens.Reported || res.Usage.CostUSD.Reported {
		t.Error("a worker that reported no usage has reported usage")
	}
	if res.Winner == nil || res.Winner.Index != 0 || it.Agent != "note-writer" {
		t.Errorf("winner %+v, agent %q", res.Winner, it.Agent)
	}
	// The rounds and the iteration are runs of their own in the store.
	rr, err := st.GetRun(ctx, res.RunID)
	if err != nil || rr.Status != store.StatusCompleted || rr.Kind != "rounds" {
		t.Fatalf("rounds run %+v, %v", rr, err)
	}
	ir, err := st.GetRun(ctx, it.RunID)
	if err != nil || ir.Status != store.StatusCompleted || ir.Kind != "iteration" {
		t.Fatalf("iteration run %+v, %v", ir, err)
	}
	events, err := st.Events(ctx, res.RunID, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, e := range events {
		types = append(types, e.Type)
	}
	want := []string{"loop.plan", "loop.iteration.started", "loop.iteration.ended", "loop.decision", "loop.ended"}
	if diff := cmp.Diff(want, types); diff != "" {
		t.Errorf("rounds events (-want +got):\n%s", diff)
	}
}

// Fan-out runs at most MaxConcurrency iterations at once, round-robin over
// the agents, and the history is in index order whatever the completion
// order (TQ-08: batches run on taskqueue).
func TestRoundsFanoutConcurrency(t *testing.T) {
	var inFlight, peak atomic.Int32
	worker := scripted.InProcess(func(ctx context.Context, prompt string, pc scripted.PromptContext) ([]contract.EnvironmentEvent, error) {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		// Later tasks finish first.
		d := time.Duration(10-len(prompt)) * 3 * time.Millisecond
		time.Sleep(d)
		return echo(ctx, prompt, pc)
	})
	a, b := mustProfile(t, noteWriter), mustProfile(t, noteWriter)
	res, err := kernel.Rounds(context.Background(), kernel.RoundsOptions[string, string]{
		Task: "t",
		Driver: kernel.Driver[string, string]{
			Plan: func(ctx context.Context, task string, h []kernel.Iteration[string, string]) ([]string, error) {
				if len(h) > 0 {
					return nil, nil
				}
				return []string{"a", "bb", "ccc", "dddd", "eeeee"}, nil
			},
			Decide: func(context.Context, []kernel.Iteration[string, string]) (kernel.Decision, error) {
				return "keep-going", nil
			},
		},
		Agents:         []kernel.Agent[string]{{Name: "first", Profile: a}, {Name: "second", Profile: b}},
		Parse:          parseNote,
		Provider:       worker,
		Store:          memory.New(nil),
		MaxConcurrency: 2,
	})
	if err != nil {
		t.Fatal(err)
	}
	if p := peak.Load(); p > 2 {
		t.Errorf("%d iterations ran at once, cap 2", p)
	}
	var got []string
	for i, it := range res.Iterations {
		if it.Index != i {
			t.Errorf("history position %d holds iteration %d", i, it.Index)
		}
		got = append(got, it.Agent+":"+it.Output)
	}
	want := []string{"first:note: a", "second:note: bb", "first:note: ccc", "second:note: dddd", "first:note: eeeee"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("iterations (-want +got):\n%s", diff)
	}
	// The plan ran out, so the last decision is returned as it is, even
	// though it is the caller's own, non-terminal word.
	if res.Decision != "keep-going" || res.Decision.IsTerminal() {
		t.Errorf("decision %q", res.Decision)
	}
}

func score(f float64) *float64 { return &f }

// A refine loop: the next round builds on the best valid iteration; the
// iteration cap ends the rounds with one final decision; the default
// winner is the best valid score, with a receipt per candidate.
func TestRoundsRefineAndWinner(t *testing.T) {
	scores := map[string]float64{"a": 0.4, "b": 0.9, "c": 0.9, "b+": 0.95}
	var decisions int
	res, err := kernel.Rounds(context.Background(), kernel.RoundsOptions[string, string]{
		Task: "t",
		Driver: kernel.Driver[string, string]{
			Plan: func(ctx context.Context, task string, h []kernel.Iteration[string, string]) ([]string, error) {
				if len(h) == 0 {
					return []string{"a", "b", "c", "fail"}, nil
				}
				return []string{"b+", "extra"}, nil // truncated to the cap
			},
			Decide: func(ctx context.Context, h []kernel.Iteration[string, string]) (kernel.Decision, error) {
				decisions++
				return "refine", nil
			},
		},
		Agents: []kernel.Agent[string]{{Profile: mustProfile(t, noteWriter)}},
		Parse:  func(out kernel.Outcome) (string, error) { return strings.TrimPrefix(mustNote(out), "note: "), nil },
		Validate: func(ctx context.Context, out string, info kernel.IterationInfo) (kernel.Verdict, error) {
			if out == "fail" {
				return kernel.Verdict{Passed: false, Reason: "not a note", Score: score(1)}, nil
			}
			return kernel.Verdict{Passed: true, Score: score(scores[out])}, nil
		},
		Provider:      scripted.InProcess(echo),
		Store:         memory.New(nil),
		MaxIterations: 5,
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Iterations) != 5 || res.Iterations[4].Task != "b+" {
		t.Fatalf("iterations: %d, last %q", len(res.Iterations), res.Iterations[len(res.Iterations)-1].Task)
	}
	// Round 1 builds on the highest valid score; ties go to the latest (c).
	if p := res.Iterations[4].ParentIndex; p == nil || *p != 2 {
		t.Errorf("round 1 parent %v, want 2", p)
	}
	if res.Iterations[0].ParentIndex != nil {
		t.Error("round 0 has a parent")
	}
	if decisions != 3 || res.Decision != "refine" {
		t.Errorf("%d decisions, last %q; want 3 (one per round, then a final one at the cap), refine", decisions, res.Decision)
	}
	if res.Winner == nil || res.Winner.Task != "b+" || !res.Winner.Delivered {
		t.Fatalf("winner %+v", res.Winner)
	}
	got := map[int]string{}
	for _, r := range res.Receipts {
		if r.Selector != "default" {
			t.Errorf("selector %q", r.Selector)
		}
		got[r.CandidateIndex] = fmt.Sprint(r.Selected, " ", r.Reason)
	}
	want := map[int]string{0: "false valid but not top", 1: "false valid but not top", 2: "false valid but not top",
		3: "false not selected", 4: "true best valid"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("receipts (-want +got):\n%s", diff)
	}
}

func mustNote(out kernel.Outcome) string {
	n, _ := parseNote(out)
	return n
}

// A failed iteration is history, not an error: the driver sees why, and
// the winner comes from the rest. Parse errors, parse panics and
// validator errors are iteration failures too.
func TestRoundsSoftFailures(t *testing.T) {
	worker := scripted.InProcess(func(ctx context.Context, prompt string, pc scripted.PromptContext) ([]contract.EnvironmentEvent, error) {
		switch prompt {
		case "in-band":
			return []contract.EnvironmentEvent{{Type: "error", Data: map[string]canonjson.Value{"error": canonjson.StringValue("quota")}}}, nil
		case "silent":
			return nil, nil // no terminal event
		case "unparsable":
			return []contract.EnvironmentEvent{resultEvent(canonjson.StringValue("no note"))}, nil
		}
		return echo(ctx, prompt, pc)
	})
	var seen []kernel.Iteration[string, string]
	res, err := kernel.Rounds(context.Background(), kernel.RoundsOptions[string, string]{
		Task: "t",
		Driver: kernel.Driver[string, string]{
			Plan: func(ctx context.Context, task string, h []kernel.Iteration[string, string]) ([]string, error) {
				if len(h) > 0 {
					return nil, nil
				}
				return []string{"in-band", "silent", "unparsable", "panic", "invalid", "good"}, nil
			},
			Decide: func(ctx context.Context, h []kernel.Iteration[string, string]) (kernel.Decision, error) {
				seen = h
				return kernel.DecisionPickWinner, nil
			},
		},
		Agents: []kernel.Agent[string]{{Profile: mustProfile(t, noteWriter)}},
		Parse: func(out kernel.Outcome) (string, error) {
			n, err := parseNote(out)
			if n == "note: panic" {
				panic("parser bug")
			}
			return n, err
		},
		Validate: func(ctx context.Context, out string, info kernel.IterationInfo) (kernel.Verdict, error) {
			if out == "note: invalid" {
				return kernel.Verdict{}, errors.New("validator down")
			}
			return kernel.Verdict{Passed: true}, nil
		},
		Provider: worker,
		Store:    memory.New(nil),
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) != 6 {
		t.Fatalf("the driver saw %d iterations", len(seen))
	}
	wantErr := map[string]string{"in-band": "quota", "silent": "without a terminal event", "unparsable": "no note",
		"panic": "panicked", "invalid": "validator down"}
	for _, it := range res.Iterations {
		w, failing := wantErr[it.Task]
		switch {
		case failing && (it.Err == nil || !strings.Contains(it.Err.Error(), w)):
			t.Errorf("%s: err %v, want it to mention %q", it.Task, it.Err, w)
		case failing && it.Delivered:
			t.Errorf("%s: delivered", it.Task)
		case !failing && (it.Err != nil || !it.Delivered):
			t.Errorf("%s: err %v delivered %v", it.Task, it.Err, it.Delivered)
		}
	}
	for _, task := range []string{"in-band", "silent"} {
		i := indexOf(res.Iterations, task)
		if res.Iterations[i].Status != store.StatusFailed || res.Iterations[i].HasOutput {
			t.Errorf("%s: status %q, output %v", task, res.Iterations[i].Status, res.Iterations[i].HasOutput)
		}
	}
	if res.Winner == nil || res.Winner.Task != "good" {
		t.Errorf("winner %+v", res.Winner)
	}
}

func indexOf(its []kernel.Iteration[string, string], task string) int {
	for i, it := range its {
		if it.Task == task {
			return i
		}
	}
	return -1
}

// Cancelling mid-batch ends the rounds with the context's error after the
// started iterations drain; the record says cancelled, not completed.
func TestRoundsCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	started := make(chan struct{}, 8)
	worker := scripted.InProcess(func(ctx context.Context, prompt string, pc scripted.PromptContext) ([]contract.EnvironmentEvent, error) {
		started <- struct{}{}
		<-ctx.Done()
		return nil, ctx.Err()
	})
	st := memory.New(nil)
	go func() { <-started; <-started; cancel() }()
	res, err := kernel.Rounds(ctx, kernel.RoundsOptions[string, string]{
		Task: "t",
		Driver: kernel.Driver[string, string]{
			Plan: func(ctx context.Context, task string, h []kernel.Iteration[string, string]) ([]string, error) {
				return []string{"a", "b", "c", "d", "e"}, nil
			},
			Decide: func(context.Context, []kernel.Iteration[string, string]) (kernel.Decision, error) {
				t.Error("decided after cancellation")
				return kernel.DecisionDone, nil
			},
		},
		Agents:         []kernel.Agent[string]{{Profile: mustProfile(t, noteWriter)}},
		Parse:          parseNote,
		Provider:       worker,
		Store:          st,
		MaxConcurrency: 2,
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
	if res == nil || len(res.Iterations) != 2 {
		t.Fatalf("result %+v; want the 2 started iterations", res)
	}
	for _, it := range res.Iterations {
		if it.Status != store.StatusCancelled {
			t.Errorf("iteration %d status %q", it.Index, it.Status)
		}
	}
	rr, _ := st.GetRun(context.Background(), res.RunID)
	if rr.Status != store.StatusCancelled {
		t.Errorf("rounds run status %q, want cancelled", rr.Status)
	}
}

// Selectors: the caller's overrides the driver's; an index that is not an
// iteration is an error; a "fail" decision fails the rounds run.
func TestRoundsSelectorsAndFail(t *testing.T) {
	base := func(st store.Store) kernel.RoundsOptions[string, string] {
		return kernel.RoundsOptions[string, string]{
			Task: "t",
			Driver: kernel.Driver[string, string]{
				Plan: func(ctx context.Context, task string, h []kernel.Iteration[string, string]) ([]string, error) {
					if len(h) > 0 {
						return nil, nil
					}
					return []string{"a", "b"}, nil
				},
				Decide: func(context.Context, []kernel.Iteration[string, string]) (kernel.Decision, error) {
					return kernel.DecisionFail, nil
				},
				SelectWinner: func([]kernel.Iteration[string, string]) (int, bool) { return 1, true },
			},
			Agents: []kernel.Agent[string]{{Profile: mustProfile(t, noteWriter)}}, Parse: parseNote,
			Provider: scripted.InProcess(echo), Store: st,
		}
	}
	st := memory.New(nil)
	res, err := kernel.Rounds(context.Background(), base(st))
	if re, ok := errors.AsType[*kernel.RunError](err); !ok || re.Status != store.StatusFailed || re.Reason != kernel.ReasonDriver {
		t.Fatalf("a fail decision returned %v; want a *RunError, failed (driver)", err)
	}
	if res.Winner == nil || res.Winner.Index != 1 || res.Receipts[1].Selector != "driver" || !res.Receipts[1].Selected {
		t.Errorf("driver selection: winner %+v receipts %+v", res.Winner, res.Receipts)
	}
	if rr, _ := st.GetRun(context.Background(), res.RunID); rr.Status != store.StatusFailed {
		t.Errorf("a fail decision left the rounds %q", rr.Status)
	}
	o := base(memory.New(nil))
	o.SelectWinner = func([]kernel.Iteration[string, string]) (int, bool) { return 0, true }
	if res, _ := kernel.Rounds(context.Background(), o); res.Winner.Index != 0 || res.Receipts[0].Selector != "caller" {
		t.Errorf("caller selection ignored: %+v", res.Receipts)
	}
	o.SelectWinner = func([]kernel.Iteration[string, string]) (int, bool) { return 7, true }
	if _, err := kernel.Rounds(context.Background(), o); err == nil || !strings.Contains(err.Error(), "iteration 7") {
		t.Errorf("a selector naming no iteration: err %v", err)
	}
}

// Bad options are refused before anything is recorded or run.
func TestRoundsOptionsRefused(t *testing.T) {
	p := mustProfile(t, noteWriter)
	plan := func(ctx context.Context, task string, h []kernel.Iteration[string, string]) ([]string, error) {
		return nil, nil
	}
	decide := func(context.Context, []kernel.Iteration[string, string]) (kernel.Decision, error) {
		return kernel.DecisionDone, nil
	}
	ok := kernel.RoundsOptions[string, string]{Driver: kernel.Driver[string, string]{Plan: plan, Decide: decide},
		Agents: []kernel.Agent[string]{{Profile: p}}, Parse: parseNote, Provider: scripted.InProcess(echo)}
	tests := []struct {
		name string
		edit func(*kernel.RoundsOptions[string, string])
		want string
	}{
		{"no plan", func(o *kernel.RoundsOptions[string, string]) { o.Driver.Plan = nil }, "Driver.Plan"},
		{"lease below the minimum", func(o *kernel.RoundsOptions[string, string]) { o.LeaseTTL = time.Millisecond }, "LeaseTTL: 1ms is below the minimum"},
		{"negative lease", func(o *kernel.RoundsOptions[string, string]) { o.LeaseTTL = -time.Second }, "LeaseTTL"},
		{"negative cleanup", func(o *kernel.RoundsOptions[string, string]) { o.CleanupTimeout = -time.Second }, "CleanupTimeout"},
		{"no agents", func(o *kernel.RoundsOptions[string, string]) { o.Agents = nil }, "at least one agent"},
		{"agent without profile", func(o *kernel.RoundsOptions[string, string]) { o.Agents = []kernel.Agent[string]{{}} }, "agent 0 has no profile"},
		{"no parse", func(o *kernel.RoundsOptions[string, string]) { o.Parse = nil }, "Parse"},
		{"no provider", func(o *kernel.RoundsOptions[string, string]) { o.Provider = nil }, "provider"},
		{"negative cap", func(o *kernel.RoundsOptions[string, string]) { o.MaxIterations = -1 }, "negative"},
	}
	for _, tc := range tests {
		st := memory.New(nil)
		o := ok
		o.Store = st
		tc.edit(&o)
		if _, err := kernel.Rounds(context.Background(), o); !errors.Is(err, kernel.ErrInvalidOptions) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want ErrInvalidOptions saying %q", tc.name, err, tc.want)
		}
		if runs, _ := st.ListRuns(context.Background(), store.ListOptions{}); len(runs) != 0 {
			t.Errorf("%s: %d runs recorded", tc.name, len(runs))
		}
	}
}

// Usage sums stay truthful: one iteration reporting usage and one not
// gives a floor, never a total that pretends to be exact.
func TestRoundsUsageFloor(t *testing.T) {
	var mu sync.Mutex
	worker := scripted.InProcess(func(ctx context.Context, prompt string, pc scripted.PromptContext) ([]contract.EnvironmentEvent, error) {
		mu.Lock()
		defer mu.Unlock()
		done := resultEvent(note(prompt))
		if prompt == "metered" {
			done.Usage = &contract.TokenUsage{InputTokens: 10, OutputTokens: 2}
			done.UsageMode = contract.UsageDelta
		}
		return []contract.EnvironmentEvent{done}, nil
	})
	res, err := kernel.Rounds(context.Background(), kernel.RoundsOptions[string, string]{
		Task: "t",
		Driver: kernel.Driver[string, string]{
			Plan: func(ctx context.Context, task string, h []kernel.Iteration[string, string]) ([]string, error) {
				if len(h) > 0 {
					return nil, nil
				}
				return []string{"metered", "silent"}, nil
			},
			Decide: func(context.Context, []kernel.Iteration[string, string]) (kernel.Decision, error) {
				return kernel.DecisionDone, nil
			},
		},
		Agents: []kernel.Agent[string]{{Profile: mustProfile(t, noteWriter)}}, Parse: parseNote,
		Provider: worker, Store: memory.New(nil),
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Usage.InputTokens.String(); got != "≥ 10" {
		t.Errorf("input tokens %s, want ≥ 10", got)
	}
	if res.Iterations[0].Usage.InputTokens.String() != "10" || res.Iterations[1].Usage.InputTokens.Reported {
		t.Errorf("per-iteration usage %v / %v", res.Iterations[0].Usage.InputTokens, res.Iterations[1].Usage.InputTokens)
	}
}

// P7 and issue 4 (ledger): iterations reserve from one conserved pool
// before dispatch and settle what they used; at the end the pool, the
// per-run cost ledger and the rounds' usage tell the same story, and work
// the pool had no room for was refused before the provider saw it.
func TestRoundsBudgetReconciles(t *testing.T) {
	ctx := context.Background()
	tokens, iterations, perTokens, one := int64(1000), int64(3), int64(100), int64(1)
	pool, err := ledger.NewPool(ledger.Budget{Tokens: &tokens, Iterations: &iterations}, ledger.PoolOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var turns atomic.Int32
	worker := scripted.InProcess(func(ctx context.Context, prompt string, pc scripted.PromptContext) ([]contract.EnvironmentEvent, error) {
		turns.Add(1)
		done := resultEvent(note(prompt))
		done.Usage, done.UsageMode = &contract.TokenUsage{InputTokens: 10, OutputTokens: 5}, contract.UsageDelta
		return []contract.EnvironmentEvent{done}, nil
	})
	st := memory.New(nil)
	res, err := kernel.Rounds(ctx, kernel.RoundsOptions[string, string]{
		Task: "t",
		Driver: kernel.Driver[string, string]{
			Plan: func(ctx context.Context, task string, h []kernel.Iteration[string, string]) ([]string, error) {
				if len(h) > 0 {
					return nil, nil
				}
				return []string{"a", "b", "c", "d", "e"}, nil
			},
			Decide: func(context.Context, []kernel.Iteration[string, string]) (kernel.Decision, error) {
				return kernel.DecisionDone, nil
			},
		},
		Agents: []kernel.Agent[string]{{Profile: mustProfile(t, noteWriter)}}, Parse: parseNote,
		Provider: worker, Store: st, Budget: pool, Reserve: ledger.Budget{Tokens: &perTokens, Iterations: &one},
		MaxConcurrency: 1,
	})
	if err != nil {
		t.Fatal(err)
	}
	ran, refused := 0, 0
	var ledgerTokens int64
	for _, it := range res.Iterations {
		var re *kernel.RunError
		switch {
		case it.Err == nil:
			ran++
		case errors.As(it.Err, &re) && errors.Is(re, kernel.ErrRefused):
			refused++
		default:
			t.Errorf("iteration %d: %v", it.Index, it.Err)
		}
		// A run's spend is its last ledger entry (the earlier ones are
		// progress snapshots).
		entries, err := st.Ledger(ctx, it.RunID)
		if err != nil || len(entries) == 0 {
			t.Fatalf("iteration %d: %d ledger entries, %v", it.Index, len(entries), err)
		}
		usage, _ := entries[len(entries)-1].Body.Get("usage")
		for _, ch := range []string{"inputTokens", "outputTokens"} {
			if v, _ := usage.Get(ch); v.Kind() == canonjson.Number {
				ledgerTokens += int64(v.Float())
			}
		}
	}
	if ran != 3 || refused != 2 || turns.Load() != 3 {
		t.Fatalf("%d ran, %d refused, %d turns reached the provider; want 3, 2, 3", ran, refused, turns.Load())
	}
	r := pool.Readout()
	tok, its := r.Channels["tokens"], r.Channels["iterations"]
	if r.OpenTickets != 0 || tok.Reserved != 0 || tok.Committed != 45 || tok.Free != 955 || its.Committed != 3 {
		t.Errorf("pool: open %d, tokens %+v, iterations %+v", r.OpenTickets, tok, its)
	}
	if tok.Total != tok.Free+tok.Reserved+tok.Committed {
		t.Errorf("tokens not conserved: %+v", tok)
	}
	if ledgerTokens != tok.Committed {
		t.Errorf("the run ledgers sum to %d tokens, the pool committed %d", ledgerTokens, tok.Committed)
	}
	// The refused runs spent nothing, and say so exactly.
	if got := res.Usage.InputTokens.String(); got != "30" {
		t.Errorf("rounds input tokens %s, want 30", got)
	}
}

// A driver that panics does not leave its rounds running under a lease
// renewed forever: the record ends failed and the panic goes on.
func TestRoundsPanicEndsTheRecord(t *testing.T) {
	st := memory.New(nil)
	func() {
		defer func() {
			if recover() == nil {
				t.Error("the panic did not go on")
			}
		}()
		kernel.Rounds(context.Background(), kernel.RoundsOptions[string, string]{
			RunID: "panicky",
			Driver: kernel.Driver[string, string]{
				Plan: func(context.Context, string, []kernel.Iteration[string, string]) ([]string, error) {
					panic("driver bug")
				},
				Decide: func(context.Context, []kernel.Iteration[string, string]) (kernel.Decision, error) {
					return kernel.DecisionDone, nil
				},
			},
			Agents: []kernel.Agent[string]{{Profile: mustProfile(t, noteWriter)}}, Parse: parseNote,
			Provider: scripted.InProcess(echo), Store: st,
		})
	}()
	r, err := st.GetRun(context.Background(), "panicky")
	if err != nil || r.Status != store.StatusFailed {
		t.Errorf("rounds record %q, %v; want failed", r.Status, err)
	}
}
