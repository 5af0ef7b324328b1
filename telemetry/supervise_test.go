package telemetry_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/store/memory"
	"github.com/agentrt/agentrt/supervise"
	"github.com/agentrt/agentrt/telemetry"
)

// superviseScript answers "alpha" with exact usage and cost and "dim"
// with no usage at all.
const superviseScript = `{"turns": [
  {"match": "alpha", "repeat": true, "steps": [{"text": "alpha: DONE"}, {"usage": {"inputTokens": 100, "outputTokens": 20, "cost": 0.002}, "mode": "delta"}]},
  {"match": "dim", "repeat": true, "steps": [{"text": "dim: half"}]}
]}`

func i64(n int64) *int64 { return &n }

// superviseOptions runs workers on the scripted provider through a
// KernelExecutor, traced by tr; the brain spawns one worker per task
// and awaits them all.
func superviseOptions(t *testing.T, tr *telemetry.Tracing, tasks ...string) supervise.Options {
	t.Helper()
	var s scripted.Script
	if err := json.Unmarshal([]byte(superviseScript), &s); err != nil {
		t.Fatal(err)
	}
	writer, err := profile.Parse([]byte(`{"name": "writer", "harness": "cli-base", "model": {"provider": "scripted", "default": "scripted/writer"}}`))
	if err != nil {
		t.Fatal(err)
	}
	return supervise.Options{
		Budget:    ledger.Budget{Tokens: i64(10_000), Iterations: i64(10)},
		PerWorker: ledger.Budget{Tokens: i64(1_000), Iterations: i64(1)},
		Profiles:  map[string]*profile.Profile{"writer": writer},
		Deliverable: supervise.Deliverable{Check: func(_ context.Context, out supervise.Output) (kernel.Verdict, error) {
			return kernel.Verdict{Passed: strings.Contains(out.Text, "DONE")}, nil
		}},
		Executor: &supervise.KernelExecutor{Provider: scripted.New(&s, scripted.Options{}), Store: memory.New(nil)},
		RunID:    "sup-1",
		Observer: tr.SuperviseObserver(),
		Brain: supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
			for _, task := range tasks {
				if _, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "writer", Task: task, Label: task}); err != nil {
					return supervise.BrainReport{}, err
				}
			}
			for range tasks {
				if _, err := c.Await(ctx, supervise.AwaitArgs{TimeoutMS: 10_000}); err != nil {
					return supervise.BrainReport{}, err
				}
			}
			return supervise.BrainReport{Text: "done"}, nil
		}),
	}
}

func managerOf(t *testing.T) *profile.Profile {
	t.Helper()
	p, err := profile.Parse([]byte(`{"name": "manager", "harness": "cli-base", "model": {"default": "scripted/manager"}}`))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// superviseTraced runs o under tr (an in-memory exporter mem) and returns
// the result and the spans.
func superviseTraced(t *testing.T, tr *telemetry.Tracing, mem *tracetest.InMemoryExporter, o supervise.Options) (supervise.SupervisedResult, tracetest.SpanStubs) {
	t.Helper()
	res, err := supervise.Supervise(t.Context(), managerOf(t), "write notes", o)
	if err != nil {
		t.Fatal(err)
	}
	if r := tr.Flush(t.Context()); !r.Succeeded {
		t.Fatalf("report %+v", r)
	}
	spans := mem.GetSpans()
	mem.Reset()
	return res, spans
}

func newMemTracing(t *testing.T) (*telemetry.Tracing, *tracetest.InMemoryExporter) {
	t.Helper()
	mem := tracetest.NewInMemoryExporter()
	tr, err := telemetry.New(telemetry.Options{Exporter: mem})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Shutdown(context.Background()) })
	return tr, mem
}

