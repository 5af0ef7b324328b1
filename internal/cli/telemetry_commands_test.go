package cli_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/fleet"
	"github.com/agentrt/agentrt/supervise"
	"github.com/agentrt/agentrt/telemetry"
	"github.com/agentrt/agentrt/telemetry/otlptest"
)

// otelEnv points a child's tracing at collector c.
func otelEnv(c *otlptest.Collector) []string {
	return []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + c.URL}
}

// withoutOTEL is env without the OTEL_* variables this process inherited.
func withoutOTEL(env []string) []string {
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, "OTEL_") {
			out = append(out, kv)
		}
	}
	return out
}

// pickAttrs is the subset of s's attributes named by keys.
func pickAttrs(s otlptest.Span, keys ...string) map[string]any {
	m := map[string]any{}
	for _, k := range keys {
		if v, ok := s.Attributes[k]; ok {
			m[k] = v
		}
	}
	return m
}

// childOf returns the one span named with prefix whose parent is parent.
func childOf(t *testing.T, spans []otlptest.Span, parent otlptest.Span, prefix string) otlptest.Span {
	t.Helper()
	var found []otlptest.Span
	for _, s := range spans {
		if s.ParentID == parent.SpanID && strings.HasPrefix(s.Name, prefix) {
			found = append(found, s)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d spans %q under %s %s, want 1; all: %+v", len(found), prefix, parent.Name, parent.SpanID, spans)
	}
	return found[0]
}

// noContent fails when any exported attribute carries one of texts: a
// task, a prompt or an output never leaves the process.
func noContent(t *testing.T, spans []otlptest.Span, texts ...string) {
	t.Helper()
	for _, s := range spans {
		for k, v := range s.Attributes {
			for _, text := range texts {
				if strings.Contains(fmt.Sprint(v), text) {
					t.Errorf("span %s exports %s=%v, which carries %q", s.Name, k, v, text)
				}
			}
		}
	}
}

// checkSupervisedTrace checks the span tree of supervised run runID
// (behaviour 69): a supervisor.run root in the trace derived from runID,
// node's supervisor.node span under it, the worker's kernel run under
// its node and the run's turn under the run. usage is the worker run's
// usage attributes: a worker whose usage the provider did not report is
// unknown on its run and its node, never 0.
func checkSupervisedTrace(t *testing.T, spans []otlptest.Span, runID, node string, usage map[string]any) {
	t.Helper()
	var roots, nodes []otlptest.Span
	for _, s := range spans {
		switch {
		case s.Name == telemetry.SpanSupervisorRun:
			roots = append(roots, s)
		case s.Name == telemetry.SpanSupervisorNode && s.Attributes[telemetry.KeySuperviseNodeID] == node:
			nodes = append(nodes, s)
		}
		if want := telemetry.TraceID(runID).String(); s.TraceID != want {
			t.Errorf("%s in trace %s, want %s (derived from run %s)", s.Name, s.TraceID, want, runID)
		}
	}
	if len(roots) != 1 || roots[0].ParentID != "" || len(nodes) != 1 {
		t.Fatalf("supervisor.run spans %+v and %d spans of node %s, want one root and one node", roots, len(nodes), node)
	}
	root, nodeSpan := roots[0], nodes[0]
	if diff := cmp.Diff(map[string]any{telemetry.KeyOperation: "invoke_workflow", telemetry.KeyRunID: runID, telemetry.KeySuperviseNodeKind: "root"},
		pickAttrs(root, telemetry.KeyOperation, telemetry.KeyRunID, telemetry.KeySuperviseNodeKind)); diff != "" {
		t.Errorf("root attributes (-want +got):\n%s", diff)
	}
	if nodeSpan.ParentID != root.SpanID {
		t.Errorf("node %s under %s, want the root %s", node, nodeSpan.ParentID, root.SpanID)
	}
	// §10: runtime names the executor (the CLI's KernelExecutor), seq is
	// the node's spawn number, and a node that settled done has no infra.
	seq, err := strconv.ParseInt(node[strings.LastIndex(node, ":s")+2:], 10, 64)
	if err != nil {
		t.Fatalf("node id %q: %v", node, err)
	}
	wantNode := map[string]any{telemetry.KeySuperviseNodeKind: "worker", telemetry.KeySuperviseNodeParentID: runID, telemetry.KeySuperviseNodeStatus: "done",
		telemetry.KeySuperviseNodeRuntime: supervise.RuntimeProvider, telemetry.KeySuperviseNodeSeq: seq}
	if usage[telemetry.KeyTokensKnown] == false {
		wantNode[telemetry.KeySuperviseTokensKnown] = false
	}
	if diff := cmp.Diff(wantNode, pickAttrs(nodeSpan, telemetry.KeySuperviseNodeKind, telemetry.KeySuperviseNodeParentID,
		telemetry.KeySuperviseNodeStatus, telemetry.KeySuperviseTokensKnown, "llm.token_count.prompt",
		telemetry.KeySuperviseNodeRuntime, telemetry.KeySuperviseNodeSeq, telemetry.KeySuperviseNodeInfra)); diff != "" {
		t.Errorf("node attributes (-want +got):\n%s", diff)
	}
	agent := childOf(t, spans, nodeSpan, telemetry.SpanRunPrefix)
	if diff := cmp.Diff(usage, pickAttrs(agent, telemetry.KeyTokensKnown, telemetry.KeyInputTokens, telemetry.KeyOutputTokens)); diff != "" {
		t.Errorf("worker run usage (-want +got):\n%s", diff)
	}
	if agent.Attributes[telemetry.KeyOperation] != "invoke_agent" {
		t.Errorf("worker run attributes %v", agent.Attributes)
	}
	childOf(t, spans, agent, telemetry.SpanInference)
}

// unknownUsage is the usage attributes of a run whose provider reported
// none.
var unknownUsage = map[string]any{telemetry.KeyTokensKnown: false}

// Issue 16, behaviour 69 (OS-05, OS-06): `agentrt supervise` exports its
// supervised run — root, node, the worker's run and its turn, parented
// in the run's trace — and never the task or the worker's output.
func TestSuperviseExportsItsSpanTree(t *testing.T) {
	c := otlptest.New()
	defer c.Close()
	script := managerScript(t, `{"turns": [`+spawnNote+`, `+awaitOne+`, `+answerDone+`]}`)
	out := runTracedChild(t, otelEnv(c), superviseArgs(t, script, t.TempDir(), "--json")...)
	if got := member(decode(t, out), "status").Str(); got != "winner" {
		t.Fatalf("status %q: %s", got, out)
	}
	spans := c.Spans()
	checkSupervisedTrace(t, spans, "rel", "rel:s1", unknownUsage)
	noContent(t, spans, "Write release notes.", "Write a note.", "The note is in.")
}

// Issue 16 (OS-06): `agentrt graph` exports its graph's supervised run
// as behaviour 69's span tree.
func TestGraphExportsItsSpanTree(t *testing.T) {
	c := otlptest.New()
	defer c.Close()
	out := runTracedChild(t, otelEnv(c), "graph", reviewGraph, "--task", "Make the login tests pass.", "--directives", directives,
		"--run-dir", t.TempDir(), "--run-id", "login", "--db", filepath.Join(t.TempDir(), "runs.db"), "--json")
	if got := member(decode(t, out), "status").Str(); got != "winner" {
		t.Fatalf("status %q: %s", got, out)
	}
	spans := c.Spans()
	checkSupervisedTrace(t, spans, "login", "login:s1", unknownUsage)
	noContent(t, spans, "Make the login tests pass.")
}

// Issue 16 (OS-06): every answer of `agentrt chat` is a run traced in
// the trace derived from its own run id, with its turn under it.
func TestChatTracesEachAnswer(t *testing.T) {
	c := otlptest.New()
	defer c.Close()
	out := runTracedChildIn(t, otelEnv(c), "first question\nsecond question\n", "chat", "--json", "--db", filepath.Join(t.TempDir(), "runs.db"), noteWriter)
	lines := decodeLines(t, out)
	if len(lines) != 2 {
		t.Fatalf("%d answers, want 2:\n%s", len(lines), out)
	}
	spans := c.Spans()
	if len(spans) != 4 {
		t.Errorf("%d spans, want a run and a turn per answer: %+v", len(spans), spans)
	}
	for _, l := range lines {
		runID := member(l, "runId").Str()
		var runs []otlptest.Span
		for _, s := range spans {
			if s.Name == telemetry.SpanRunPrefix+" note-writer" && s.Attributes[telemetry.KeyRunID] == runID {
				runs = append(runs, s)
			}
		}
		if len(runs) != 1 {
			t.Fatalf("%d run spans for answer %s, want 1: %+v", len(runs), runID, spans)
		}
		r := runs[0]
		if r.TraceID != telemetry.TraceID(runID).String() || r.ParentID != "" {
			t.Errorf("answer %s: trace %s parent %q, want the root of %s", runID, r.TraceID, r.ParentID, telemetry.TraceID(runID))
		}
		if diff := cmp.Diff(map[string]any{telemetry.KeyRunKind: "chat", telemetry.KeyConversation: runID, telemetry.KeyRunStatus: "completed"},
			pickAttrs(r, telemetry.KeyRunKind, telemetry.KeyConversation, telemetry.KeyRunStatus)); diff != "" {
			t.Errorf("answer %s (-want +got):\n%s", runID, diff)
		}
		childOf(t, spans, r, telemetry.SpanInference)
	}
	noContent(t, spans, "first question", "second question")
}

// Issue 16 (OS-06, spec runtime §10 "trace id derived deterministically
// from runId"): `agentrt worker` traces each attempt it executes in the
// trace derived from the fleet run's id — not the attempt's — so an
// attempt of a run another worker took over lands in the same trace.
func TestWorkerTracesAttemptsInTheFleetRunsTrace(t *testing.T) {
	conn, schema := fleetDB(t)
	db := []string{"--database", conn, "--river-schema", schema}
	if out, errOut, code := run(t, "", append([]string{"fleet", "migrate"}, db...)...); code != 0 {
		t.Fatalf("fleet migrate: %d %s %s", code, out, errOut)
	}
	f := openTestFleet(t, conn, schema)
	raw, err := os.ReadFile(noteWriter)
	if err != nil {
		t.Fatal(err)
	}
	pv, err := canonjson.Decode(raw)
	if err != nil {
		t.Fatal(err)
	}
	sub, err := f.Submit(t.Context(), fleet.Submission{Spec: fleet.Spec{Profile: pv, Task: "Write the traced note.", Provider: "scripted"}})
	if err != nil {
		t.Fatal(err)
	}
	c := otlptest.New()
	defer c.Close()
	logs := new(lockedBuffer)
	cmd := startChild(t, func(cmd *exec.Cmd) {
		cmd.Env = append(withoutOTEL(cmd.Env), otelEnv(c)...)
		cmd.Stderr = logs
	}, append([]string{"worker", "--id", "traced", "--poll-interval", "100ms", "--log-format", "json"}, db...)...)
	var r *fleet.Run
	for deadline := time.Now().Add(2 * time.Minute); ; {
		if r, err = f.Get(t.Context(), sub.RunID); err == nil && r.Status.Terminal() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s not ended within 2 minutes (%v, %v):\n%s", sub.RunID, r, err, logs)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("worker: %v\n%s", err, logs)
		}
	case <-time.After(time.Minute):
		t.Fatalf("the worker did not stop within a minute of SIGTERM:\n%s", logs)
	}
	if len(r.Attempts) != 1 {
		t.Fatalf("attempts %+v, want 1", r.Attempts)
	}
	spans := c.Spans()
	if len(spans) != 2 {
		t.Fatalf("%d spans, want the attempt's run and turn: %+v", len(spans), spans)
	}
	attempt := childOf(t, spans, otlptest.Span{Name: "no parent"}, telemetry.SpanRunPrefix)
	if want := telemetry.TraceID(sub.RunID).String(); attempt.TraceID != want {
		t.Errorf("attempt in trace %s, want %s (derived from fleet run %s)", attempt.TraceID, want, sub.RunID)
	}
	if diff := cmp.Diff(map[string]any{telemetry.KeyConversation: sub.RunID, telemetry.KeyRunID: r.Attempts[0].RunID, telemetry.KeyRunStatus: "completed"},
		pickAttrs(attempt, telemetry.KeyConversation, telemetry.KeyRunID, telemetry.KeyRunStatus)); diff != "" {
		t.Errorf("attempt attributes (-want +got):\n%s", diff)
	}
	turn := childOf(t, spans, attempt, telemetry.SpanInference)
	if turn.TraceID != attempt.TraceID {
		t.Errorf("turn in trace %s, its run in %s", turn.TraceID, attempt.TraceID)
	}
	noContent(t, spans, "Write the traced note.")
}

