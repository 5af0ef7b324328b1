package supervise_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/supervise"
)

// A worker whose turn ends early on the kernel executor — the stream
// stops before any event, stops after reporting usage, or breaks with a
// transport error after it — settles failed and is never delivered; what
// it reported before the end is only a floor, so it is charged at its
// ceiling and named as an unreported spend gap (never 0, never exact).
// A worker whose provider ends the turn and then streams on is settled
// by its first terminal: delivered, charged exactly what it reported
// before the end. Either way the pool is conserved: at the end nothing
// is reserved and the spend recorded in state.json is the result's
// (behaviours 36, 41, 43; spec/runtime.md §7).
func TestWorkerTurnEndingEarlySettlesDown(t *testing.T) {
	usage := func(in, out int64) contract.EnvironmentEvent {
		return contract.EnvironmentEvent{Type: "usage", Data: map[string]canonjson.Value{},
			Usage: &contract.TokenUsage{InputTokens: in, OutputTokens: out}, UsageMode: contract.UsageDelta}
	}
	tests := []struct {
		name      string
		provider  func(t *testing.T) contract.Provider
		state     supervise.State
		delivered bool
		tokens    int64
		known     bool
	}{
		{"no event at all", scriptedWorker(`{"turns":[{"repeat":true,"steps":[],"end":"no-terminal"}]}`),
			supervise.StateFailed, false, 1000, false},
		{"no terminal after usage", scriptedWorker(`{"turns":[{"repeat":true,"steps":[{"text":"DONE, almost"},{"usage":{"inputTokens":7,"outputTokens":3},"mode":"delta"}],"end":"no-terminal"}]}`),
			supervise.StateFailed, false, 1000, false},
		{"transport cut after usage", scriptedWorker(`{"turns":[{"repeat":true,"steps":[{"text":"DONE, almost"},{"usage":{"inputTokens":7,"outputTokens":3},"mode":"delta"}],"end":"die","error":"unexpected EOF"}]}`),
			supervise.StateFailed, false, 1000, false},
		{"terminal then more events", func(t *testing.T) contract.Provider {
			return scripted.InProcess(func(context.Context, string, scripted.PromptContext) ([]contract.EnvironmentEvent, error) {
				return []contract.EnvironmentEvent{usage(100, 20),
					contract.CompletedEvent(map[string]canonjson.Value{"text": canonjson.StringValue("DONE")}),
					usage(5000, 5000), contract.FailedEvent("late", nil)}, nil
			})
		}, supervise.StateDone, true, 120, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := baseOptions(t, &supervise.KernelExecutor{Provider: tc.provider(t), Store: newStore(t)}, nil)
			o.RunDir = t.TempDir()
			o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
				if _, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "writer", Task: "write it"}); err != nil {
					return supervise.BrainReport{}, err
				}
				_, err := c.Await(ctx, supervise.AwaitArgs{TimeoutMS: 60_000})
				return supervise.BrainReport{}, err
			})
			res, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Tree) != 1 {
				t.Fatalf("tree %+v", res.Tree)
			}
			w := res.Tree[0]
			if w.State != tc.state || w.Delivered != tc.delivered {
				t.Errorf("worker %s delivered %v, want %s delivered %v", w.State, w.Delivered, tc.state, tc.delivered)
			}
			if res.Spent.Tokens != tc.tokens || res.Spent.TokensKnown != tc.known {
				t.Errorf("spent %d tokens (known %v), want %d (known %v)", res.Spent.Tokens, res.Spent.TokensKnown, tc.tokens, tc.known)
			}
			tokenGap := false
			for _, g := range res.SpendGaps {
				if slices.Contains(g.Channels, ledger.ChannelTokens) {
					tokenGap = g.Kind == supervise.GapUnreported
				}
			}
			if tokenGap == tc.known {
				t.Errorf("spend gaps %+v with tokens known %v: want an unreported tokens gap exactly when tokens are unknown", res.SpendGaps, tc.known)
			}
			st, err := supervise.ReadRunState(context.Background(), o.RunDir)
			if err != nil {
				t.Fatal(err)
			}
			if r := st.Reserved; r != nil && ((r.Tokens != nil && *r.Tokens != 0) || (r.MicroUSD != nil && *r.MicroUSD != 0) || (r.Iterations != nil && *r.Iterations != 0)) {
				b, _ := json.Marshal(r)
				t.Errorf("reserved at the end: %s", b)
			}
			if st.Live != 0 {
				t.Errorf("%d workers live at the end", st.Live)
			}
			if known := st.Spent != nil && st.Spent.Tokens != nil; known != tc.known || (known && *st.Spent.Tokens != tc.tokens) {
				b, _ := json.Marshal(st.Spent)
				t.Errorf("state.json spent %s, want %d tokens known %v", b, tc.tokens, tc.known)
			}
		})
	}
}

// scriptedWorker is a worker provider playing script.
func scriptedWorker(script string) func(t *testing.T) contract.Provider {
	return func(t *testing.T) contract.Provider {
		t.Helper()
		var s scripted.Script
		if err := json.Unmarshal([]byte(script), &s); err != nil {
			t.Fatal(err)
		}
		return scripted.New(&s, scripted.Options{})
	}
}