// Behaviour 69 (span tree and spend): a supervised run is one trace
// rooted at supervisor.run (invoke_workflow, trace id from the run id);
// each worker's node span is the root's child and its kernel run's
// invoke_agent span the node's child; a worker's known usage is exported
// as gen_ai.usage.*, unknown usage is omitted and marked unknown, and the
// llm.token_count.*/llm.cost_usd keys never appear.
func TestSuperviseSpansBehaviour69(t *testing.T) {
	tr, mem := newMemTracing(t)
	res, spans := superviseTraced(t, tr, mem, superviseOptions(t, tr, "alpha", "dim"))
	if res.Status != supervise.StatusWinner {
		t.Fatalf("result %+v", res)
	}
	var root tracetest.SpanStub
	nodes := map[string]tracetest.SpanStub{}
	runs := map[string]tracetest.SpanStub{} // invoke_agent span by parent span id
	for _, s := range spans {
		a := attrMap(s.Attributes)
		for k := range a {
			if strings.HasPrefix(k, "llm.token_count") || k == "llm.cost_usd" {
				t.Errorf("span %s exports %s", s.Name, k)
			}
		}
		if s.SpanContext.TraceID() != telemetry.TraceID("sup-1") {
			t.Errorf("span %s is in trace %s, not the run's", s.Name, s.SpanContext.TraceID())
		}
		switch {
		case s.Name == telemetry.SpanSupervisorRun:
			root = s
		case s.Name == telemetry.SpanSupervisorNode:
			nodes[a[telemetry.KeySuperviseNodeLabel].(string)] = s
		case strings.HasPrefix(s.Name, telemetry.SpanRunPrefix):
			runs[s.Parent.SpanID().String()] = s
		}
	}
	ra := attrMap(root.Attributes)
	if ra[telemetry.KeyOperation] != telemetry.OpInvokeWorkflow || ra[telemetry.KeySuperviseResult] != "winner" ||
		ra[telemetry.KeySuperviseNodeResumed] != false || root.Parent.IsValid() || root.Status.Code != codes.Ok {
		t.Errorf("root %s %v parent %v status %v", root.Name, ra, root.Parent, root.Status)
	}
	if len(nodes) != 2 {
		t.Fatalf("node spans %v", nodes)
	}
	for label, n := range nodes {
		a := attrMap(n.Attributes)
		if n.Parent.SpanID() != root.SpanContext.SpanID() || a[telemetry.KeySuperviseNodeDepth] != int64(1) ||
			!strings.HasPrefix(a[telemetry.KeySuperviseNodeID].(string), "sup-1:s") || a[telemetry.KeySuperviseNodeStatus] != "done" {
			t.Errorf("node %s: parent %v attrs %v", label, n.Parent, a)
		}
		// §10: runtime names the executor, seq the node's spawn number
		// (the last part of its id); infra only on a node that went down.
		id := a[telemetry.KeySuperviseNodeID].(string)
		if a[telemetry.KeySuperviseNodeRuntime] != supervise.RuntimeProvider ||
			fmt.Sprint(a[telemetry.KeySuperviseNodeSeq]) != id[strings.LastIndex(id, ":s")+2:] {
			t.Errorf("node %s: runtime/seq attrs %v", label, a)
		}
		if v, ok := a[telemetry.KeySuperviseNodeInfra]; ok {
			t.Errorf("node %s settled done, exported infra=%v", label, v)
		}
		run, ok := runs[n.SpanContext.SpanID().String()]
		if !ok || attrMap(run.Attributes)[telemetry.KeyRunKind] != "supervise-worker" {
			t.Errorf("node %s has no worker run span under it (%v)", label, runs)
		}
	}
	alpha, dim := attrMap(nodes["alpha"].Attributes), attrMap(nodes["dim"].Attributes)
	if alpha[telemetry.KeyInputTokens] != int64(100) || alpha[telemetry.KeyOutputTokens] != int64(20) || alpha[telemetry.KeyCostUSD] != 0.002 ||
		alpha[telemetry.KeySuperviseDelivered] != true || alpha[telemetry.KeySuperviseVerdictValid] != true {
		t.Errorf("alpha node %v", alpha)
	}
	if _, ok := alpha[telemetry.KeySuperviseTokensKnown]; ok {
		t.Errorf("alpha's tokens are known, marked %v", alpha)
	}
	for _, k := range []string{telemetry.KeyInputTokens, telemetry.KeyOutputTokens, telemetry.KeyCostUSD} {
		if v, ok := dim[k]; ok {
			t.Errorf("dim's usage is unknown, exported %s=%v", k, v)
		}
	}
	if dim[telemetry.KeySuperviseTokensKnown] != false || dim[telemetry.KeySuperviseCostKnown] != false || dim[telemetry.KeySuperviseDelivered] != false {
		t.Errorf("dim node %v", dim)
	}
	// The whole run's tokens are not fully known (dim's were charged at
	// its ceiling): the root marks them and exports no cost.
	if ra[telemetry.KeySuperviseTokensKnown] != false || ra[telemetry.KeySuperviseCostKnown] != false {
		t.Errorf("root %v", ra)
	}
}

