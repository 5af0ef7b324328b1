package coordmcp_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/coordmcp"
	"github.com/agentrt/agentrt/supervise"
)

// recordTools are the product tools of these tests: kb_record answers
// {"recorded": <fact>, "node": <its manager's node>}, and wait_stop
// waits until its context ends and sends the context's cause on ended.
func recordTools(calls *[]supervise.ToolCallContext, mu *sync.Mutex, ended chan<- error) []supervise.SupervisorTool {
	schema, _ := canonjson.Decode([]byte(`{"type":"object","properties":{"fact":{"type":"string"}},"required":["fact"]}`))
	return []supervise.SupervisorTool{
		{Name: "kb_record", Description: "Record a fact in the product's knowledge base.", InputSchema: schema,
			Run: func(_ context.Context, args canonjson.Value, call supervise.ToolCallContext) (canonjson.Value, error) {
				mu.Lock()
				*calls = append(*calls, call)
				mu.Unlock()
				fact, _ := canonjson.Resolve(args, "/fact")
				return canonjson.ObjectValue([]canonjson.Member{{Name: "node", Value: canonjson.StringValue(string(call.NodeID))}, {Name: "recorded", Value: fact}}), nil
			}},
		{Name: "wait_stop", Description: "Wait until this manager ends.",
			Run: func(ctx context.Context, _ canonjson.Value, _ supervise.ToolCallContext) (canonjson.Value, error) {
				select {
				case <-ctx.Done():
					ended <- context.Cause(ctx)
				case <-time.After(steerWait):
					ended <- errors.New("the call's context never ended")
				}
				return canonjson.Value{}, nil
			}},
	}
}

