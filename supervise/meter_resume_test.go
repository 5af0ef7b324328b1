package supervise_test

import (
	"bytes"
	"context"
	"encoding/json"
	"iter"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/supervise"
)

// calls is how many model turns s was asked for.
func (s *stepper) calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.requests)
}

// chargesTurn reports whether r charges one of node's model turns: a
// metered record, or a transcript record carrying the turn's spend.
func chargesTurn(r supervise.Record, node supervise.NodeID) bool {
	return r.Node == node && r.Spent != nil && (r.Kind == supervise.KindMetered || r.Kind == supervise.KindTranscript)
}

// journalLines are dir's spawn-journal lines and the path they are in.
func journalLines(t *testing.T, dir string) ([][]byte, string) {
	t.Helper()
	path := filepath.Join(dir, supervise.SpawnJournalFile)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.SplitAfter(data, []byte("\n")), path
}

// cutAtNthCharge truncates dir's journal just after the n-th record that
// charges one of node's model turns: the first durable record of that
// turn. The process died there.
func cutAtNthCharge(t *testing.T, dir string, node supervise.NodeID, n int) {
	t.Helper()
	lines, path := journalLines(t, dir)
	for i, line := range lines {
		var r supervise.Record
		if json.Unmarshal(line, &r) != nil || !chargesTurn(r, node) {
			continue
		}
		if n--; n == 0 {
			if err := os.WriteFile(path, bytes.Join(lines[:i+1], nil), 0o600); err != nil {
				t.Fatal(err)
			}
			return
		}
	}
	t.Fatalf("the journal charges too few turns of %s", node)
}

// asOlderJournal rewrites dir's journal as a version before transcript
// records carried their turn's spend wrote it: a metered record of the
// spend, then the transcript record without it.
func asOlderJournal(t *testing.T, dir string) {
	t.Helper()
	lines, path := journalLines(t, dir)
	var out [][]byte
	line := func(r supervise.Record) []byte {
		v, err := canonjson.ToValue(r)
		if err != nil {
			t.Fatal(err)
		}
		b, err := canonjson.Canonical(v)
		if err != nil {
			t.Fatal(err)
		}
		return append(b, '\n')
	}
	for _, l := range lines {
		var r supervise.Record
		v, err := canonjson.Decode(bytes.TrimSuffix(l, []byte("\n")))
		if err != nil || canonjson.FromValue(v, &r) != nil || r.Kind != supervise.KindTranscript || r.Spent == nil {
			out = append(out, l)
			continue
		}
		out = append(out, line(supervise.Record{Kind: supervise.KindMetered, Node: r.Node, Spent: r.Spent}))
		r.Spent = nil
		out = append(out, line(r))
	}
	if err := os.WriteFile(path, bytes.Join(out, nil), 0o600); err != nil {
		t.Fatal(err)
	}
}

// cutAfterNthAssistant truncates dir's journal just after the record
// holding node's n-th assistant message: the turn's records all landed.
func cutAfterNthAssistant(t *testing.T, dir string, node supervise.NodeID, n int) {
	t.Helper()
	lines, path := journalLines(t, dir)
	for i, line := range lines {
		var r supervise.Record
		if json.Unmarshal(line, &r) != nil || r.Kind != supervise.KindTranscript || r.Node != node {
			continue
		}
		for _, m := range r.Messages {
			if m.Role != contract.ChatAssistant {
				continue
			}
			if n--; n == 0 {
				if err := os.WriteFile(path, bytes.Join(lines[:i+1], nil), 0o600); err != nil {
					t.Fatal(err)
				}
				return
			}
		}
	}
	t.Fatalf("the journal holds too few assistant messages of %s", node)
}

// spendRow is a comparable spend: tokens, iterations, micro-dollars,
// -1 for unknown.
type spendRow struct{ Tokens, Iterations, MicroUSD int64 }

func rowOf(sp ledger.Spend) spendRow {
	v := func(p *int64) int64 {
		if p == nil {
			return -1
		}
		return *p
	}
	return spendRow{v(sp.Tokens), v(sp.Iterations), v(sp.MicroUSD)}
}