// Behaviour 69 (resume): a run resumed in another process, under another
// tracer, rejoins the first process's trace.
func TestSuperviseResumedRunSameTraceBehaviour69(t *testing.T) {
	dir := t.TempDir()
	tr1, mem1 := newMemTracing(t)
	o := superviseOptions(t, tr1, "alpha")
	o.RunDir = dir
	_, first := superviseTraced(t, tr1, mem1, o)
	// Kill it after run-started: the worker's spawn never became durable.
	path := filepath.Join(dir, supervise.SpawnJournalFile)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, bytes.SplitAfter(data, []byte("\n"))[0], 0o600); err != nil {
		t.Fatal(err)
	}

	tr2, mem2 := newMemTracing(t)
	o = superviseOptions(t, tr2, "alpha")
	o.RunDir, o.Resume = dir, true
	res, second := superviseTraced(t, tr2, mem2, o)
	if !res.Resumed || res.Status != supervise.StatusWinner {
		t.Fatalf("resumed result %+v", res)
	}
	roots := 0
	for _, spans := range []tracetest.SpanStubs{first, second} {
		for _, s := range spans {
			if s.SpanContext.TraceID() != telemetry.TraceID("sup-1") {
				t.Errorf("span %s in trace %s", s.Name, s.SpanContext.TraceID())
			}
			if s.Name == telemetry.SpanSupervisorRun {
				roots++
			}
		}
	}
	var resumedRoot tracetest.SpanStub
	for _, s := range second {
		if s.Name == telemetry.SpanSupervisorRun {
			resumedRoot = s
		}
	}
	if roots != 2 || attrMap(resumedRoot.Attributes)[telemetry.KeySuperviseNodeResumed] != true {
		t.Errorf("%d root spans; resumed root %v", roots, resumedRoot.Attributes)
	}
}

// A worker spawned by a nested manager is its node's child, one level
// deeper, and its run nests under its own node. (The root may not spawn
// under a plain worker: nothing would read the child's settlement.)
func TestSuperviseNestedNodeSpan(t *testing.T) {
	tr, mem := newMemTracing(t)
	o := superviseOptions(t, tr)
	lead, err := profile.Parse([]byte(`{"name": "lead", "harness": "cli-base", "model": {"default": "scripted/lead"}, "tools": {"agent_runtime_coordination_spawn_worker": true}}`))
	if err != nil {
		t.Fatal(err)
	}
	o.Profiles["lead"] = lead
	o.ManagerBrain = func(*profile.Profile) supervise.Brain {
		return supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
			if _, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "writer", Task: "alpha", Label: "child"}); err != nil {
				return supervise.BrainReport{}, err
			}
			ev, err := c.Await(ctx, supervise.AwaitArgs{TimeoutMS: 10_000})
			if err != nil || ev.Event == nil {
				return supervise.BrainReport{}, fmt.Errorf("the lead's await: %+v, %v", ev, err)
			}
			return supervise.BrainReport{Text: ev.Event.Output}, nil
		})
	}
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		if _, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "lead", Task: "alpha", Label: "parent"}); err != nil {
			return supervise.BrainReport{}, err
		}
		if _, err := c.Await(ctx, supervise.AwaitArgs{TimeoutMS: 10_000}); err != nil {
			return supervise.BrainReport{}, err
		}
		return supervise.BrainReport{}, nil
	})
	o.MaxDepth = 2
	res, spans := superviseTraced(t, tr, mem, o)
	if res.Status != supervise.StatusWinner {
		t.Fatalf("result %+v", res)
	}
	nodes := map[string]tracetest.SpanStub{}
	for _, s := range spans {
		if s.Name == telemetry.SpanSupervisorNode {
			nodes[attrMap(s.Attributes)[telemetry.KeySuperviseNodeLabel].(string)] = s
		}
	}
	parent, child := nodes["parent"], nodes["child"]
	ca := attrMap(child.Attributes)
	if child.Parent.SpanID() != parent.SpanContext.SpanID() || ca[telemetry.KeySuperviseNodeDepth] != int64(2) ||
		ca[telemetry.KeySuperviseNodeParentID] != attrMap(parent.Attributes)[telemetry.KeySuperviseNodeID] {
		t.Errorf("child %v under %v; parent %v", ca, child.Parent.SpanID(), parent.SpanContext.SpanID())
	}
	for _, s := range spans {
		if strings.HasPrefix(s.Name, telemetry.SpanRunPrefix) && s.Parent.SpanID() != parent.SpanContext.SpanID() && s.Parent.SpanID() != child.SpanContext.SpanID() {
			t.Errorf("worker run span under %v, not a node", s.Parent.SpanID())
		}
	}
}

