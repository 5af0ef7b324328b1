package cli_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/agentrt/agentrt/telemetry"
	"github.com/agentrt/agentrt/telemetry/otlptest"
)

// runTracedChild runs the real `agentrt run` in a child process with the
// OTEL variables given (and none inherited) and returns its JSON result.
func runTracedChild(t *testing.T, otelEnv []string, args ...string) string {
	t.Helper()
	return runTracedChildIn(t, otelEnv, "", args...)
}

// runTracedChildIn is runTracedChild with stdin.
func runTracedChildIn(t *testing.T, otelEnv []string, stdin string, args ...string) string {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := startChild(t, func(c *exec.Cmd) {
		var env []string
		for _, kv := range c.Env {
			if !strings.HasPrefix(kv, "OTEL_") {
				env = append(env, kv)
			}
		}
		c.Env = append(env, otelEnv...)
		c.Stdin = strings.NewReader(stdin)
		c.Stdout, c.Stderr = &out, &errOut
	}, args...)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("agentrt %s: %v\n%s%s", args[0], err, out.String(), errOut.String())
	}
	if strings.Contains(errOut.String(), "tracing") {
		t.Errorf("stderr: %s", errOut.String())
	}
	return out.String()
}

// Issue 16 item 2 (OS-06, spec runtime §10): a real `agentrt run` with
// OTEL_EXPORTER_OTLP_ENDPOINT set exports its spans over OTLP/HTTP — the
// run, its turn and its tool call, parented in the run's own trace, with
// the GenAI attributes and the configured headers — and its metrics.
func TestRunExportsSpansToAnOTLPCollector(t *testing.T) {
	c := otlptest.New()
	defer c.Close()
	script := writeFile(t, "tool.json", `{"turns":[{"steps":[{"text":"A note."},{"toolCall":{"id":"call-1","name":"read_file","arguments":{"path":"NOTES.md"}}},{"usage":{"inputTokens":12,"outputTokens":5},"mode":"delta"}]}]}`)
	db := filepath.Join(t.TempDir(), "runs.db")
	out := runTracedChild(t, []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + c.URL, "OTEL_EXPORTER_OTLP_HEADERS=x-api-key=s3cret"},
		"run", "--json", "--db", db, "--script", script, noteWriter, "--task", "Write a note.")
	runID := member(decode(t, out), "runId").Str()
	if runID == "" {
		t.Fatalf("no run id in %s", out)
	}
	spans := map[string]otlptest.Span{}
	for _, s := range c.Spans() {
		spans[s.Name] = s
	}
	run, turn, tool := spans["invoke_agent note-writer"], spans[telemetry.SpanInference], spans[telemetry.SpanToolCall]
	if len(c.Spans()) != 3 || run.Name == "" || turn.Name == "" || tool.Name == "" {
		t.Fatalf("spans %+v", c.Spans())
	}
	wantTrace := telemetry.TraceID(runID).String()
	for _, s := range []otlptest.Span{run, turn, tool} {
		if s.TraceID != wantTrace {
			t.Errorf("%s in trace %s, want %s (derived from run %s)", s.Name, s.TraceID, wantTrace, runID)
		}
		if s.Scope != telemetry.ScopeName || s.Resource["service.name"] != "agentrt" {
			t.Errorf("%s scope %q resource %v", s.Name, s.Scope, s.Resource)
		}
	}
	if run.ParentID != "" || turn.ParentID != run.SpanID || tool.ParentID != turn.SpanID {
		t.Errorf("parentage: run←%q, turn←%q (run %s), tool←%q (turn %s)", run.ParentID, turn.ParentID, run.SpanID, tool.ParentID, turn.SpanID)
	}
	pick := func(s otlptest.Span, keys ...string) map[string]any {
		m := map[string]any{}
		for _, k := range keys {
			if v, ok := s.Attributes[k]; ok {
				m[k] = v
			}
		}
		return m
	}
	if diff := cmp.Diff(map[string]any{
		"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "note-writer", "gen_ai.conversation.id": runID,
		"gen_ai.request.model": "scripted/note-writer", "gen_ai.response.model": "scripted/note-writer",
		"gen_ai.usage.input_tokens": int64(12), "gen_ai.usage.output_tokens": int64(5), "tangle.run.status": "completed",
	}, pick(run, "gen_ai.operation.name", "gen_ai.agent.name", "gen_ai.conversation.id", "gen_ai.request.model", "gen_ai.response.model",
		"gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens", "tangle.run.status", "gen_ai.system")); diff != "" {
		t.Errorf("run attributes (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]any{
		"gen_ai.operation.name": "chat", "gen_ai.response.finish_reasons": []any{"completed"}, "gen_ai.usage.input_tokens": int64(12),
	}, pick(turn, "gen_ai.operation.name", "gen_ai.response.finish_reasons", "gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens")); diff != "" {
		t.Errorf("turn attributes (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]any{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "read_file", "gen_ai.tool.call.id": "call-1"},
		pick(tool, "gen_ai.operation.name", "gen_ai.tool.name", "gen_ai.tool.call.id", "tool.input")); diff != "" {
		t.Errorf("tool attributes (-want +got):\n%s", diff)
	}
	if run.StatusCode != 1 || turn.Kind != 3 {
		t.Errorf("run status %d, turn kind %d", run.StatusCode, turn.Kind)
	}
	if diff := cmp.Diff([]string{telemetry.MetricRuns, telemetry.MetricTokenUsage, telemetry.MetricTurnDuration}, c.MetricNames(),
		cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
		t.Errorf("metrics (-want +got):\n%s", diff)
	}
	for _, h := range c.Headers() {
		if h.Get("x-api-key") != "s3cret" {
			t.Errorf("export request without the configured header: %v", h)
		}
	}
}