// Issue 16 (OS-06): `agentrt mcp delegate` traces each delegation's
// supervised run as behaviour 69's span tree, in the trace derived from
// the delegation's task id.
func TestMCPDelegateTracesEachDelegation(t *testing.T) {
	ctx := mcpDeadline(t)
	c := otlptest.New()
	defer c.Close()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cmd := exec.Command(exe, append([]string{"mcp", "delegate"}, delegateArgs(writeFile(t, "fast.json", delegateFastScript),
		filepath.Join(dir, "delegations"), "--db", filepath.Join(dir, "agentrt.db"))...)...)
	cmd.Env = append(withoutOTEL(os.Environ()), append(otelEnv(c), "AGENTRT_CLI_CHILD=1", "AGENTRT_HOME="+dir)...)
	stderr := new(lockedBuffer)
	cmd.Stderr = stderr
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 30 * time.Second}, nil)
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, stderr)
	}
	done := toolResult(t, ctx, cs, "delegate", `{"intent": "write alpha", "waitSeconds": 60}`)
	taskID, _ := done["taskId"].(string)
	if done["state"] != "completed" || taskID == "" {
		t.Fatalf("delegation: %v", done)
	}
	if err := cs.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	if cmd.ProcessState == nil || !cmd.ProcessState.Success() {
		t.Fatalf("the server ended with %v: %s", cmd.ProcessState, stderr)
	}
	if strings.Contains(stderr.String(), "tracing") {
		t.Errorf("stderr: %s", stderr)
	}
	spans := c.Spans()
	checkSupervisedTrace(t, spans, taskID, taskID+":s1", map[string]any{telemetry.KeyInputTokens: int64(10), telemetry.KeyOutputTokens: int64(2)})
	noContent(t, spans, "write alpha", "alpha: DONE")
	// §9: the record carries the trace of its supervised run and that
	// run's root span, as exported.
	rec, _ := done["delegation"].(map[string]any)
	var root otlptest.Span
	for _, s := range spans {
		if s.Name == telemetry.SpanSupervisorRun {
			root = s
		}
	}
	if rec["traceId"] != telemetry.TraceID(taskID).String() || root.SpanID == "" || rec["parentSpanId"] != root.SpanID {
		t.Errorf("the record's traceId %v parentSpanId %v; want %s and the exported supervisor.run span %s", rec["traceId"], rec["parentSpanId"], telemetry.TraceID(taskID), root.SpanID)
	}
	if tree, _ := rec["trace"].([]any); len(tree) < 2 {
		t.Errorf("the record's span tree: %v", rec["trace"])
	}
}

