package supervise_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/supervise"
)

// managerTurns is one scripted manager run, three model turns of known
// usage: spawn an alpha writer, await it, answer.
var managerTurns = []struct {
	in, out int64
	usd     float64
}{{10, 5, 0.0001}, {20, 5, 0.0002}, {30, 5, 0.0003}}

func scriptedManager() *scripted.ChatModel {
	args := []contract.ChatEvent{
		call("c1", supervise.VerbSpawnWorker, map[string]any{"profile": "writer", "task": "write alpha", "label": "a"}),
		call("c2", supervise.VerbAwaitEvent, map[string]any{"timeoutMs": 60000}),
		scripted.Text("alpha DONE"),
	}
	var turns []scripted.ChatTurn
	for i, u := range managerTurns {
		turns = append(turns, turn(args[i], managerUsage(u.in, u.out, u.usd)))
	}
	return scripted.NewChatModel(scripted.ChatScript{Turns: turns})
}

// harnessShaped is a root brain shaped as an external harness's
// (coordmcp.HarnessBrain): each of the same three model turns is a
// DriverTurn whose one model call is metered as the harness reports it,
// and whose end reports the turn's total.
func harnessShaped() supervise.Brain {
	return supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, task string) (supervise.BrainReport, error) {
		for i, u := range managerTurns {
			dt, err := c.OpenDriverTurn(ctx)
			if err != nil {
				return supervise.BrainReport{}, err
			}
			usage := ledger.Usage{InputTokens: ledger.ExactAmount(u.in), OutputTokens: ledger.ExactAmount(u.out), CostUSD: ledger.ExactAmount(u.usd)}
			if err := dt.Meter(ctx, usage); err != nil {
				return supervise.BrainReport{}, err
			}
			switch i {
			case 0:
				if _, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "writer", Task: "write alpha", Label: "a"}); err != nil {
					return supervise.BrainReport{}, err
				}
			case 1:
				if _, err := c.Await(ctx, supervise.AwaitArgs{TimeoutMS: 60000}); err != nil {
					return supervise.BrainReport{}, err
				}
			}
			if err := dt.End(ctx, &usage); err != nil {
				return supervise.BrainReport{}, err
			}
		}
		return supervise.BrainReport{Text: "alpha DONE"}, nil
	})
}

// One rule for a manager's own model turns, whatever drives it (spec
// §3.6 spentBreakdown.driverInference; the reference's driver metering,
// tangle-network/agent-runtime src/runtime/supervise/coordination-driver.ts
// "Driver turns never consume the child-iteration budget", iterations 0,
// and supervise.ts driveHarnessFromBackend, which meters a harness
// driver's spend with iterations 0): a manager turn charges its tokens
// and dollars and no iteration. The same three scripted turns through a
// router root manager, a nested router manager and a harness-shaped root
// brain charge 60 + 15 tokens, 600 µ$ and 0 iterations (known); the
// run's iterations are its one worker's.
func TestManagerTurnsChargeNoIterations(t *testing.T) {
	wantDriver := supervise.SpentTotal{Tokens: 75, Iterations: 0, MicroUSD: 600, Resources: map[string]int64{},
		TokensKnown: true, IterationsKnown: true, USDKnown: true}
	for _, tc := range []struct {
		name string
		run  func(t *testing.T) (driver supervise.SpentTotal, res supervise.SupervisedResult)
	}{
		{"router root", func(t *testing.T) (supervise.SpentTotal, supervise.SupervisedResult) {
			o := baseOptions(t, newCounting(t, workerProvider(t)), scriptedManager())
			res, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker, supervise.VerbAwaitEvent), "ship", o)
			if err != nil {
				t.Fatal(err)
			}
			return res.Breakdown.DriverInference, res
		}},
		{"nested router", func(t *testing.T) (supervise.SpentTotal, supervise.SupervisedResult) {
			o := nestedOptions(t, newCounting(t, workerProvider(t)), nil, func() contract.ChatModel { return scriptedManager() })
			// The lead's grant holds its turns and its one writer's
			// reservation (1,000 tokens, 1 iteration, $0.10).
			o.Brain = rootBrainLeadGranted(t, leadGrant(2000, 1, 0.2), nil)
			res, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker, supervise.VerbAwaitEvent), "ship", o)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Tree) == 0 || res.Tree[0].Settlement == nil {
				t.Fatalf("tree %+v, want the lead settled", res.Tree)
			}
			// The lead's own spend is its node's settlement: its turns.
			sp := res.Tree[0].Settlement.Spent
			got := supervise.SpentTotal{Resources: map[string]int64{}, TokensKnown: sp.Tokens != nil, IterationsKnown: sp.Iterations != nil, USDKnown: sp.MicroUSD != nil}
			if sp.Tokens != nil {
				got.Tokens = *sp.Tokens
			}
			if sp.Iterations != nil {
				got.Iterations = *sp.Iterations
			}
			if sp.MicroUSD != nil {
				got.MicroUSD = *sp.MicroUSD
			}
			return got, res
		}},
		{"harness-shaped root", func(t *testing.T) (supervise.SpentTotal, supervise.SupervisedResult) {
			o := baseOptions(t, newCounting(t, workerProvider(t)), nil)
			o.Brain = harnessShaped()
			res, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker, supervise.VerbAwaitEvent), "ship", o)
			if err != nil {
				t.Fatal(err)
			}
			return res.Breakdown.DriverInference, res
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			driver, res := tc.run(t)
			if diff := cmp.Diff(wantDriver, driver); diff != "" {
				t.Errorf("manager spend, its turns counting no iteration (-want +got):\n%s", diff)
			}
			// One alpha writer: one iteration, the run's only.
			if res.Spent.Iterations != 1 || !res.Spent.IterationsKnown {
				t.Errorf("run spent %d iterations (known %v), want 1: the worker's turn only", res.Spent.Iterations, res.Spent.IterationsKnown)
			}
		})
	}
}

// A manager's turns never draw on the run's iteration ceiling: with
// maxIterations 1 the same three manager turns leave the one iteration
// to the one worker, which runs and wins, and the pool is conserved
// (free + reserved + committed = total) with exactly 1 iteration
// committed. Were a manager's turn an iteration, the spawn after the
// first turn would be refused and the run end with no winner.
func TestManagerTurnsLeaveTheIterationCeilingToWorkers(t *testing.T) {
	var readout ledger.Readout
	for _, tc := range []struct {
		name  string
		brain func() supervise.Brain
	}{
		{"router root", func() supervise.Brain { return nil }},
		{"harness-shaped root", func() supervise.Brain {
			inner := harnessShaped()
			return supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, task string) (supervise.BrainReport, error) {
				rep, err := inner.Drive(ctx, c, task)
				readout = c.Readout()
				return rep, err
			})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := baseOptions(t, newCounting(t, workerProvider(t)), scriptedManager())
			o.Budget.Iterations = i64(1)
			if b := tc.brain(); b != nil {
				o.Brain = b
			}
			res, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker, supervise.VerbAwaitEvent), "ship", o)
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != supervise.StatusWinner || res.Spent.Iterations != 1 {
				t.Fatalf("status %s (%s), %d iterations spent; want the worker to win with the run's one iteration", res.Status, res.Reason, res.Spent.Iterations)
			}
			if tc.name != "harness-shaped root" {
				return
			}
			checkConservedReadout(t, readout)
			if it := readout.Channels[ledger.ChannelIterations]; it.Committed != 1 || it.Free != 0 || it.Total != 1 {
				t.Errorf("iterations %+v, want 1 committed of 1, none free", it)
			}
		})
	}
}
