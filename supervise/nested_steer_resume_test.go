package supervise_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/supervise"
)

// leadSteerText is the steer the nested lead manager is sent.
const leadSteerText = "LEAD-STEER: cover the error paths"

// cutAtLeadSteer truncates dir's journal at the lead's transcript record
// whose user message holds leadSteerText: without it (the process died
// before its append landed), or with it (right after). Nothing the
// process journaled later survives.
func cutAtLeadSteer(t *testing.T, dir string, keep bool) {
	t.Helper()
	if !cutJournalAtTranscript(t, dir, "run1:s1", keep, func(r supervise.Record) bool {
		return slices.ContainsFunc(r.Messages, func(m supervise.TranscriptMessage) bool {
			return m.Role == contract.ChatUser && m.Content != nil && strings.Contains(*m.Content, leadSteerText)
		})
	}) {
		t.Fatal("the journal holds no lead transcript record of the steer")
	}
}

// leadSteerAcks are the steer acknowledgements the run dir's journal
// holds for op under the lead's node.
func leadSteerAcks(t *testing.T, dir, op string) []supervise.SteerAck {
	t.Helper()
	recs, _, err := supervise.ReadRunDir(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []supervise.SteerAck
	for _, r := range recs {
		if r.Kind != supervise.KindSteerAcknowledged || r.Node != "run1:s1" {
			continue
		}
		var a supervise.SteerAck
		if err := canonjson.FromValue(r.Data, &a); err != nil {
			t.Fatalf("acknowledgement %v: %v", r.Data, err)
		}
		if a.OperationID == op {
			out = append(out, a)
		}
	}
	return out
}

// leadSteerOp returns the operation id of the one steer the journal
// holds as requested to the lead.
func leadSteerOp(t *testing.T, dir string) string {
	t.Helper()
	recs, _, err := supervise.ReadRunDir(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	var ops []string
	for _, r := range recs {
		if r.Kind != supervise.KindSteerRequested || r.Node != "run1:s1" {
			continue
		}
		var q supervise.SteerRequest
		if err := canonjson.FromValue(r.Data, &q); err != nil {
			t.Fatalf("request %v: %v", r.Data, err)
		}
		ops = append(ops, q.OperationID)
	}
	if len(ops) != 1 {
		t.Fatalf("the journal holds steer requests %q to the lead, want one", ops)
	}
	return ops[0]
}

// Issue 13 at depth (§3.6: a steer is delivered once the receiver's
// journaled transcript holds it; nested managers route like the root): a
// nested router manager (the lead) is steered — by the root manager's
// steer_agent, or by another process's steer file naming its node — and
// the process ends at the journal append of the lead's transcript
// message holding the steer, before it lands or right after. Resumed,
// the lead driven again sees the steer exactly once, as the last user
// message (re-offered when the append never landed, not again when it
// did), and the journal acknowledges it delivered, once. The root's
// steer_agent call run again does not steer again and does not
// acknowledge the steer itself: the re-offer owns the acknowledgement,
// and the call answers its outcome, or unknown while it is open
// (replayed either way).
func TestResumedNestedManagerGetsItsUnacknowledgedSteerOnce(t *testing.T) {
	const fileOp = "op-lead-window"
	for _, via := range []string{"steer_agent", "steer file"} {
		for _, window := range []string{"before", "after"} {
			t.Run(via+"/"+window+" the append", func(t *testing.T) {
				ctx := context.Background()
				dir := t.TempDir()
				plan := []contract.ChatEvent{
					call("r1", supervise.VerbSpawnWorker, map[string]any{"profile": "lead", "task": "lead the team", "label": "lead",
						"budget": map[string]any{"maxTokens": 2000, "maxIterations": 10}}),
					call("r2", supervise.VerbSteerAgent, map[string]any{"workerId": "run1:s1", "instruction": leadSteerText}),
					call("r3", supervise.VerbAwaitEvent, map[string]any{"timeoutMs": 60000}),
				}
				if via == "steer file" {
					plan = []contract.ChatEvent{plan[0], plan[2]}
				}
				lead1 := scripted.NewChatModel(scripted.ChatScript{Turns: []scripted.ChatTurn{
					{Events: []contract.ChatEvent{call("l1", supervise.VerbReadJournal, map[string]any{}), managerUsage(5, 1, 0)},
						Expect: func([]contract.ChatMessage, []contract.Tool) error {
							if via == "steer file" {
								if _, err := supervise.WriteWorkerSteer(ctx, dir, "run1:s1", supervise.WorkerSteer{OperationID: fileOp, Message: leadSteerText, Source: "cli"}); err != nil {
									return err
								}
							}
							return untilInboxPosted(ctx, dir, "run1:s1")
						}},
					{Events: []contract.ChatEvent{scripted.Text("lead: noted, DONE"), managerUsage(5, 1, 0)},
						Expect: func(msgs []contract.ChatMessage, _ []contract.Tool) error { return endsOnUser(msgs, leadSteerText) }},
				}})
				options := func(root contract.ChatModel, lead contract.ChatModel) supervise.Options {
					o := nestedOptions(t, newCounting(t, workerProvider(t)), root, func() contract.ChatModel { return lead })
					o.Profiles["lead"] = leadProfile(t, append(slices.Clone(leadVerbs), supervise.VerbReadJournal)...)
					o.RunDir = dir
					return o
				}
				mgr := managerProfile(t, supervise.VerbSpawnWorker, supervise.VerbSteerAgent, supervise.VerbAwaitEvent)
				res, err := supervise.Supervise(ctx, mgr, "ship", options(&stepper{plan: plan}, lead1))
				if err != nil || res.Status != supervise.StatusWinner || lead1.Calls() != 2 {
					t.Fatalf("the first process: %v, %s %+v, lead calls %d, tree %+v", err, res.Status, res.Error, lead1.Calls(), res.Tree)
				}
				op := leadSteerOp(t, dir)
				// The process ended at the lead's append: nothing it
				// journaled later survives, and a steer file's
				// acknowledgement is still the claim it wrote first.
				cutAtLeadSteer(t, dir, window == "after")
				if via == "steer file" {
					sum := sha256.Sum256([]byte(fileOp))
					claim := filepath.Join(dir, supervise.SteerAcksDir, hex.EncodeToString(sum[:])+".json")
					if err := os.WriteFile(claim, []byte(`{"operationId": "`+fileOp+`", "worker": "run1:s1", "effect": "unknown"}`), 0o600); err != nil {
						t.Fatal(err)
					}
				}
				if acks := leadSteerAcks(t, dir, op); len(acks) != 0 {
					t.Fatalf("the cut journal acknowledges the steer %+v, want nothing", acks)
				}

				lead2 := scripted.NewChatModel(scripted.ChatScript{Turns: []scripted.ChatTurn{
					{Events: []contract.ChatEvent{scripted.Text("lead: noted, DONE"), managerUsage(5, 1, 0)},
						Expect: func(msgs []contract.ChatMessage, _ []contract.Tool) error { return endsOnUser(msgs, leadSteerText) }},
				}})
				root2 := &stepper{plan: plan}
				o := options(root2, lead2)
				o.Resume = true
				res, err = supervise.Supervise(ctx, mgr, "ship", o)
				if err != nil || res.Status != supervise.StatusWinner || res.Winner.Text != "lead: noted, DONE" {
					t.Fatalf("the resumed run: %v, %s winner %+v error %+v", err, res.Status, res.Winner, res.Error)
				}
				if lead2.Calls() != 1 {
					t.Errorf("the resumed lead made %d model calls, want 1", lead2.Calls())
				}
				acks := leadSteerAcks(t, dir, op)
				if len(acks) != 1 || acks[0].Effect != supervise.SteerDelivered {
					t.Errorf("journaled acknowledgements of the lead's steer %+v, want one, delivered", acks)
				}
				if via == "steer file" {
					ack, err := supervise.ReadSteerAck(ctx, dir, fileOp)
					if err != nil || ack == nil || ack.Effect != supervise.SteerDelivered || ack.Worker != "run1:s1" {
						t.Errorf("the steer file's acknowledgement after resume %+v (%v), want delivered to run1:s1", ack, err)
					}
					return
				}
				// Run again before or after the re-offer's outcome is
				// journaled: unknown then, else that outcome.
				if got := root2.resultOf("r2"); !strings.Contains(got, `"replayed":true`) ||
					!strings.Contains(got, `"outcome":"unknown"`) && !strings.Contains(got, `"outcome":"delivered"`) {
					t.Errorf("the root's steer_agent run again answered %q, want unknown or delivered, replayed", got)
				}
			})
		}
	}
}
