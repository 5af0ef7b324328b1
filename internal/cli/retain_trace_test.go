package cli_test

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/telemetry"
	"github.com/agentrt/agentrt/telemetry/otlptest"
)

// Issue 16 item 2 (OS-06; spec runtime §10 "trace id derived from the run
// id so a resumed run rejoins its trace"): a retained run is one trace
// across the processes that work on it. `agentrt run --retain` exports
// the run's root span (trace and span id derived from the record id) once
// the run is dispatched; it is then SIGKILLed mid-turn. `agentrt runs
// recover` and `agentrt runs attach`, each a process of its own, export
// their spans under that root; the provider (`agentrt serve`, traced
// too) received the run's trace context with the dispatch.
func TestRetainedRunIsOneTraceAcrossProcesses(t *testing.T) {
	c := otlptest.New()
	defer c.Close()
	// agentrt serve inherits the endpoint from this process's environment.
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", c.URL)
	script := writeFile(t, "slow.json", `{"turns":[{"repeat":true,"steps":[{"text":"first part "},{"delayMs":1500},{"text":"second part"}]}]}`)
	url := startServe(t, "--provider", "scripted", "--script", script)
	t.Setenv("AGENTRT_SERVE_TOKEN", serveToken)
	db := []string{"--db", filepath.Join(t.TempDir(), "agentrt.db")}
	remote := []string{"--provider", "remote", "--base-url", url}

	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	starter := startChild(t, func(cmd *exec.Cmd) {
		cmd.Env = append(withoutOTEL(cmd.Env), otelEnv(c)...)
		cmd.Stdout = w
	}, append(append([]string{"run", noteWriter, "--task", "Work long.", "--retain", "--json"}, remote...), db...)...)
	w.Close()
	lines := bufio.NewScanner(r)
	var record, cursor string
	var sequence int64
	for lines.Scan() {
		v := decode(t, lines.Text())
		if ref, ok := v.Get("controlRef"); ok {
			record = member(ref, "record").Str()
			continue
		}
		if strings.Contains(string(canonjson.Marshal(v)), "first part") {
			cursor, sequence = member(v, "cursor").Str(), int64(member(v, "sequence").Float())
			break
		}
	}
	if record == "" || cursor == "" {
		t.Fatalf("the starter printed no control ref or no first event (%v)", lines.Err())
	}
	if err := starter.Process.Kill(); err != nil { // SIGKILL: its follow span is never exported
		t.Fatal(err)
	}
	_ = starter.Wait()
	r.Close()

	out := runTracedChild(t, otelEnv(c), append(append([]string{"runs", "recover", record, "--json"}, remote...), db...)...)
	if got := member(decode(t, out), "outcome").Str(); got != "recovered" {
		t.Fatalf("runs recover: %s", out)
	}
	out = runTracedChild(t, otelEnv(c), append(append([]string{"runs", "attach", record, "--json",
		"--after-cursor", cursor, "--after-sequence", strconv.FormatInt(sequence, 10)}, remote...), db...)...)
	if got := jsonLines(t, out); !member(got[len(got)-1], "success").Bool() {
		t.Fatalf("runs attach: %s", out)
	}

	trace := telemetry.TraceID(record).String()
	var spans []otlptest.Span
	var root otlptest.Span
	// agentrt serve exports on its batch interval (5 s): wait for its span
	// of the dispatch, which carried the root's trace context, and of the
	// attach's event stream, which carried the attach's.
	for deadline := time.Now().Add(time.Minute); ; {
		spans = spans[:0]
		var dispatch bool
		follows, events := map[string]bool{}, map[string]bool{}
		for _, s := range c.Spans() {
			if s.TraceID != trace {
				continue
			}
			spans = append(spans, s)
			switch {
			case s.ParentID == "":
				root = s
			case s.Name == telemetry.SpanInference:
				follows[s.SpanID] = true
			case s.Kind == 2 && strings.HasSuffix(s.Name, "/events"):
				events[s.ParentID] = true
			}
			dispatch = dispatch || s.Kind == 2 && strings.HasSuffix(s.Name, "/dispatch") && s.ParentID == telemetry.RetainedSpanID(record).String()
		}
		var followed bool
		for id := range follows {
			followed = followed || events[id]
		}
		// The server's span of the attach's event stream, too.
		if dispatch && root.SpanID != "" && followed {
			break
		}
		if time.Now().After(deadline) {
			for _, s := range c.Spans() {
				t.Logf("%s %s %s parent %q kind %d", s.Name, s.TraceID, s.SpanID, s.ParentID, s.Kind)
			}
			t.Fatalf("no root span and server span of the dispatch in trace %s within a minute", trace)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if root.Name != telemetry.SpanRunPrefix+" note-writer" || root.SpanID != telemetry.RetainedSpanID(record).String() || root.StatusCode != 1 {
		t.Errorf("root span %+v, want the starter's invoke_agent note-writer with span id %s, status ok", root, telemetry.RetainedSpanID(record))
	}
	if diff := cmp.Diff(map[string]any{telemetry.KeyOperation: "invoke_agent", telemetry.KeyRunID: record, telemetry.KeyConversation: record,
		telemetry.KeyRunKind: "retained", telemetry.KeyRetainedStep: "start", telemetry.KeyAgentName: "note-writer"},
		pickAttrs(root, telemetry.KeyOperation, telemetry.KeyRunID, telemetry.KeyConversation, telemetry.KeyRunKind, telemetry.KeyRetainedStep, telemetry.KeyAgentName)); diff != "" {
		t.Errorf("root attributes (-want +got):\n%s", diff)
	}
	recovered := childOf(t, spans, root, telemetry.SpanRetainedRecover)
	if diff := cmp.Diff(map[string]any{telemetry.KeyRetainedStep: "recover", telemetry.KeyRetainedOutcome: "recovered"},
		pickAttrs(recovered, telemetry.KeyRetainedStep, telemetry.KeyRetainedOutcome)); diff != "" || recovered.StatusCode != 1 {
		t.Errorf("recover span status %d, attributes (-want +got):\n%s", recovered.StatusCode, diff)
	}
	// Only the attach's follow span: the starter died following.
	followed := childOf(t, spans, root, telemetry.SpanInference)
	if diff := cmp.Diff(map[string]any{telemetry.KeyOperation: "chat", telemetry.KeyRetainedStep: "follow", telemetry.KeyRunStatus: "completed",
		telemetry.KeyFinishReasons: []any{"completed"}, telemetry.KeyTokensKnown: false, telemetry.KeyCostKnown: false},
		pickAttrs(followed, telemetry.KeyOperation, telemetry.KeyRetainedStep, telemetry.KeyRunStatus, telemetry.KeyFinishReasons,
			telemetry.KeyTokensKnown, telemetry.KeyCostKnown, telemetry.KeyInputTokens, telemetry.KeyOutputTokens)); diff != "" || followed.StatusCode != 1 {
		t.Errorf("attach's follow span status %d, attributes (-want +got):\n%s", followed.StatusCode, diff)
	}
	// The attach's requests carried its follow span on.
	childOf(t, spans, followed, "POST /v1/environments/{id}/sessions/{session}/events")
	noContent(t, c.Spans(), "Work long.", "first part", "second part", serveToken)
}

// Issue 16 item 2: `agentrt run --retain` again with the same --key and
// --turn-id replays the run; its start span is then a child of the
// run's root, marked replayed, never a second span with the root's id.
func TestRetainedReplayIsNotASecondRoot(t *testing.T) {
	c := otlptest.New()
	defer c.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", c.URL)
	open := sharedProvider(10 * time.Millisecond)
	args := []string{"run", noteWriter, "--task", "Work long.", "--retain", "--detach", "--json", "--key", "replayed-key",
		"--db", filepath.Join(t.TempDir(), "agentrt.db")}
	var records []string
	for range 2 {
		out, errOut, code := runWith(t, open, args...)
		if code != 0 {
			t.Fatalf("run --retain: exit %d %s%s", code, out, errOut)
		}
		records = append(records, member(member(decode(t, strings.TrimSpace(out)), "controlRef"), "record").Str())
	}
	if records[0] != records[1] {
		t.Fatalf("records %v, want the same run twice", records)
	}
	record, rootID := records[0], telemetry.RetainedSpanID(records[0]).String()
	var roots, replays []otlptest.Span
	for _, s := range c.Spans() {
		if s.TraceID != telemetry.TraceID(record).String() {
			t.Errorf("%s in trace %s, want %s", s.Name, s.TraceID, telemetry.TraceID(record))
		}
		switch {
		case s.SpanID == rootID:
			roots = append(roots, s)
		case s.Attributes[telemetry.KeyRetainedReplayed] == true:
			replays = append(replays, s)
		}
	}
	if len(roots) != 1 || roots[0].ParentID != "" || len(replays) != 1 || replays[0].ParentID != rootID ||
		replays[0].Name != telemetry.SpanRunPrefix+" note-writer" {
		t.Errorf("root spans %+v and replayed starts %+v, want one root and one replay under it", roots, replays)
	}
}
