package supervise_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/supervise"
)

// cutAfterToolResult truncates dir's journal just after node's
// transcript record holding the result of its tool call callID: the
// process died there.
func cutAfterToolResult(t *testing.T, dir string, node supervise.NodeID, callID string) {
	t.Helper()
	if !cutJournalAtTranscript(t, dir, node, true, func(r supervise.Record) bool {
		return slices.ContainsFunc(r.Messages, func(m supervise.TranscriptMessage) bool {
			return m.Role == contract.ChatTool && m.ToolCallID == callID
		})
	}) {
		t.Fatalf("the journal holds no transcript record of %s's result of %s", node, callID)
	}
}

// submittedRecords are dir's journaled submitted records.
func submittedRecords(t *testing.T, dir string) []supervise.Record {
	t.Helper()
	return runDirRecordsOfKind(t, dir, supervise.KindSubmitted)
}

// Issue 13, a nested manager's submit_result: the lead's passing result
// was accepted and the tool result journaled in its conversation, and
// the process died before the lead settled. Resumed, the lead driven
// again from its conversation does not run its submit_result again; it
// settles with exactly the result it submitted — not its brain's final
// text — and a second passing submission is refused
// earlier-passing-result, as within one process. Before the fix the
// accepted result lived only in the dead process's memory: the lead
// settled with its brain's final text, or with the second submission.
func TestResumedNestedManagerSettlesWithItsAcceptedSubmission(t *testing.T) {
	const submitted = "lead: SUBMITTED DONE"
	for _, tc := range []struct {
		name string
		// resumed is the resumed lead's turns after its journaled
		// submit_result's result.
		resumed func(t *testing.T) []scripted.ChatTurn
	}{
		{"answers", func(*testing.T) []scripted.ChatTurn {
			return []scripted.ChatTurn{turn(scripted.Text("lead: wrapping up"), managerUsage(5, 1, 0))}
		}},
		{"submits again", func(t *testing.T) []scripted.ChatTurn {
			return []scripted.ChatTurn{
				turn(call("l2", supervise.VerbSubmitResult, map[string]any{"result": "lead: another DONE"}), managerUsage(5, 1, 0)),
				{Events: []contract.ChatEvent{scripted.Text("lead: wrapping up"), managerUsage(5, 1, 0)},
					Expect: func(msgs []contract.ChatMessage, _ []contract.Tool) error {
						if name, res := lastCall(msgs); name != supervise.VerbSubmitResult || !strings.Contains(res, "earlier-passing-result") {
							t.Errorf("the resumed lead's second submit_result answered %q, want earlier-passing-result", res)
						}
						return nil
					}},
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			dir := t.TempDir()
			plan := []contract.ChatEvent{
				call("r1", supervise.VerbSpawnWorker, map[string]any{"profile": "lead", "task": "lead the team", "label": "lead",
					"budget": map[string]any{"maxTokens": 2000, "maxIterations": 10}}),
				call("r2", supervise.VerbAwaitEvent, map[string]any{"timeoutMs": 60000}),
			}
			mgr := managerProfile(t, supervise.VerbSpawnWorker, supervise.VerbAwaitEvent)
			run := func(lead contract.ChatModel, resume bool) supervise.SupervisedResult {
				t.Helper()
				o := nestedOptions(t, newCounting(t, workerProvider(t)), &stepper{plan: plan}, func() contract.ChatModel { return lead })
				o.RunDir, o.Resume = dir, resume
				res, err := supervise.Supervise(ctx, mgr, "ship", o)
				if err != nil {
					t.Fatal(err)
				}
				return res
			}
			lead1 := scripted.NewChatModel(scripted.ChatScript{Turns: []scripted.ChatTurn{
				turn(call("l1", supervise.VerbSubmitResult, map[string]any{"result": submitted}), managerUsage(5, 1, 0)),
				turn(scripted.Text("lead: wrapping up"), managerUsage(5, 1, 0)),
			}})
			if res := run(lead1, false); res.Status != supervise.StatusWinner || res.Winner.Text != submitted {
				t.Fatalf("the uninterrupted run: %s %s, winner %+v", res.Status, res.Reason, res.Winner)
			}
			// The process died once the lead's submit_result's result
			// was journaled, before the lead settled.
			cutAfterToolResult(t, dir, "run1:s1", "l1")

			lead2 := scripted.NewChatModel(scripted.ChatScript{Turns: tc.resumed(t)})
			res := run(lead2, true)
			if res.Status != supervise.StatusWinner || res.Winner.Node != "run1:s1" || res.Winner.Text != submitted || res.Winner.Submitted {
				t.Fatalf("the resumed run: %s %s, winner %+v, want the lead's settled output %q", res.Status, res.Reason, res.Winner, submitted)
			}
			if lead2.Calls() != len(tc.resumed(t)) {
				t.Errorf("the resumed lead made %d model calls, want %d", lead2.Calls(), len(tc.resumed(t)))
			}
			ref, err := canonjson.Digest(canonjson.ObjectValue([]canonjson.Member{{Name: "text", Value: canonjson.StringValue(submitted)}}))
			if err != nil {
				t.Fatal(err)
			}
			var lead *supervise.WorkerSummary
			for i := range res.Tree {
				if res.Tree[i].ID == "run1:s1" {
					lead = &res.Tree[i]
				}
			}
			if lead == nil || lead.State != supervise.StateDone || !lead.Delivered || lead.Verdict == nil || !lead.Verdict.Passed || lead.OutRef != ref {
				t.Errorf("the lead's settlement %+v, want done, delivered, passed, outRef %s", lead, ref)
			}
			// Journaled once, under the lead's node: never the run's own.
			if subs := submittedRecords(t, dir); len(subs) != 1 || subs[0].Node != "run1:s1" || subs[0].OutRef != ref ||
				subs[0].Verdict == nil || !subs[0].Verdict.Passed {
				t.Errorf("journaled submissions %+v, want one under run1:s1, outRef %s, passed", subs, ref)
			}
		})
	}
}