// §3.6 resolveSupervisorTools, the external-harness arm: the root
// manager's product tools are resolved once and served on the
// coordination MCP beside the granted verbs, so a harness (here the
// stand-in, through the real `agentrt mcp coordination` relay process)
// lists them and calls them as it does the verbs; the call runs the
// product's function with the root's node context (no model call id over
// MCP), is journaled started and done, and the prompt names the tool.
func TestHarnessServesProductToolsOverMCP(t *testing.T) {
	relay := agentrtBinary(t)
	ctx := deadline(t)
	runDir := t.TempDir()
	var (
		mu       sync.Mutex
		calls    []supervise.ToolCallContext
		resolved []supervise.NodeContext
		listed   []string
		recorded map[string]any
		prompt   string
	)
	prov := standInHarnessPrompted(t, func(ctx context.Context, p string, cs *mcp.ClientSession) (string, error) {
		lt, err := cs.ListTools(ctx, nil)
		if err != nil {
			return "", err
		}
		var names []string
		for _, tl := range lt.Tools {
			names = append(names, tl.Name)
		}
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "kb_record", Arguments: map[string]any{"fact": "alpha is done"}})
		if err != nil {
			return "", err
		}
		if res.IsError {
			return "", errors.New("kb_record failed")
		}
		if _, err := callVerb(ctx, cs, supervise.VerbSubmitResult, map[string]any{"result": "alpha: DONE"}); err != nil {
			return "", err
		}
		m, _ := res.StructuredContent.(map[string]any)
		mu.Lock()
		listed, recorded, prompt = names, m, p
		mu.Unlock()
		return "submitted", nil
	})
	manager := harnessManager(t)
	brain := harnessBrain(t, manager, prov, relay)
	o := runOptions(t, runDir, brain)
	o.ResolveSupervisorTools = func(_ context.Context, nc supervise.NodeContext) ([]supervise.SupervisorTool, error) {
		mu.Lock()
		resolved = append(resolved, nc)
		mu.Unlock()
		return recordTools(&calls, &mu, make(chan error, 1)), nil
	}
	res, err := supervise.Supervise(ctx, manager, "write alpha", o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Error != nil || res.Status != supervise.StatusWinner {
		t.Fatalf("status %s reason %s error %+v, want the submitted winner", res.Status, res.Reason, res.Error)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, want := range []string{"kb_record", "wait_stop", supervise.ToolPrefix + supervise.VerbSubmitResult} {
		if !slices.Contains(listed, want) {
			t.Errorf("the harness listed %v, want %s among them", listed, want)
		}
	}
	if diff := cmp.Diff(map[string]any{"recorded": "alpha is done", "node": "run1"}, recorded); diff != "" {
		t.Errorf("kb_record's result (-want +got):\n%s", diff)
	}
	if len(resolved) != 1 || resolved[0].NodeID != "run1" || resolved[0].Depth != 0 || resolved[0].AssignmentID != "" ||
		resolved[0].Task != "write alpha" || resolved[0].Profile == nil || *resolved[0].Profile.Name != "manager" {
		t.Errorf("resolved for %+v, want once for the root run1 at depth 0 on its task", resolved)
	}
	if len(calls) != 1 || calls[0].NodeID != "run1" || calls[0].CallID != "" {
		t.Errorf("calls %+v, want one, told the root's node and no call id", calls)
	}
	if !strings.Contains(prompt, "kb_record") {
		t.Errorf("the harness's prompt does not name its product tools:\n%s", prompt)
	}
	journal := journalText(t, runDir)
	for _, want := range []string{`"kind":"` + supervise.KindExtraToolCalled + `","label":"kb_record"`,
		`{"data":{"node":"run1","recorded":"alpha is done"},"key":"kb_record ","kind":"` + supervise.KindExtraToolDone + `","label":"kb_record"}`} {
		if !strings.Contains(journal, want) {
			t.Errorf("the journal lacks %s:\n%s", want, journal)
		}
	}
}

// A product tool call over MCP runs with a context that ends when its
// manager does, not only when its request does: the harness's stop
// ends the manager (supervise.ErrStopped) while its wait_stop call is
// in flight, and the call's context ends with the manager's cause (its
// request, relayed across two processes, would end later and say only
// "context canceled").
func TestHarnessProductToolCallEndsWithTheManager(t *testing.T) {
	relay := agentrtBinary(t)
	ctx := deadline(t)
	runDir := t.TempDir()
	var mu sync.Mutex
	var calls []supervise.ToolCallContext
	ended := make(chan error, 1)
	inFlight := make(chan struct{})
	prov := standInHarness(t, func(ctx context.Context, cs *mcp.ClientSession) (string, error) {
		go cs.CallTool(ctx, &mcp.CallToolParams{Name: "wait_stop", Arguments: map[string]any{}})
		select {
		case <-inFlight:
		case <-time.After(steerWait):
			return "", errors.New("wait_stop never started")
		}
		// The stop ends the turn: its own answer may not come back.
		callVerb(ctx, cs, supervise.VerbStop, map[string]any{"reason": "enough"})
		return "stopped", nil
	})
	manager := parseProfile(t, `{"name": "manager", "harness": "opencode", "model": {"default": "scripted/manager"},
		"tools": {"agent_runtime_coordination_spawn_worker": true, "agent_runtime_coordination_stop": true}}`)
	brain := harnessBrain(t, manager, prov, relay)
	o := runOptions(t, runDir, brain)
	o.ResolveSupervisorTools = func(context.Context, supervise.NodeContext) ([]supervise.SupervisorTool, error) {
		ts := recordTools(&calls, &mu, ended)
		run := ts[1].Run
		ts[1].Run = func(ctx context.Context, args canonjson.Value, call supervise.ToolCallContext) (canonjson.Value, error) {
			close(inFlight)
			return run(ctx, args, call)
		}
		return ts, nil
	}
	if _, err := supervise.Supervise(ctx, manager, "write alpha", o); err != nil {
		t.Fatal(err)
	}
	select {
	case cause := <-ended:
		if !errors.Is(cause, supervise.ErrStopped) {
			t.Errorf("wait_stop's context ended with %v, want the manager's stop (%v)", cause, supervise.ErrStopped)
		}
	case <-time.After(steerWait):
		t.Fatal("wait_stop's context did not end")
	}
}

// A resolver that fails ends the harness manager's run driver-failed
// before the harness is started (the reference's act() throws before it
// serves the coordination MCP).
func TestHarnessResolverErrorIsDriverFailed(t *testing.T) {
	var started atomic.Bool
	prov := standInHarness(t, func(context.Context, *mcp.ClientSession) (string, error) {
		started.Store(true)
		return "", nil
	})
	manager := harnessManager(t)
	brain, err := coordmcp.NewHarnessBrain(manager, prov, coordmcp.HarnessOptions{Relay: []string{"/nonexistent/agentrt", "mcp", "coordination"}})
	if err != nil {
		t.Fatal(err)
	}
	runDir := t.TempDir()
	o := runOptions(t, runDir, brain)
	o.ResolveSupervisorTools = func(context.Context, supervise.NodeContext) ([]supervise.SupervisorTool, error) {
		return nil, errors.New("tenant unknown")
	}
	res, err := supervise.Supervise(deadline(t), manager, "write alpha", o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != supervise.StatusNoWinner || res.Reason != supervise.ReasonDriverFailed || res.Error == nil ||
		!strings.Contains(res.Error.Message, "tenant unknown") {
		t.Errorf("status %s reason %s error %+v, want driver-failed naming the resolver's error", res.Status, res.Reason, res.Error)
	}
	if started.Load() {
		t.Error("the harness was started")
	}
	if _, err := coordmcp.ReadEndpoint(runDir); !errors.Is(err, coordmcp.ErrNotLive) {
		t.Errorf("after the run: %v, want no endpoint", err)
	}
}

// journalText is runDir's spawn journal.
func journalText(t *testing.T, runDir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(runDir, supervise.SpawnJournalFile))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
