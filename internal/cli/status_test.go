package cli

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt/contract"
)

// screenLine plays what a status line wrote onto one line of a terminal:
// a carriage return goes to column 0, a backspace one column left, any
// other character overwrites the column under the cursor. It returns the
// visible line and the cursor's column.
func screenLine(t *testing.T, out string) (string, int) {
	t.Helper()
	var line []rune
	col := 0
	for _, r := range out {
		switch r {
		case '\r':
			col = 0
		case '\b':
			col = max(col-1, 0)
		case '\n':
			t.Fatalf("the status line wrote a newline: %q", out)
		default:
			if col < len(line) {
				line[col] = r
			} else {
				line = append(line, r)
			}
			col++
		}
	}
	return strings.TrimRight(string(line), " "), col
}

// On a terminal the line is rewritten in place: a shorter message leaves
// nothing of a longer one, the cursor ends after the message, and done
// leaves the line blank.
func TestStatusLineRewritesInPlace(t *testing.T) {
	var b strings.Builder
	s := &statusLine{w: &b, tty: true, width: 40}
	s.set("waiting for the first token · 1.2s")
	s.set("tool search called")
	if line, col := screenLine(t, b.String()); line != "tool search called" || col != len("tool search called") {
		t.Errorf("screen %q with the cursor at %d, want the last message alone, cursor after it", line, col)
	}
	s.set(strings.Repeat("x", 100))
	if line, _ := screenLine(t, b.String()); line != strings.Repeat("x", 38)+"…" {
		t.Errorf("a long message shows as %q; want it clipped below the width (a wrapped line cannot be rewritten)", line)
	}
	s.done()
	if line, col := screenLine(t, b.String()); line != "" || col != 0 {
		t.Errorf("after done the screen shows %q, cursor at %d; want a blank line", line, col)
	}
	b.Reset()
	s.done()
	if b.Len() != 0 {
		t.Errorf("clearing a cleared line wrote %q", b.String())
	}
}

// Off a terminal every message is a line of its own, and done writes
// nothing.
func TestStatusLinePlain(t *testing.T) {
	var b strings.Builder
	s := &statusLine{w: &b}
	s.set("first token after 12ms")
	s.set("tool search called")
	s.done()
	if got, want := b.String(), "first token after 12ms\ntool search called\n"; got != want {
		t.Errorf("plain status wrote %q, want %q", got, want)
	}
}

// Text on the same screen is never split by the line: yield clears it
// first, and it comes back only once the text has ended a line.
func TestStatusLineYieldsToText(t *testing.T) {
	var b strings.Builder
	s := &statusLine{w: &b, tty: true, width: 80}
	s.set("waiting")
	s.yield(func() { b.WriteString("first") }, false)
	s.set("tool search called") // while the text is mid-line
	if got := b.String(); !strings.HasSuffix(got, "\rfirst") {
		t.Errorf("the screen ends %q: the status line was drawn over or after unfinished text", got)
	}
	s.yield(func() { b.WriteString(" second\n") }, true)
	if got := b.String(); !strings.HasSuffix(got, "first second\n\rtool search called") {
		t.Errorf("the screen ends %q: want the text whole, then the newest status on a line of its own", got)
	}
}

