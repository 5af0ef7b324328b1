package graph_test

import (
	"context"
	"iter"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/graph"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/supervise"
)

// kbTools is a ResolveSupervisorTools giving each manager a tool
// "kb_note" that answers the node it was resolved for, keeping the
// node contexts resolved and the calls made.
type kbTools struct {
	mu       sync.Mutex
	resolved []supervise.NodeContext
	calls    []supervise.ToolCallContext
}

func (k *kbTools) resolve(_ context.Context, nc supervise.NodeContext) ([]supervise.SupervisorTool, error) {
	k.mu.Lock()
	k.resolved = append(k.resolved, nc)
	k.mu.Unlock()
	return []supervise.SupervisorTool{{Name: "kb_note", Description: "Note a fact for the product.",
		Run: func(_ context.Context, _ canonjson.Value, call supervise.ToolCallContext) (canonjson.Value, error) {
			k.mu.Lock()
			k.calls = append(k.calls, call)
			k.mu.Unlock()
			return canonjson.StringValue("noted for " + string(call.NodeID)), nil
		}}}, nil
}

// toolNames records the names of the tools each turn is offered.
type toolNames struct {
	inner contract.ChatModel
	mu    sync.Mutex
	names []string
}

func (m *toolNames) Turn(ctx context.Context, messages []contract.ChatMessage, tools []contract.Tool) iter.Seq2[contract.ChatEvent, error] {
	m.mu.Lock()
	for _, t := range tools {
		if !slices.Contains(m.names, t.Name) {
			m.names = append(m.names, t.Name)
		}
	}
	m.mu.Unlock()
	return m.inner.Turn(ctx, messages, tools)
}

// §3.6 resolveSupervisorTools through RunGraph (the reference's runGraph
// forwards it): the graph's root router brain is offered its own
// product tool beside the graph's verbs, resolved once for the root
// node, and its call runs with the root's context.
func TestGraphForwardsResolveSupervisorTools(t *testing.T) {
	var kb kbTools
	model := &toolNames{inner: router(
		turn(scripted.Call("k1", "kb_note", `{}`)),
		turn(call("c1", supervise.VerbSpawnWorker, map[string]any{"profile": "coder", "task": "Fix test_login."})),
		turn(call("c2", supervise.VerbAwaitEvent, map[string]any{"timeoutMs": 30000})),
		turn(final("The coder reported.")),
	)}
	o := options(t, kernelWorkers(t, workerScript), model)
	o.Supervise.RunDir = t.TempDir()
	o.Supervise.ResolveSupervisorTools = kb.resolve
	res, err := graph.RunGraph(context.Background(), starGraph(t), o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Result.Status != supervise.StatusWinner || res.Result.Winner.Node != "g:s1" {
		t.Fatalf("result %s winner %+v error %+v, want the coder g:s1", res.Result.Status, res.Result.Winner, res.Result.Error)
	}
	kb.mu.Lock()
	defer kb.mu.Unlock()
	// The root's task is the graph's, with the topology the graph tells
	// its root.
	if len(kb.resolved) != 1 || kb.resolved[0].NodeID != "g" || kb.resolved[0].Depth != 0 || !strings.HasPrefix(kb.resolved[0].Task, o.Task) {
		t.Errorf("resolved %+v, want once for the root g on the graph's task", kb.resolved)
	}
	if len(kb.calls) != 1 || kb.calls[0].NodeID != "g" || kb.calls[0].CallID != "k1" {
		t.Errorf("calls %+v, want kb_note called once by the root as k1", kb.calls)
	}
	model.mu.Lock()
	defer model.mu.Unlock()
	if !slices.Contains(model.names, "kb_note") || !slices.Contains(model.names, supervise.ToolPrefix+supervise.VerbSpawnWorker) {
		t.Errorf("the root was offered %v, want kb_note beside the graph's verbs", model.names)
	}
}

// A caller's graph Brain gets the root's product tools from
// Driver.NodeTools, resolved once however often it asks.
func TestGraphDriverNodeToolsForACallersBrain(t *testing.T) {
	var kb kbTools
	o := options(t, kernelWorkers(t, workerScript), nil)
	o.Supervise.Router = nil
	o.Supervise.ResolveSupervisorTools = kb.resolve
	var answer canonjson.Value
	o.Brain = graph.BrainFunc(func(ctx context.Context, d *graph.Driver, task string) (supervise.BrainReport, error) {
		for range 2 {
			ts, err := d.NodeTools(ctx, task)
			if err != nil {
				return supervise.BrainReport{}, err
			}
			if len(ts) != 1 || ts[0].Name != "kb_note" {
				t.Errorf("NodeTools %v, want kb_note", ts)
				return supervise.BrainReport{}, nil
			}
			if answer, err = ts[0].Run(ctx, canonjson.Value{}); err != nil {
				return supervise.BrainReport{}, err
			}
		}
		return supervise.BrainReport{Text: "noted"}, nil
	})
	if _, err := graph.RunGraph(context.Background(), starGraph(t), o); err != nil {
		t.Fatal(err)
	}
	if answer.Str() != "noted for g" {
		t.Errorf("kb_note answered %v, want \"noted for g\"", answer)
	}
	kb.mu.Lock()
	defer kb.mu.Unlock()
	if len(kb.resolved) != 1 || len(kb.calls) != 2 {
		t.Errorf("resolved %d times, called %d times; want 1 and 2", len(kb.resolved), len(kb.calls))
	}
}
