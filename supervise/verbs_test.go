package supervise_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/supervise"
)

// gateExecutor holds every worker until its context ends or release is
// closed, then reports 10 tokens, one iteration and 10 µ$.
type gateExecutor struct{ release chan struct{} }

func (g *gateExecutor) Execute(ctx context.Context, w supervise.Work) (supervise.WorkResult, error) {
	spent := ledger.Spend{Tokens: i64(10), Iterations: i64(1), MicroUSD: i64(10)}
	select {
	case <-g.release:
		return supervise.WorkResult{Text: w.Task + " DONE", Spent: spent}, nil
	case <-ctx.Done():
		return supervise.WorkResult{Spent: spent}, context.Cause(ctx)
	}
}

// tool runs one coordination verb the way the router brain's loop does
// and returns its result as plain JSON.
func tool(t *testing.T, ctx context.Context, c *supervise.Coordinator, verb string, args any) map[string]any {
	t.Helper()
	tools, err := c.Tools()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(args)
	v, err := canonjson.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range tools {
		if tl.Name == supervise.ToolPrefix+verb {
			out, err := tl.Run(ctx, v)
			if err != nil {
				t.Fatalf("%s: %v", verb, err)
			}
			raw, err := canonjson.Canonical(out)
			if err != nil {
				t.Fatal(err)
			}
			var m map[string]any
			if err := json.Unmarshal(raw, &m); err != nil {
				t.Fatal(err)
			}
			return m
		}
	}
	t.Fatalf("no tool %s", verb)
	return nil
}

func spawnArgs(task string) map[string]any { return map[string]any{"profile": "writer", "task": task} }

// Behaviours 38, 45 and §9 "refusals are tool RESULTS": each refused
// spawn_worker returns {error, reason, cause?, live, freeSlots} —
// freeSlots null on an uncapped scope, never left out (§3.6) — reserves
// nothing, and the run goes on.
func TestSpawnRefusalsAreToolResultsBehaviour38(t *testing.T) {
	cases := []struct {
		name  string
		tune  func(*supervise.Options)
		setup []map[string]any
		probe func(first string) map[string]any
		want  map[string]any
	}{{
		name:  "max-live-workers before budget (behaviour 45)",
		tune:  func(o *supervise.Options) { o.MaxLiveWorkers = 2; o.Budget.Tokens = i64(2000) },
		setup: []map[string]any{spawnArgs("one"), spawnArgs("two")},
		probe: func(string) map[string]any { return spawnArgs("three") },
		want:  map[string]any{"error": "max-live-workers", "live": 2.0, "freeSlots": 0.0},
	}, {
		name:  "budget-exhausted (behaviour 38)",
		tune:  func(o *supervise.Options) { o.Budget.Tokens = i64(1500) },
		setup: []map[string]any{spawnArgs("one")},
		probe: func(string) map[string]any { return spawnArgs("two") },
		want: map[string]any{"error": "budget-exhausted", "cause": "tokens", "live": 1.0, "freeSlots": nil,
			"shortfall": map[string]any{"channel": "tokens", "requested": 1000.0, "free": 500.0}},
	}, {
		// A child under a plain worker would be an orphan: nothing reads
		// its settlement. depth-exceeded is nested_test's (under a lead).
		name:  "parent-not-manager",
		setup: []map[string]any{spawnArgs("one")},
		probe: func(first string) map[string]any {
			return map[string]any{"profile": "writer", "task": "nested", "parent": first}
		},
		want: map[string]any{"error": "invalid-identity", "cause": "parent-not-manager", "live": 1.0, "freeSlots": nil},
	}, {
		name: "usd-unbudgeted (behaviour 38)",
		tune: func(o *supervise.Options) { o.Budget.MicroUSD, o.PerWorker.MicroUSD = nil, nil },
		probe: func(string) map[string]any {
			return map[string]any{"profile": "writer", "task": "x", "budget": map[string]any{"maxUsd": 0.5}}
		},
		want: map[string]any{"error": "usd-unbudgeted", "live": 0.0, "freeSlots": nil, "hint": usdUnbudgetedHint},
	}, {
		name:  "unknown profile is invalid-identity",
		probe: func(string) map[string]any { return map[string]any{"profile": "nobody", "task": "x"} },
		want:  map[string]any{"error": "invalid-identity", "cause": "unknown-profile", "live": 0.0, "freeSlots": nil},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			gate := &gateExecutor{release: make(chan struct{})}
			o := baseOptions(t, gate, nil)
			if tc.tune != nil {
				tc.tune(&o)
			}
			var got map[string]any
			var before, after ledger.Readout
			o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
				first := ""
				for _, a := range tc.setup {
					r := tool(t, ctx, c, supervise.VerbSpawnWorker, a)
					if r["error"] != nil {
						t.Fatalf("setup spawn refused: %v", r)
					}
					if first == "" {
						first, _ = r["workerId"].(string)
					}
				}
				before = c.Readout()
				got = tool(t, ctx, c, supervise.VerbSpawnWorker, tc.probe(first))
				after = c.Readout()
				close(gate.release)
				return supervise.BrainReport{}, nil
			})
			if _, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o); err != nil {
				t.Fatal(err)
			}
			if got["reason"] == "" || got["reason"] == nil {
				t.Errorf("refusal without a reason: %v", got)
			}
			delete(got, "reason")
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("refusal (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, after); diff != "" {
				t.Errorf("a refusal changed the pool (-before +after):\n%s", diff)
			}
		})
	}
}