// Behaviour 68: with no OTLP endpoint configured nothing is exported and
// the run is unchanged.
func TestRunWithoutEndpointIsUntraced(t *testing.T) {
	c := otlptest.New()
	defer c.Close()
	db := filepath.Join(t.TempDir(), "runs.db")
	out := runTracedChild(t, []string{"OTEL_EXPORTER_OTLP_HEADERS=x-api-key=s3cret", "OTEL_SERVICE_NAME=agentrt"},
		"run", "--json", "--db", db, noteWriter, "--task", "Write a note.")
	if got := member(decode(t, out), "status").Str(); got != "completed" {
		t.Errorf("status %q", got)
	}
	if n := len(c.Spans()); n != 0 {
		t.Errorf("%d spans exported without an endpoint", n)
	}
	if _, err := os.Stat(db); err != nil {
		t.Error(err)
	}
}

// A collector that cannot be reached changes nothing about the run: it
// completes, exits 0, and the undelivered spans are reported on stderr.
func TestUnreachableCollectorIsReportedNotFatal(t *testing.T) {
	c := otlptest.New()
	c.Close() // nothing listens there any more
	var out, errOut bytes.Buffer
	db := filepath.Join(t.TempDir(), "runs.db")
	cmd := startChild(t, func(cmd *exec.Cmd) {
		cmd.Env = append(cmd.Env, "OTEL_EXPORTER_OTLP_ENDPOINT="+c.URL, "OTEL_EXPORTER_OTLP_HEADERS=x-api-key=s3cret")
		cmd.Stdout, cmd.Stderr = &out, &errOut
	}, "run", "--json", "--db", db, noteWriter, "--task", "Write a note.")
	if err := cmd.Wait(); err != nil {
		t.Fatalf("agentrt run: %v\n%s", err, errOut.String())
	}
	if got := member(decode(t, out.String()), "status").Str(); got != "completed" {
		t.Errorf("status %q", got)
	}
	if e := errOut.String(); !strings.Contains(e, "tracing: 0 spans delivered, 2 undelivered, 0 dropped") || strings.Contains(e, "s3cret") {
		t.Errorf("stderr %q", e)
	}
}
