package supervise_test

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/supervise"
)

// analystModel is a chat model for analysts: turn n (from 0) answers
// with reply(n, messages); it records the tools each turn was offered and
// the tool messages it was sent. Safe for concurrent use.
type analystModel struct {
	reply func(turn int, messages []contract.ChatMessage) []contract.ChatEvent

	mu      sync.Mutex
	turns   int
	offered [][]string
	results []string
}

func (m *analystModel) Turn(_ context.Context, messages []contract.ChatMessage, tools []contract.Tool) iter.Seq2[contract.ChatEvent, error] {
	m.mu.Lock()
	n := m.turns
	m.turns++
	var names []string
	for _, t := range tools {
		names = append(names, t.Name)
	}
	m.offered = append(m.offered, names)
	for _, msg := range messages {
		if msg.Role == contract.ChatTool && msg.Content != nil {
			m.results = append(m.results, *msg.Content)
		}
	}
	m.mu.Unlock()
	evs := m.reply(n, messages)
	return func(yield func(contract.ChatEvent, error) bool) {
		for _, e := range evs {
			if !yield(e, nil) {
				return
			}
		}
	}
}

func (m *analystModel) calls() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.turns
}

// toolCall is a call of trace tool name with args.
func toolCall(id, name string, args any) contract.ChatEvent {
	b, _ := json.Marshal(args)
	return scripted.Call(id, name, string(b))
}

// runLens runs lens over the alpha writer's settlement with model as
// Options.AnalystModel, and returns the finding the coordination log
// holds.
func runLens(t *testing.T, lens supervise.Lens, model contract.ChatModel) supervise.FindingRecord {
	t.Helper()
	dir := t.TempDir()
	o := baseOptions(t, analystExecutor(t), nil)
	o.RunDir, o.Analysts, o.AnalystModel = dir, []supervise.Lens{lens}, model
	o.Budget.Iterations = new(int64(40))
	o.Brain = analyseAlpha(t, lens.ID)
	if _, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o); err != nil {
		t.Fatal(err)
	}
	got := findings(t, dir)
	if len(got) != 1 {
		t.Fatalf("findings %+v, want one", got)
	}
	return got[0]
}

func testLens(group supervise.ToolGroup, limits *supervise.LensLimits) supervise.Lens {
	return supervise.Lens{ID: "probe", Description: "Probes the trace tools.", Area: "testing", Question: "What did the worker do?",
		Instructions: "Use your tools, then answer.", ToolGroup: group, Limits: limits}
}

// §9 define_analyst tool groups: each group mounts exactly its trace
// tools for the analyst's model — all seven for all, three and no deep
// reads for discovery, and so on (the reference's groups).
func TestAnalystToolGroupsMountTheirTools(t *testing.T) {
	all := []string{"getDatasetOverview", "queryTraces", "countTraces", "viewTrace", "viewSpans", "searchTrace", "searchSpan"}
	for _, tc := range []struct {
		group supervise.ToolGroup
		want  []string
	}{
		{supervise.ToolGroupAll, all},
		{supervise.ToolGroupDiscovery, []string{"getDatasetOverview", "queryTraces", "countTraces"}},
		{supervise.ToolGroupDiscoveryAndRead, []string{"getDatasetOverview", "queryTraces", "countTraces", "viewTrace", "viewSpans"}},
		{supervise.ToolGroupDiscoveryAndSearch, []string{"getDatasetOverview", "queryTraces", "countTraces", "searchTrace", "searchSpan"}},
		{supervise.ToolGroupTargeted, []string{"getDatasetOverview", "queryTraces", "viewSpans", "searchSpan"}},
		{supervise.ToolGroupSingleTrace, []string{"getDatasetOverview", "viewTrace", "viewSpans", "searchTrace", "searchSpan"}},
	} {
		t.Run(string(tc.group), func(t *testing.T) {
			if diff := cmp.Diff(tc.want, supervise.ToolGroupTools(tc.group)); diff != "" {
				t.Errorf("ToolGroupTools (-want +got):\n%s", diff)
			}
			m := &analystModel{reply: func(int, []contract.ChatMessage) []contract.ChatEvent {
				return []contract.ChatEvent{scripted.Text("nothing found"), managerUsage(5, 2, 0.00001)}
			}}
			runLens(t, testLens(tc.group, nil), m)
			if len(m.offered) != 1 {
				t.Fatalf("the analyst's model was called %d times, want once", len(m.offered))
			}
			got := slices.Clone(m.offered[0])
			slices.Sort(got)
			want := slices.Clone(tc.want)
			slices.Sort(want)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("tools offered to the analyst's model (-want +got):\n%s", diff)
			}
		})
	}
}