// Behaviour 45 through the router brain: the manager's model reads the
// refusal as the tool message of its call and the loop goes on.
func TestRouterSeesRefusalAsToolResult(t *testing.T) {
	gate := &gateExecutor{release: make(chan struct{})}
	var seen string
	router := scripted.NewChatModel(scripted.ChatScript{Turns: []scripted.ChatTurn{
		turn(call("c1", supervise.VerbSpawnWorker, spawnArgs("one")), call("c2", supervise.VerbSpawnWorker, spawnArgs("two"))),
		{Expect: func(m []contract.ChatMessage, _ []contract.Tool) error {
			seen = *m[len(m)-1].Content
			close(gate.release)
			return nil
		}, Events: []contract.ChatEvent{scripted.Text("no room")}},
	}})
	o := baseOptions(t, gate, router)
	o.MaxLiveWorkers = 1
	res, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(seen, `"error":"max-live-workers"`) || !strings.Contains(seen, `"freeSlots":0`) {
		t.Errorf("tool message %q does not carry the refusal", seen)
	}
	if res.BrainText != "no room" || len(res.Tree) != 1 {
		t.Errorf("brain text %q, %d nodes", res.BrainText, len(res.Tree))
	}
}

// Behaviour 42: a brain that fails with no child down ends driver-failed
// with the error's name and message; a run whose spawn was refused for
// budget ends budget-exhausted even though its brain then failed.
func TestDriverFailedBehaviour42(t *testing.T) {
	boom := errors.New("boom")
	cases := []struct {
		name    string
		spawns  int
		tokens  int64
		reason  supervise.NoWinnerReason
		wantErr *supervise.DriverError
	}{
		{"throwing driver, no children", 0, 10_000, supervise.ReasonDriverFailed, &supervise.DriverError{Name: "Error", Message: "boom"}},
		{"budget exhausted outranks the throw", 2, 1_000, supervise.ReasonBudgetExhausted, nil},
		// A dollar request under a root without a dollar ceiling is
		// refused usd-unbudgeted: no pool ran out ("the fix is to budget
		// the root, not to ask for less"), so the throw is reported.
		{"usd-unbudgeted is not an exhausted budget", -1, 10_000, supervise.ReasonDriverFailed, &supervise.DriverError{Name: "Error", Message: "boom"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			gate := &gateExecutor{release: make(chan struct{})}
			o := baseOptions(t, gate, nil)
			o.Budget.Tokens = i64(tc.tokens)
			if tc.spawns < 0 { // one spawn asking for dollars of a root that budgets none
				o.Budget.MicroUSD, o.PerWorker.MicroUSD = nil, nil
			}
			o.Deliverable = supervise.Deliverable{Check: func(context.Context, supervise.Output) (kernel.Verdict, error) {
				return kernel.Verdict{Passed: false}, nil
			}}
			o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
				for range tc.spawns {
					tool(t, ctx, c, supervise.VerbSpawnWorker, spawnArgs("x"))
				}
				if tc.spawns < 0 {
					args := spawnArgs("x")
					args["budget"] = map[string]any{"maxUsd": 0.5}
					if r := tool(t, ctx, c, supervise.VerbSpawnWorker, args); r["error"] != string(supervise.CodeUSDUnbudgeted) {
						t.Errorf("a dollar spawn under a root without maxUsd: %v, want usd-unbudgeted", r)
					}
				}
				close(gate.release)
				return supervise.BrainReport{}, boom
			})
			res, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o)
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != supervise.StatusNoWinner || res.Reason != tc.reason {
				t.Errorf("status %s reason %s, want no-winner %s", res.Status, res.Reason, tc.reason)
			}
			if diff := cmp.Diff(tc.wantErr, res.Error); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
		})
	}
}

// Behaviour 55: submit_result keeps the first passing result; a second
// passing one is refused earlier-passing-result; a failing one reports
// accepted:false with the described expectation.
func TestSubmitResultBehaviour55(t *testing.T) {
	o := baseOptions(t, &gateExecutor{release: make(chan struct{})}, nil)
	var replies []map[string]any
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		for _, r := range []string{"half", "first DONE", "second DONE"} {
			replies = append(replies, tool(t, ctx, c, supervise.VerbSubmitResult, map[string]any{"result": r}))
		}
		return supervise.BrainReport{}, nil
	})
	res, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSubmitResult), "t", o)
	if err != nil {
		t.Fatal(err)
	}
	if replies[0]["accepted"] != false || replies[0]["expectation"] != "the result must say DONE" {
		t.Errorf("failing submission: %v", replies[0])
	}
	if replies[1]["accepted"] != true {
		t.Errorf("first passing submission: %v", replies[1])
	}
	if replies[2]["error"] != "earlier-passing-result" {
		t.Errorf("second passing submission: %v", replies[2])
	}
	if res.Status != supervise.StatusWinner || res.Winner.Text != "first DONE" || !res.Winner.Submitted {
		t.Errorf("winner %+v", res.Winner)
	}
}