// Each kind of wait the run stream carries becomes one status message;
// a tool call's state shows once per change, however often it repeats.
func TestLiveRunStatusMessages(t *testing.T) {
	var status, text strings.Builder
	l := newLiveRun(liveOptions{Text: &text, Status: &status, Label: "p.json with fake", Short: "fake"})
	start := time.Unix(1000, 0)
	l.now = func() time.Time { return start }
	l.begin()
	l.now = func() time.Time { return start.Add(1500 * time.Millisecond) }
	tool := func(st string, errMsg *string) contract.StreamEvent {
		return contract.StreamEvent{Type: contract.EventTypeMessagePartUpdated, MessagePartUpdated: &contract.MessagePartUpdatedEvent{
			Part: contract.Part{ID: "p1", Type: contract.PartTypeTool, CallID: ptr("c1"), Tool: ptr("grep"),
				State: &contract.ToolState{Status: st, Error: errMsg}}}}
	}
	delta := func(s string) contract.StreamEvent {
		return contract.StreamEvent{Type: contract.EventTypeMessagePartUpdated, MessagePartUpdated: &contract.MessagePartUpdatedEvent{
			Part: contract.Part{ID: "t1", Type: contract.PartTypeText, Text: ptr(s)}, Delta: ptr(s)}}
	}
	for _, e := range []contract.StreamEvent{
		{Type: contract.EventTypeModelProcessing, ModelProcessing: &contract.ModelProcessingEvent{Phase: contract.ModelPhaseThinking}},
		{Type: contract.EventTypeModelProcessing, ModelProcessing: &contract.ModelProcessingEvent{Phase: contract.ModelPhaseThinking}},
		delta("Hel"),
		delta("lo"),
		tool(contract.ToolStatusPending, nil),
		tool(contract.ToolStatusRunning, nil),
		tool(contract.ToolStatusRunning, nil),
		{Type: contract.EventTypeToolHeartbeat, ToolHeartbeat: &contract.ToolHeartbeatEvent{ToolName: "grep", PartID: "p1", ElapsedMs: 3000}},
		{Type: contract.EventTypeToolSlow, ToolSlow: &contract.ToolSlowEvent{ToolName: "grep", PartID: "p1", ElapsedMs: 12000, ThresholdMs: 10000}},
		tool(contract.ToolStatusError, ptr("no such\nfile")),
		{Type: contract.EventTypeModelProcessing, ModelProcessing: &contract.ModelProcessingEvent{Phase: contract.ModelPhaseToolResult, ToolName: ptr("grep")}},
		{Type: contract.EventTypeInteraction, Interaction: &contract.InteractionEvent{Request: contract.InteractionRequest{ID: "q1", Kind: "question", Title: "Which colour?"}}},
		{Type: contract.EventTypeInteractionCancel, InteractionCancel: &contract.InteractionCancelEvent{ID: "q1"}},
		{Type: contract.EventTypeWarning, Warning: &contract.WarningEvent{Code: "tool-call-not-run", Message: "no tools"}},
		contract.StatusStreamEvent(contract.StreamStatusCompleted, nil),
	} {
		l.event(contract.EventEnvelope{Event: e})
	}
	l.end("Hello")
	want := []string{
		"running p.json with fake…",
		"model thinking",
		"first token after 1.5s",
		"tool grep called",
		"tool grep running",
		"tool grep running for 3s",
		"tool grep slow: running for 12s (over 10s)",
		"tool grep failed: no such file",
		"model reading the result of grep",
		"waiting for an answer (question q1): Which colour?",
		"interaction q1 withdrawn",
		"warning tool-call-not-run: no tools",
	}
	if got := strings.Split(strings.TrimSuffix(status.String(), "\n"), "\n"); !slices.Equal(got, want) {
		t.Errorf("status lines:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if text.String() != "Hello\n\n" {
		t.Errorf("text %q: want the deltas once (not the final text again), then a blank line", text.String())
	}
}

// A provider that streams no deltas still shows its text: the recorded
// text, at the end.
func TestLiveRunFinalTextWithoutDeltas(t *testing.T) {
	var text strings.Builder
	l := newLiveRun(liveOptions{Text: &text})
	l.begin()
	l.end("all at once")
	if text.String() != "all at once\n\n" {
		t.Errorf("text %q", text.String())
	}
}

func ptr[T any](v T) *T { return &v }

// The count updates each time it passes a multiple of every, not on
// every page, and is gone at the end.
func TestCounter(t *testing.T) {
	var b strings.Builder
	c := &counter{line: &statusLine{w: &b, tty: true, width: 80}, what: "events", every: 1000, next: 1000}
	var shown []string
	for range 5 {
		c.add(500)
		line, _ := screenLine(t, b.String())
		shown = append(shown, line)
	}
	c.done()
	if want := []string{"", "1000 events…", "1000 events…", "2000 events…", "2000 events…"}; !slices.Equal(shown, want) {
		t.Errorf("the count showed %q", shown)
	}
	if line, _ := screenLine(t, b.String()); line != "" {
		t.Errorf("after done the line shows %q", line)
	}
}

// On a terminal the status line's clock ticks by itself while the run
// waits, and stops and clears at the end.
func TestLiveRunTicks(t *testing.T) {
	var status strings.Builder
	l := newLiveRun(liveOptions{Status: &status, Short: "fake"})
	l.status.tty = true // a terminal, as far as the line is concerned
	l.begin()
	time.Sleep(3*tickEvery + tickEvery/2)
	l.event(contract.EventEnvelope{Event: contract.StreamEvent{Type: contract.EventTypeWarning,
		Warning: &contract.WarningEvent{Code: "w", Message: "careful"}}})
	l.end("")
	out := status.String()
	if n := strings.Count(out, "\rfake · "); n < 4 {
		t.Errorf("the line was drawn %d times in 3.5 ticks:\n%q", n, out)
	}
	if !strings.Contains(out, " · warning w: careful") {
		t.Errorf("the line never showed the warning:\n%q", out)
	}
	if line, _ := screenLine(t, out); line != "" {
		t.Errorf("after end the line shows %q", line)
	}
}