// Issue 13, a router manager's model turn: its spend and the assistant
// message it answered with are one durable record, so a process that
// died once the turn's first record landed resumes with the turn charged
// once and not asked again — the root manager's turn and a nested
// manager's alike. Before, the turn's metered record landed first: cut
// there, the resumed manager found no answer, asked the model again and
// paid the turn twice. A journal an older version wrote (a metered
// record, then the transcript record) replays as before: cut after the
// turn's records, the turn is charged once and not asked again.
func TestResumedManagerTurnIsChargedOnceAndNotAskedAgain(t *testing.T) {
	rootPlan := []contract.ChatEvent{
		call("r1", supervise.VerbSpawnWorker, map[string]any{"profile": "lead", "task": "lead the team", "label": "lead",
			"budget": map[string]any{"maxTokens": 2000, "maxIterations": 10}}),
		call("r2", supervise.VerbAwaitEvent, map[string]any{"timeoutMs": 60000}),
	}
	leadPlan := []contract.ChatEvent{
		call("l1", supervise.VerbListQuestions, map[string]any{}),
		call("l2", supervise.VerbListQuestions, map[string]any{}),
	}
	const turns = 3 // each manager's: its plan's two calls and its answer
	mgr := managerProfile(t, supervise.VerbSpawnWorker, supervise.VerbAwaitEvent)
	run := func(t *testing.T, dir string, resume bool) (supervise.SupervisedResult, *stepper, *stepper) {
		t.Helper()
		root, lead := &stepper{plan: rootPlan}, &stepper{plan: leadPlan}
		o := nestedOptions(t, newCounting(t, workerProvider(t)), root, func() contract.ChatModel { return lead })
		o.RunDir, o.Resume = dir, resume
		res, err := supervise.Supervise(context.Background(), mgr, "ship", o)
		if err != nil {
			t.Fatal(err)
		}
		return res, root, lead
	}
	leadSpent := func(res supervise.SupervisedResult) spendRow {
		for _, n := range res.Tree {
			if n.ID == "run1:s1" && n.Settlement != nil {
				return rowOf(n.Settlement.Spent)
			}
		}
		return spendRow{-2, -2, -2}
	}
	want, _, _ := run(t, t.TempDir(), false)
	if want.Status != supervise.StatusWinner {
		t.Fatalf("the uninterrupted run: %s %s", want.Status, want.Reason)
	}
	for _, node := range []supervise.NodeID{"run1", "run1:s1"} {
		for _, tc := range []struct {
			name string
			cut  func(t *testing.T, dir string)
		}{
			{"cut at the turn's first record", func(t *testing.T, dir string) { cutAtNthCharge(t, dir, node, 2) }},
			{"an older version's journal cut after the turn's records", func(t *testing.T, dir string) {
				asOlderJournal(t, dir)
				cutAfterNthAssistant(t, dir, node, 2)
			}},
		} {
			t.Run(string(node)+"/"+tc.name, func(t *testing.T) {
				dir := t.TempDir()
				if res, _, _ := run(t, dir, false); res.Status != supervise.StatusWinner {
					t.Fatalf("the first process: %s %s", res.Status, res.Reason)
				}
				// The process died once node's second turn's first
				// record was durable.
				tc.cut(t, dir)
				got, root, lead := run(t, dir, true)
				if got.Status != supervise.StatusWinner {
					t.Fatalf("the resumed run: %s %s", got.Status, got.Reason)
				}
				model := root
				if node != "run1" {
					model = lead
				}
				if n := model.calls(); n != turns-2 {
					t.Errorf("the resumed %s was asked %d model turns, want %d: its second turn is not asked again", node, n, turns-2)
				}
				type spends struct {
					Run, Driver, Lead spendRow
				}
				sum := func(r supervise.SupervisedResult) spends {
					return spends{
						Run:    spendRow{r.Spent.Tokens, r.Spent.Iterations, r.Spent.MicroUSD},
						Driver: spendRow{r.Breakdown.DriverInference.Tokens, r.Breakdown.DriverInference.Iterations, r.Breakdown.DriverInference.MicroUSD},
						Lead:   leadSpent(r),
					}
				}
				if diff := cmp.Diff(sum(want), sum(got)); diff != "" {
					t.Errorf("the resumed run's spend, each turn charged once, against the uninterrupted run's (-want +got):\n%s", diff)
				}
			})
		}
	}
}

// failingTurn is a manager model whose every turn reports its usage
// and then fails in-band.
type failingTurn struct{}

func (failingTurn) Turn(context.Context, []contract.ChatMessage, []contract.Tool) iter.Seq2[contract.ChatEvent, error] {
	return func(yield func(contract.ChatEvent, error) bool) {
		if yield(managerUsage(10, 5, 0.0001), nil) {
			yield(contract.ChatEvent{Kind: contract.ChatFailure, Failure: "the model is overloaded", StopReason: "overloaded"}, nil)
		}
	}
}

// A turn that failed said nothing the transcript keeps: no checkpoint
// carries its spend, and it still gets its own metered record — the
// root manager's charged to the run, a nested manager's settled with
// its node.
func TestFailedManagerTurnStillChargesItsSpend(t *testing.T) {
	const tokens, microUSD = 15, 100
	for _, node := range []supervise.NodeID{"run1", "run1:s1"} {
		t.Run(string(node), func(t *testing.T) {
			var root, lead contract.ChatModel = failingTurn{}, failingTurn{}
			if node != "run1" {
				root = &stepper{plan: []contract.ChatEvent{
					call("r1", supervise.VerbSpawnWorker, map[string]any{"profile": "lead", "task": "lead the team", "label": "lead",
						"budget": map[string]any{"maxTokens": 2000, "maxIterations": 10}}),
					call("r2", supervise.VerbAwaitEvent, map[string]any{"timeoutMs": 60000}),
				}}
			}
			o := nestedOptions(t, newCounting(t, workerProvider(t)), root, func() contract.ChatModel { return lead })
			o.RunDir = t.TempDir()
			res, _ := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker, supervise.VerbAwaitEvent), "ship", o)
			recs, _, err := supervise.ReadRunDir(context.Background(), o.RunDir)
			if err != nil {
				t.Fatal(err)
			}
			var charged []supervise.Record
			for _, r := range recs {
				if chargesTurn(r, node) {
					charged = append(charged, r)
				}
			}
			if len(charged) != 1 || charged[0].Kind != supervise.KindMetered ||
				rowOf(ledger.Spend{Tokens: charged[0].Spent.Tokens, Iterations: charged[0].Spent.Iterations, MicroUSD: charged[0].Spent.MicroUSD}) != (spendRow{tokens, 0, microUSD}) {
				t.Fatalf("the journal charges %s's turns with %+v, want one metered record of its failed turn", node, charged)
			}
			if node == "run1" {
				if d := res.Breakdown.DriverInference; d.Tokens != tokens || d.MicroUSD != microUSD {
					t.Errorf("the manager's charged spend %+v, want its failed turn's", d)
				}
				return
			}
			for _, n := range res.Tree {
				if n.ID == node && (n.Settlement == nil || rowOf(n.Settlement.Spent) != (spendRow{tokens, 0, microUSD})) {
					t.Errorf("the lead's settlement %+v, want its failed turn's spend", n.Settlement)
				}
			}
		})
	}
}