// Behaviour 41: a check that errors or panics does not deliver and does
// not crash the run; the worker's spend is committed either way.
func TestThrowingCheckNotDeliveredBehaviour41(t *testing.T) {
	for _, name := range []string{"error", "panic"} {
		t.Run(name, func(t *testing.T) {
			gate := &gateExecutor{release: make(chan struct{})}
			close(gate.release)
			o := baseOptions(t, gate, nil)
			o.Deliverable = supervise.Deliverable{Check: func(context.Context, supervise.Output) (kernel.Verdict, error) {
				if name == "panic" {
					panic("check exploded")
				}
				return kernel.Verdict{Passed: true}, errors.New("check could not judge")
			}}
			var ev map[string]any
			o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
				tool(t, ctx, c, supervise.VerbSpawnWorker, spawnArgs("x"))
				ev = tool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{"timeoutMs": 60000})
				return supervise.BrainReport{}, nil
			})
			res, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o)
			if err != nil {
				t.Fatal(err)
			}
			event, _ := ev["event"].(map[string]any)
			if event["delivered"] != false || event["state"] != "done" {
				t.Errorf("event %v, want done and not delivered", ev)
			}
			if res.Status != supervise.StatusNoWinner || res.Spent.Tokens != 10 || !res.Spent.TokensKnown {
				t.Errorf("status %s spent %+v", res.Status, res.Spent)
			}
		})
	}
}

// RTP-02, behaviour 36 under concurrency (run with -race): a brain
// spawning from many goroutines under maxLiveWorkers never exceeds the
// cap, every worker settles once, and the totals are the exact sum.
func TestConcurrentSpawnsConserveBudget(t *testing.T) {
	const n = 24
	gate := &gateExecutor{release: make(chan struct{})}
	close(gate.release)
	o := baseOptions(t, gate, nil)
	o.MaxLiveWorkers = 4
	o.Budget = ledger.Budget{Tokens: i64(n * 1000), Iterations: i64(n), MicroUSD: i64(n * 100_000)}
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				for {
					r := tool(t, ctx, c, supervise.VerbSpawnWorker, spawnArgs("w"+string(rune('a'+i))))
					if r["error"] == nil {
						return
					}
					if r["error"] != "max-live-workers" {
						t.Errorf("spawn %d refused: %v", i, r)
						return
					}
					tool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{"timeoutMs": 50})
				}
			})
		}
		wg.Wait()
		for {
			r := tool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{"timeoutMs": 5000})
			if r["idle"] == true {
				break
			}
		}
		return supervise.BrainReport{}, nil
	})
	res, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o)
	if err != nil {
		t.Fatal(err)
	}
	want := supervise.SpentTotal{Tokens: n * 10, Iterations: n, MicroUSD: n * 10, Resources: map[string]int64{},
		TokensKnown: true, IterationsKnown: true, USDKnown: true}
	if diff := cmp.Diff(want, res.Spent); diff != "" {
		t.Errorf("spent (-want +got):\n%s", diff)
	}
	if len(res.Tree) != n || res.Status != supervise.StatusWinner {
		t.Errorf("%d nodes, status %s", len(res.Tree), res.Status)
	}
}

// A tree of 1,000 workers, each spawned and awaited in turn, completes
// with every await returning its settlement: await_event never reports
// idle while a started worker is still settling.
func TestThousandWorkersEachAwaited(t *testing.T) {
	const n = 1000
	gate := &gateExecutor{release: make(chan struct{})}
	close(gate.release)
	o := baseOptions(t, gate, nil)
	o.Budget = ledger.Budget{Tokens: i64(n * 1000), Iterations: i64(n), MicroUSD: i64(n * 100_000)}
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		for i := range n {
			if _, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "writer", Task: "t"}); err != nil {
				return supervise.BrainReport{}, err
			}
			r, err := c.Await(ctx, supervise.AwaitArgs{TimeoutMS: 10_000})
			if err != nil || r.Event == nil {
				t.Errorf("await %d: %+v %v", i, r, err)
				return supervise.BrainReport{}, err
			}
		}
		return supervise.BrainReport{}, nil
	})
	res, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Tree) != n || res.Spent.Tokens != n*10 || !res.Spent.TokensKnown {
		t.Errorf("%d nodes, spent %+v", len(res.Tree), res.Spent)
	}
}