// The trace tools read the settled workers: the overview counts them,
// viewTrace returns the analysed worker's task and output, searchTrace
// finds its text; a bad pattern and an unknown trace are refused as tool
// results, not failures. The analyst's answer is the finding.
func TestAnalystTraceToolsReadTheSettledWorker(t *testing.T) {
	m := &analystModel{reply: func(turn int, _ []contract.ChatMessage) []contract.ChatEvent {
		switch turn {
		case 0:
			return []contract.ChatEvent{toolCall("o", "getDatasetOverview", map[string]any{}),
				toolCall("v", "viewTrace", map[string]any{"traceId": "run1:s1"}),
				toolCall("s", "searchTrace", map[string]any{"pattern": "alpha: D[A-Z]+"}),
				toolCall("b", "searchTrace", map[string]any{"pattern": "("}),
				toolCall("u", "viewSpans", map[string]any{"traceId": "run1:s9", "from": 0, "to": 1}),
				managerUsage(20, 5, 0.0001)}
		default:
			return []contract.ChatEvent{scripted.Text("alpha says DONE and cites nothing"), managerUsage(30, 6, 0.0001)}
		}
	}}
	f := runLens(t, testLens(supervise.ToolGroupAll, nil), m)
	if f.Findings != "alpha says DONE and cites nothing" || f.State != supervise.StateDone || f.Reason != "" {
		t.Errorf("finding %+v", f)
	}
	joined := strings.Join(m.results, "\n")
	for _, want := range []string{`"traces":1`, `"analysedWorkerId":"run1:s1"`, `"kind":"task","text":"alpha"`, `"kind":"output"`,
		`"excerpt":"alpha: DONE"`, "invalid-pattern", "unknown-trace"} {
		if !strings.Contains(joined, want) {
			t.Errorf("the tool results lack %s:\n%s", want, joined)
		}
	}
}

// §9 limits are enforced, each by a test that exceeds it: past llmCalls
// (or iterations, when smaller) the model is not called again; past
// toolCalls a call is refused as a tool result; output past outputChars
// is clipped. An analyst cut short settles done with what it found, and
// its finding names the limit.
func TestAnalystLimitsEnforced(t *testing.T) {
	always := func(turn int, _ []contract.ChatMessage) []contract.ChatEvent {
		return []contract.ChatEvent{scripted.Text(fmt.Sprintf("step %d. ", turn)),
			toolCall(fmt.Sprintf("c%d", turn), "queryTraces", map[string]any{"offset": turn}), managerUsage(10, 2, 0.00001)}
	}
	for _, tc := range []struct {
		name       string
		limits     *supervise.LensLimits
		reply      func(int, []contract.ChatMessage) []contract.ChatEvent
		wantCalls  int
		wantReason string
		check      func(t *testing.T, f supervise.FindingRecord, m *analystModel)
	}{
		{name: "llmCalls", limits: &supervise.LensLimits{LLMCalls: new(2)}, reply: always, wantCalls: 2,
			wantReason: "stopped at the lens's maxLlmCalls limit"},
		{name: "llmCalls-max", limits: nil, reply: always, wantCalls: supervise.MaxLensLLMCalls,
			wantReason: "stopped at the lens's maxLlmCalls limit"},
		{name: "iterations", limits: &supervise.LensLimits{Iterations: new(3), LLMCalls: new(10)}, reply: always, wantCalls: 3,
			wantReason: "stopped at the lens's maxIterations limit"},
		{name: "toolCalls", limits: &supervise.LensLimits{ToolCalls: new(3)}, wantCalls: 3,
			reply: func(turn int, _ []contract.ChatMessage) []contract.ChatEvent {
				if turn == 2 {
					return []contract.ChatEvent{scripted.Text("done looking"), managerUsage(10, 2, 0.00001)}
				}
				return []contract.ChatEvent{toolCall(fmt.Sprintf("a%d", turn), "countTraces", map[string]any{"filters": map[string]any{"label": fmt.Sprint("a", turn)}}),
					toolCall(fmt.Sprintf("b%d", turn), "countTraces", map[string]any{"filters": map[string]any{"label": fmt.Sprint("b", turn)}}), managerUsage(10, 2, 0.00001)}
			},
			wantReason: "stopped at the lens's maxToolCalls limit",
			check: func(t *testing.T, f supervise.FindingRecord, m *analystModel) {
				refused := 0
				for _, r := range m.results {
					if strings.Contains(r, "tool-call-limit") {
						refused++
					}
				}
				if refused != 1 {
					t.Errorf("%d calls were refused tool-call-limit, want the 4th of 4: %q", refused, m.results)
				}
			}},
		{name: "outputChars", limits: &supervise.LensLimits{OutputChars: new(50)}, wantCalls: 1,
			reply: func(int, []contract.ChatMessage) []contract.ChatEvent {
				return []contract.ChatEvent{scripted.Text(strings.Repeat("finding ", 40)), managerUsage(10, 2, 0.00001)}
			},
			wantReason: "stopped at the lens's maxOutputChars limit",
			check: func(t *testing.T, f supervise.FindingRecord, _ *analystModel) {
				if len(f.Findings) > 50+len("…") || !strings.HasSuffix(f.Findings, "…") {
					t.Errorf("findings are %d bytes (%q), want clipped to 50 and marked", len(f.Findings), f.Findings)
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := &analystModel{reply: tc.reply}
			f := runLens(t, testLens(supervise.ToolGroupAll, tc.limits), m)
			if got := m.calls(); got != tc.wantCalls {
				t.Errorf("the analyst's model was called %d times, want %d", got, tc.wantCalls)
			}
			if f.State != supervise.StateDone || f.Reason != tc.wantReason {
				t.Errorf("finding state %s reason %q, want done and %q", f.State, f.Reason, tc.wantReason)
			}
			if tc.check != nil {
				tc.check(t, f, m)
			}
		})
	}
}