// A nil Tracing installs no supervise observer.
func TestSuperviseObserverNilTracing(t *testing.T) {
	var tr *telemetry.Tracing
	if o := tr.SuperviseObserver(); o != nil {
		t.Fatalf("observer %v", o)
	}
}

// Spec §10 (driver turns as inference spans): the router brain's own
// tool loop is traced under supervisor.run — its invoke_agent span, a
// gen_ai.client.inference span per model turn, and a span per
// coordination verb it calls — while its turns are still metered.
func TestSuperviseManagerTurnsAreSpans(t *testing.T) {
	tr, mem := newMemTracing(t)
	o := superviseOptions(t, tr, "alpha")
	o.Brain = nil
	call := func(id, verb, args string) contract.ChatEvent {
		return scripted.Call(id, supervise.ToolPrefix+verb, args)
	}
	usage := func(in, out int64) contract.ChatEvent {
		return contract.ChatEvent{Kind: contract.ChatUsage, Usage: &contract.TokenUsage{InputTokens: in, OutputTokens: out}, UsageMode: contract.UsageDelta}
	}
	o.Router = scripted.NewChatModel(scripted.ChatScript{Turns: []scripted.ChatTurn{
		{Events: []contract.ChatEvent{call("c1", supervise.VerbSpawnWorker, `{"profile": "writer", "task": "alpha", "label": "alpha"}`), usage(10, 5)}},
		{Events: []contract.ChatEvent{call("c2", supervise.VerbAwaitEvent, `{"timeoutMs": 10000}`), usage(20, 5)}},
		{Events: []contract.ChatEvent{{Kind: contract.ChatText, Text: "done"}, usage(30, 5)}},
	}})
	manager, err := profile.Parse([]byte(`{"name": "manager", "harness": "cli-base", "model": {"default": "scripted/manager"},
		"tools": {"agent_runtime_coordination_spawn_worker": true, "agent_runtime_coordination_await_event": true}}`))
	if err != nil {
		t.Fatal(err)
	}
	res, err := supervise.Supervise(t.Context(), manager, "write notes", o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != supervise.StatusWinner {
		t.Fatalf("status %s reason %s", res.Status, res.Reason)
	}
	if r := tr.Flush(t.Context()); !r.Succeeded {
		t.Fatalf("report %+v", r)
	}
	spans := mem.GetSpans()
	byID := map[string]tracetest.SpanStub{}
	var root tracetest.SpanStub
	for _, s := range spans {
		byID[s.SpanContext.SpanID().String()] = s
		if s.Name == telemetry.SpanSupervisorRun {
			root = s
		}
	}
	var agent tracetest.SpanStub
	for _, s := range spans {
		if s.Parent.SpanID() == root.SpanContext.SpanID() && strings.HasPrefix(s.Name, telemetry.SpanRunPrefix) {
			agent = s
		}
	}
	if !agent.SpanContext.IsValid() {
		t.Fatalf("no invoke_agent span of the manager under %s: %d spans", telemetry.SpanSupervisorRun, len(spans))
	}
	inference := 0
	for _, s := range spans {
		if s.Parent.SpanID() == agent.SpanContext.SpanID() && s.Name != "" && strings.Contains(s.Name, "inference") {
			inference++
		}
	}
	if inference != 3 {
		names := []string{}
		for _, s := range spans {
			if s.Parent.SpanID() == agent.SpanContext.SpanID() {
				names = append(names, s.Name)
			}
		}
		t.Errorf("%d inference spans under the manager's run, want its 3 turns; its children: %q", inference, names)
	}
	if d := res.Breakdown.DriverInference; !d.TokensKnown || d.Tokens != 75 {
		t.Errorf("manager inference %+v, want the 75 tokens metered from its turns", d)
	}
}

// Spec §10 node attributes of workers that went down, and the
// trace-unpropagated journal record: an ExecutorFunc names no runtime
// (the attribute is omitted, not guessed) and does not say it carries
// the trace context, so the run journals trace-unpropagated once per
// worker; a worker whose executor failed with an InfraError is
// infra=true, one that failed on its own is infra=false.
func TestSuperviseNodeInfraAndTraceUnpropagated(t *testing.T) {
	tr, mem := newMemTracing(t)
	o := superviseOptions(t, tr, "crash", "own")
	o.RunDir = t.TempDir()
	o.Executor = supervise.ExecutorFunc(func(_ context.Context, w supervise.Work) (supervise.WorkResult, error) {
		zero := int64(0)
		spent := ledger.Spend{Tokens: &zero, Iterations: &zero, MicroUSD: &zero}
		if w.Task == "crash" {
			return supervise.WorkResult{Spent: spent}, &supervise.InfraError{Err: errors.New("the sandbox went away")}
		}
		return supervise.WorkResult{Spent: spent}, errors.New("the worker gave up")
	})
	_, spans := superviseTraced(t, tr, mem, o)
	infra := map[string]any{}
	for _, s := range spans {
		if s.Name != telemetry.SpanSupervisorNode {
			continue
		}
		a := attrMap(s.Attributes)
		label := a[telemetry.KeySuperviseNodeLabel].(string)
		infra[label] = a[telemetry.KeySuperviseNodeInfra]
		if v, ok := a[telemetry.KeySuperviseNodeRuntime]; ok {
			t.Errorf("node %s: runtime unknown, exported %v", label, v)
		}
		if a[telemetry.KeySuperviseNodeStatus] != string(supervise.StateFailed) || s.Status.Code != codes.Error {
			t.Errorf("node %s: %v status %v", label, a, s.Status)
		}
	}
	if diff := cmp.Diff(map[string]any{"crash": true, "own": false}, infra); diff != "" {
		t.Errorf("infra by node (-want +got):\n%s", diff)
	}
	recs, _, err := supervise.ReadRunDir(t.Context(), o.RunDir)
	if err != nil {
		t.Fatal(err)
	}
	unpropagated := map[supervise.NodeID]int{}
	settledInfra := map[supervise.NodeID]bool{}
	spawned := 0
	for _, r := range recs {
		switch r.Kind {
		case supervise.KindTraceUnpropagated:
			unpropagated[r.Node]++
			if r.Reason == "" {
				t.Errorf("trace-unpropagated record of %s says no reason", r.Node)
			}
		case supervise.KindSettled:
			settledInfra[r.Node] = r.Infra
		case supervise.KindSpawned:
			if _, child := r.Node.Parent(); child {
				spawned++
			}
		}
	}
	if spawned != 2 || len(unpropagated) != 2 {
		t.Fatalf("%d workers spawned, trace-unpropagated records %v", spawned, unpropagated)
	}
	for id, n := range unpropagated {
		if n != 1 {
			t.Errorf("node %s journaled trace-unpropagated %d times, want once", id, n)
		}
		if _, ok := settledInfra[id]; !ok {
			t.Errorf("trace-unpropagated names %s, which never settled", id)
		}
	}
	infraNodes := 0
	for _, v := range settledInfra {
		if v {
			infraNodes++
		}
	}
	if infraNodes != 1 {
		t.Errorf("settled records' infra %v, want exactly the crashed worker's", settledInfra)
	}
}

// A traced run on an executor that carries the trace context (the
// KernelExecutor) journals no trace-unpropagated record.
func TestSuperviseKernelExecutorPropagatesTrace(t *testing.T) {
	tr, mem := newMemTracing(t)
	o := superviseOptions(t, tr, "alpha")
	o.RunDir = t.TempDir()
	superviseTraced(t, tr, mem, o)
	recs, _, err := supervise.ReadRunDir(t.Context(), o.RunDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if r.Kind == supervise.KindTraceUnpropagated {
			t.Errorf("journaled %+v", r)
		}
	}
}
