package coordmcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/coordmcp"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/supervise"
)

// Root steers and the external-harness manager (§3.6 "Steering": "Root
// steer: pass runId as worker"; behaviour 48; issue 13). The harness
// here is a stand-in: a scripted provider that mounts MCP and whose turn
// starts the profile's MCP server — the real `agentrt mcp coordination`
// relay process, as claude-code, codex and opencode start it — and calls
// the relayed verbs with the MCP SDK client, as the harness's model
// would.

const harnessSteerText = "ROOT-STEER: also cover the error paths"

// steerWait bounds every wait of these tests.
const steerWait = 60 * time.Second

// standInHarness returns a provider whose one turn connects to the
// turn's MCP server coordmcp.MCPServerName and runs play on it; play's
// text is the turn's answer, and its error fails the turn and the test.
func standInHarness(t *testing.T, play func(ctx context.Context, cs *mcp.ClientSession) (string, error)) *scripted.Provider {
	return standInHarnessPrompted(t, func(ctx context.Context, _ string, cs *mcp.ClientSession) (string, error) { return play(ctx, cs) })
}

// standInHarnessPrompted is standInHarness whose play is also given the
// turn's prompt.
func standInHarnessPrompted(t *testing.T, play func(ctx context.Context, prompt string, cs *mcp.ClientSession) (string, error)) *scripted.Provider {
	return scripted.New(nil, scripted.Options{Name: "stand-in", MountsMCP: true,
		OnPrompt: func(ctx context.Context, prompt string, pc scripted.PromptContext) ([]contract.EnvironmentEvent, error) {
			if pc.Input == nil || pc.Input.Profile == nil {
				return nil, errors.New("the turn carries no profile")
			}
			srv, ok := pc.Input.Profile.MCP[coordmcp.MCPServerName]
			if !ok || srv.Command == nil {
				return nil, fmt.Errorf("the turn's profile mounts no MCP server %q", coordmcp.MCPServerName)
			}
			var args []string
			for _, a := range srv.Args {
				if a.Value == nil {
					return nil, errors.New("a relay argument has no public value")
				}
				args = append(args, *a.Value)
			}
			cmd := exec.Command(*srv.Command, args...)
			cmd.Stderr = os.Stderr
			cl := mcp.NewClient(&mcp.Implementation{Name: "stand-in-harness", Version: "1"}, nil)
			cs, err := cl.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
			if err != nil {
				return nil, fmt.Errorf("starting the relay: %w", err)
			}
			defer cs.Close()
			text, err := play(ctx, prompt, cs)
			if err != nil {
				t.Errorf("the harness's turn: %v", err)
				return nil, err
			}
			return []contract.EnvironmentEvent{{Type: "result", Data: map[string]canonjson.Value{"result": canonjson.StringValue(text)}}}, nil
		}})
}

// harnessManager is an opencode manager granted spawn_worker,
// await_event and submit_result.
func harnessManager(t *testing.T) *profile.Profile {
	return parseProfile(t, `{"name": "manager", "harness": "opencode", "model": {"default": "scripted/manager"},
		"tools": {"agent_runtime_coordination_spawn_worker": true, "agent_runtime_coordination_await_event": true,
		"agent_runtime_coordination_submit_result": true}}`)
}

// callVerb calls verb and returns its result object; a protocol error or
// a failed result is an error. The result's text — what a harness shows
// its model — must be the same object.
func callVerb(ctx context.Context, cs *mcp.ClientSession, verb string, args map[string]any) (map[string]any, error) {
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: supervise.ToolPrefix + verb, Arguments: args})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", verb, err)
	}
	m, _ := res.StructuredContent.(map[string]any)
	if res.IsError {
		return nil, fmt.Errorf("%s failed: %v", verb, m)
	}
	var shown map[string]any
	if len(res.Content) != 1 {
		return nil, fmt.Errorf("%s: %d content blocks, want the result's text", verb, len(res.Content))
	}
	if tc, ok := res.Content[0].(*mcp.TextContent); !ok || json.Unmarshal([]byte(tc.Text), &shown) != nil || !reflect.DeepEqual(shown, m) {
		return nil, fmt.Errorf("%s: the text the model is shown is not the result %v", verb, m)
	}
	return m, nil
}