// Issue 16 (OS-06): `agentrt serve` traces each request as a server span
// continuing the traceparent a remote provider sends: the request that
// starts the run's turn is a child of that turn's inference span, in the
// trace derived from the run id.
func TestServeContinuesTheCallersTrace(t *testing.T) {
	c := otlptest.New()
	defer c.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", c.URL)
	t.Setenv("AGENTRT_SERVE_TOKEN", serveToken)
	base := startServe(t)
	out := runTracedChild(t, otelEnv(c), "run", "--json", "--db", filepath.Join(t.TempDir(), "runs.db"), "--provider", "remote", "--base-url", base,
		noteWriter, "--task", "Write the served note.")
	runID := member(decode(t, out), "runId").Str()
	trace := telemetry.TraceID(runID).String()
	var run, turn otlptest.Span
	var served []otlptest.Span
	// The server exports on its batch interval (5 s): wait for it.
	for deadline := time.Now().Add(time.Minute); ; {
		served = served[:0]
		for _, s := range c.Spans() {
			switch {
			case s.Name == telemetry.SpanInference && s.TraceID == trace:
				turn = s
			case s.Name == telemetry.SpanRunPrefix+" note-writer" && s.TraceID == trace:
				run = s
			case s.Kind == 2 && s.TraceID == trace:
				served = append(served, s)
			}
		}
		if turn.SpanID != "" && run.SpanID != "" && len(served) > 0 && served[len(served)-1].Attributes[telemetry.KeyHTTPRoute] != nil {
			var hasTurn bool
			for _, s := range served {
				hasTurn = hasTurn || strings.HasSuffix(s.Name, "/turns")
			}
			if hasTurn {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no server span of the turn in trace %s within a minute: %+v", trace, c.Spans())
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, s := range served {
		// The turn's requests (its stream, and the read of the native
		// session it observed) continue the turn's span; the
		// environment's (capabilities, create) the run's.
		want := run.SpanID
		if strings.HasSuffix(s.Name, "/turns") || strings.HasSuffix(s.Name, "/native-session") {
			want = turn.SpanID
		}
		if s.ParentID != want || want == "" {
			t.Errorf("server span %s under %q, want %q (run %s, turn %s)", s.Name, s.ParentID, want, run.SpanID, turn.SpanID)
		}
		if !strings.HasPrefix(s.Name, s.Attributes[telemetry.KeyHTTPMethod].(string)+" /") || s.Attributes[telemetry.KeyHTTPStatus] == nil {
			t.Errorf("server span %s attributes %v", s.Name, s.Attributes)
		}
	}
	noContent(t, c.Spans(), "Write the served note.", serveToken)
}
