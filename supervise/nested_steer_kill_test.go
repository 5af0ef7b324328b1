package supervise_test

import (
	"context"
	"testing"
	"time"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/supervise"
)

const (
	// nestedSteerWindowEnv makes the re-executed test binary run a tree
	// whose nested router manager (the lead, run1:s1) takes a steer and
	// is stopped at the journal append of the transcript message holding
	// it: "before" blocks the append, "after" blocks once it is durable.
	nestedSteerWindowEnv = "AGENTRT_NESTED_STEER_WINDOW_CHILD"
	nestedSteerWindowOp  = "op-lead-kill-window"
)

// nestedSteerWindowOptions are the options of both processes of the
// nested steer window test: the root's caller-owned brain spawns the
// lead (keyed, so a resumed root re-attaches to it) and awaits its
// settlement; the lead is a router manager on lead.
func nestedSteerWindowOptions(dir, store string, lead contract.ChatModel) (supervise.Options, func(), error) {
	o, _, closeStore, err := steerWindowOptions(dir, store, nil)
	if err != nil {
		return o, nil, err
	}
	leadP, err := profile.Parse([]byte(`{"name": "lead", "harness": "cli-base", "model": {"default": "scripted/lead"},
		"tools": {"agent_runtime_coordination_read_journal": true, "agent_runtime_coordination_await_event": true}}`))
	if err != nil {
		closeStore()
		return o, nil, err
	}
	o.Profiles["lead"] = leadP
	tokens, iterations := int64(2_000), int64(5)
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		if _, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "lead", Task: "lead the writers", Key: "lead-1",
			Budget: &supervise.SpawnBudget{Tokens: &tokens, Iterations: &iterations}}); err != nil {
			return supervise.BrainReport{}, err
		}
		_, err := c.Await(ctx, supervise.AwaitArgs{TimeoutMS: 60_000, Kinds: []string{supervise.EventSettled}})
		return supervise.BrainReport{}, err
	})
	o.ManagerBrain = func(p *profile.Profile) supervise.Brain {
		b, err := supervise.NewRouterBrain(p, lead, 0)
		if err != nil {
			panic(err) // the lead profile above is a router manager
		}
		return b
	}
	return o, closeStore, nil
}

// nestedSteerWindowChild is the killed process: the lead's first turn
// calls read_journal while another process's steer file to the lead is
// written and posted to its inbox; the lead's next checkpoint, of the
// user message holding the steer, is where the process stops.
func nestedSteerWindowChild(dir, store string, after bool) error {
	ctx := context.Background()
	lead := scripted.NewChatModel(scripted.ChatScript{Turns: []scripted.ChatTurn{
		{Events: []contract.ChatEvent{call("l1", supervise.VerbReadJournal, map[string]any{}), managerUsage(5, 1, 0)},
			Expect: func([]contract.ChatMessage, []contract.Tool) error {
				if _, err := supervise.WriteWorkerSteer(ctx, dir, "run1:s1", supervise.WorkerSteer{OperationID: nestedSteerWindowOp, Message: leadSteerText, Source: "cli"}); err != nil {
					return err
				}
				return untilInboxPosted(ctx, dir, "run1:s1")
			}},
		{Events: []contract.ChatEvent{scripted.Text("the killed process's lead answered, DONE"), managerUsage(5, 1, 0)}},
	}})
	o, closeStore, err := nestedSteerWindowOptions(dir, store, lead)
	if err != nil {
		return err
	}
	defer closeStore()
	manager, err := processManager()
	if err != nil {
		return err
	}
	ctx = supervise.WithSpawnLogWrapper(ctx, func(sl supervise.SpawnLog) supervise.SpawnLog {
		return holdingSpawnLog{SpawnLog: sl, dir: dir, after: after, node: "run1:s1", text: leadSteerText}
	})
	_, err = supervise.Supervise(ctx, manager, "ship a note", o)
	return err
}

// nestedSteerWindowFromEnv runs the nested steer window child when the
// environment asks for it; TestMain calls it.
func nestedSteerWindowFromEnv() (bool, error) {
	return windowChildFromEnv(nestedSteerWindowEnv, nestedSteerWindowChild, "nested steer window child")
}

// Issue 13 at depth across a SIGKILL (§3.6: a steer is delivered once
// the receiver's journaled transcript holds it; behaviour 48): a real
// supervisor process whose nested router manager (the lead) took another
// process's steer is killed at the journal append of the lead's
// transcript message holding it — before the append, or right after it.
// The sender's acknowledgement is not delivered then. Resumed from the
// same run dir (file journal) or SQLite journal, the root re-attaches to
// the lead by its key, the lead driven again sees the steer exactly once,
// as its last user message (re-offered when the killed append never
// landed, not again when it did), and the journal acknowledges it
// delivered, once.
func TestNestedSteerDeliveredOnlyOnceJournaledAcrossKill(t *testing.T) {
	if testing.Short() {
		t.Skip("re-executes the test binary")
	}
	eachSteerWindow(t, nestedSteerWindowEnv, func(t *testing.T, ctx context.Context, dir, store string, deadline time.Time) {
		checkKilledSteerAck(t, ctx, dir, nestedSteerWindowOp, "the lead's")

		lead := scripted.NewChatModel(scripted.ChatScript{Turns: []scripted.ChatTurn{
			{Events: []contract.ChatEvent{scripted.Text("lead: noted, DONE"), managerUsage(5, 1, 0)},
				Expect: func(msgs []contract.ChatMessage, _ []contract.Tool) error { return endsOnUser(msgs, leadSteerText) }},
		}})
		o, closeStore, err := nestedSteerWindowOptions(dir, store, lead)
		if err != nil {
			t.Fatal(err)
		}
		defer closeStore()
		manager, err := processManager()
		if err != nil {
			t.Fatal(err)
		}
		res, err := superviseWhileHeld(ctx, deadline, manager, "ship a note", o)
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != supervise.StatusWinner || res.Winner.Node != "run1:s1" || res.Winner.Text != "lead: noted, DONE" {
			t.Errorf("the resumed run: %s winner %+v error %+v; want the lead delivered", res.Status, res.Winner, res.Error)
		}
		if lead.Calls() != 1 {
			t.Errorf("the resumed lead made %d model calls, want 1", lead.Calls())
		}
		checkSteerAckDeliveredOnce(t, ctx, dir, store, "run1:s1", nestedSteerWindowOp, "the lead's steer")
	})
}