// steerRoot writes a root steer into runDir, as `agentrt steer` from
// another shell does, and waits until the running supervisor queued it
// in the manager's inbox; with claim, the steer's acknowledgement must
// then still be the claim (unknown): nothing took it yet.
func steerRoot(ctx context.Context, runDir, op string, claim bool) error {
	if _, err := supervise.WriteWorkerSteer(ctx, runDir, "run1", supervise.WorkerSteer{OperationID: op, Message: harnessSteerText, Source: "cli"}); err != nil {
		return err
	}
	deadline := time.Now().Add(steerWait)
	for {
		recs, _, err := supervise.ReadInbox(ctx, runDir, "run1")
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		for _, r := range recs {
			if r.Kind == supervise.InboxPosted && r.OperationID == op {
				if ack, err := supervise.ReadSteerAck(ctx, runDir, op); claim && (err != nil || ack == nil || ack.Effect != supervise.SteerUnknown) {
					return fmt.Errorf("steer %s queued, but its acknowledgement is %+v (%v), want the claim", op, ack, err)
				}
				return nil
			}
		}
		if ack, err := supervise.ReadSteerAck(ctx, runDir, op); err == nil && ack != nil && ack.Effect != supervise.SteerUnknown {
			return fmt.Errorf("steer %s was answered %s (%s) without being queued for the manager", op, ack.Effect, ack.Detail)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("steer %s was not queued for the manager within %s", op, steerWait)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// inboxKinds are the kinds of the root's inbox projection in runDir.
func inboxKinds(t *testing.T, runDir string) []string {
	t.Helper()
	recs, _, err := supervise.ReadInbox(context.Background(), runDir, "run1")
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, r := range recs {
		kinds = append(kinds, r.Kind)
	}
	return kinds
}

// steersOf is a tool result's steers member, or nil.
func steersOf(m map[string]any) []any {
	s, _ := m[coordmcp.SteersMember].([]any)
	return s
}

// Behaviour 48, issue 13: a root steer written into the run dir while
// the external-harness manager runs is queued, not delivered, until the
// harness's next coordination tool call; that call's result carries it
// (steers), once — the call after carries none — and the acknowledgement
// says delivered to the run's root. Before the harness brain read the
// manager's inbox the steer was answered unsupported.
func TestHarnessRootSteerRidesNextToolResultBehaviour48(t *testing.T) {
	relay := agentrtBinary(t)
	ctx := deadline(t)
	runDir := t.TempDir()
	var (
		mu               sync.Mutex
		spawned, awaited map[string]any
		submitted        map[string]any
	)
	prov := standInHarness(t, func(ctx context.Context, cs *mcp.ClientSession) (string, error) {
		s, err := callVerb(ctx, cs, supervise.VerbSpawnWorker, map[string]any{"profile": "writer", "task": "write alpha"})
		if err != nil {
			return "", err
		}
		if err := steerRoot(ctx, runDir, "op-harness", true); err != nil {
			return "", err
		}
		a, err := callVerb(ctx, cs, supervise.VerbAwaitEvent, map[string]any{"timeoutMs": 60000})
		if err != nil {
			return "", err
		}
		sub, err := callVerb(ctx, cs, supervise.VerbSubmitResult, map[string]any{"result": "alpha: DONE"})
		if err != nil {
			return "", err
		}
		mu.Lock()
		spawned, awaited, submitted = s, a, sub
		mu.Unlock()
		return "submitted", nil
	})
	manager := harnessManager(t)
	brain := harnessBrain(t, manager, prov, relay)
	res, err := supervise.Supervise(ctx, manager, "write alpha", runOptions(t, runDir, brain))
	if err != nil {
		t.Fatal(err)
	}
	if res.Error != nil || res.Status != supervise.StatusWinner {
		t.Fatalf("status %s reason %s error %+v, want the submitted winner", res.Status, res.Reason, res.Error)
	}
	mu.Lock()
	defer mu.Unlock()
	if s := steersOf(spawned); s != nil {
		t.Errorf("spawn_worker, before the steer, carried steers %v", s)
	}
	if diff := cmp.Diff([]any{harnessSteerText}, steersOf(awaited)); diff != "" {
		t.Errorf("await_event's steers (-want +got):\n%s", diff)
	}
	if ev, _ := awaited["event"].(map[string]any); ev["workerId"] != "run1:s1" {
		t.Errorf("await_event lost its own result: %v", awaited)
	}
	if s := steersOf(submitted); s != nil || submitted["accepted"] != true {
		t.Errorf("submit_result: %v, want accepted and no steer a second time", submitted)
	}
	ack, err := supervise.ReadSteerAck(ctx, runDir, "op-harness")
	if err != nil || ack == nil {
		t.Fatalf("acknowledgement %+v, %v", ack, err)
	}
	if ack.Effect != supervise.SteerDelivered || ack.Worker != "run1" {
		t.Errorf("acknowledgement %+v, want delivered to run1", ack)
	}
	if diff := cmp.Diff([]string{supervise.InboxPosted, supervise.InboxTaken}, inboxKinds(t, runDir)); diff != "" {
		t.Errorf("root inbox projection (-want +got):\n%s", diff)
	}
}

// Behaviour 48, issue 13: a root steer still waiting when the harness's
// turn ends — the manager made no coordination call after it — reaches
// no model: it is acknowledged not_live (the manager took its last
// turn), never delivered, and the projection records it dropped.
func TestHarnessRootSteerAtTurnEndIsNotLiveBehaviour48(t *testing.T) {
	relay := agentrtBinary(t)
	ctx := deadline(t)
	runDir := t.TempDir()
	prov := standInHarness(t, func(ctx context.Context, cs *mcp.ClientSession) (string, error) {
		if _, err := callVerb(ctx, cs, supervise.VerbSpawnWorker, map[string]any{"profile": "writer", "task": "write alpha"}); err != nil {
			return "", err
		}
		// The manager's last action: it answers without another call.
		return "answered", steerRoot(ctx, runDir, "op-late", true)
	})
	manager := harnessManager(t)
	brain := harnessBrain(t, manager, prov, relay)
	res, err := supervise.Supervise(ctx, manager, "write alpha", runOptions(t, runDir, brain))
	if err != nil {
		t.Fatal(err)
	}
	if res.Error != nil {
		t.Fatalf("the manager's turn failed: %+v", res.Error)
	}
	ack, err := supervise.ReadSteerAck(ctx, runDir, "op-late")
	if err != nil || ack == nil {
		t.Fatalf("acknowledgement %+v, %v", ack, err)
	}
	if ack.Effect != supervise.SteerNotLive || ack.Detail != "the manager took its last turn before taking the message" {
		t.Errorf("acknowledgement %q (%s), want not_live: the manager took its last turn before taking the message", ack.Effect, ack.Detail)
	}
	if kinds := inboxKinds(t, runDir); !slices.Equal(kinds, []string{supervise.InboxPosted, supervise.InboxDropped}) {
		t.Errorf("root inbox projection %v, want posted then dropped", kinds)
	}
}

// Behaviour 48, issue 13: a root steer that arrives while the harness
// manager waits in await_event — its worker still running, the wait
// asked for ten minutes (as long as the steer itself may wait) — ends
// that wait: await_event answers at once, pending with the live worker
// and no event, and its result carries the steer, delivered.
func TestHarnessRootSteerEndsAwaitEventBehaviour48(t *testing.T) {
	relay := agentrtBinary(t)
	ctx := deadline(t)
	runDir := t.TempDir()
	var (
		mu      sync.Mutex
		awaited map[string]any
	)
	prov := standInHarness(t, func(ctx context.Context, cs *mcp.ClientSession) (string, error) {
		if _, err := callVerb(ctx, cs, supervise.VerbSpawnWorker, map[string]any{"profile": "writer", "task": "write alpha"}); err != nil {
			return "", err
		}
		steered := make(chan error, 1)
		go func() {
			// Once the await has begun, or before: either way the
			// steer must end it.
			time.Sleep(200 * time.Millisecond)
			steered <- steerRoot(ctx, runDir, "op-await", false)
		}()
		a, err := callVerb(ctx, cs, supervise.VerbAwaitEvent, map[string]any{"timeoutMs": supervise.MaxAwaitTimeout.Milliseconds()})
		if err != nil {
			return "", err
		}
		if err := <-steered; err != nil {
			return "", err
		}
		mu.Lock()
		awaited = a
		mu.Unlock()
		return "answered", nil
	})
	manager := harnessManager(t)
	brain := harnessBrain(t, manager, prov, relay)
	o := runOptions(t, runDir, brain)
	// The worker runs until the run ends: only the steer can end the
	// manager's wait before its ten minutes.
	o.Executor = supervise.ExecutorFunc(func(ctx context.Context, w supervise.Work) (supervise.WorkResult, error) {
		<-ctx.Done()
		return supervise.WorkResult{}, context.Cause(ctx)
	})
	if _, err := supervise.Supervise(ctx, manager, "write alpha", o); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if diff := cmp.Diff([]any{harnessSteerText}, steersOf(awaited)); diff != "" {
		t.Errorf("await_event's steers (-want +got):\n%s", diff)
	}
	if live, _ := awaited["live"].([]any); awaited["pending"] != true || awaited["event"] != nil || !slices.Equal(live, []any{"run1:s1"}) {
		t.Errorf("await_event: %v, want pending on run1:s1 with no event", awaited)
	}
	ack, err := supervise.ReadSteerAck(ctx, runDir, "op-await")
	if err != nil || ack == nil || ack.Effect != supervise.SteerDelivered {
		t.Errorf("acknowledgement %+v, %v; want delivered", ack, err)
	}
}
