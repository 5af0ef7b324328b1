package supervise

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/kernel"
)

// spanRecorder is a caller's detector that records the spans it sees
// and trips on none.
type spanRecorder struct {
	mu    sync.Mutex
	spans []ToolSpan
}

func (r *spanRecorder) Kind() string            { return "recorder" }
func (r *spanRecorder) NewWatch() DetectorWatch { return r }
func (r *spanRecorder) Observe(s ToolSpan) (Detection, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s.AtMS = 0
	r.spans = append(r.spans, s)
	return Detection{}, false
}

// toolPart is a message.part.updated event of tool part id.
func toolPart(t *testing.T, id, tool, status string, input map[string]canonjson.Value, errText string) contract.EnvironmentEvent {
	t.Helper()
	st := &contract.ToolState{Status: status, Input: input}
	if errText != "" {
		st.Error = &errText
	}
	ev, err := contract.NewStreamEvent(&contract.MessagePartUpdatedEvent{Part: contract.Part{ID: id, SessionID: "s", MessageID: "m",
		Type: contract.PartTypeTool, CallID: &id, Tool: &tool, State: st}})
	if err != nil {
		t.Fatal(err)
	}
	return contract.EnvironmentEvent{Type: contract.EventTypeMessagePartUpdated, Normalized: &ev}
}

// §3.6 watchWorkers, the environment arm: a tool part is one span, seen
// when it reaches a terminal state (completed: ok; error or failed:
// error, with its text) — however many updates it streams, and with
// parallel calls ending out of order — and a part that never ends is
// seen, its end unknown, as its turn ends. The arguments' digest is
// canonical: member order does not change it.
func TestWatchSpansFromToolParts(t *testing.T) {
	q := func(v string) map[string]canonjson.Value {
		return map[string]canonjson.Value{"q": canonjson.StringValue(v)}
	}
	two := map[string]canonjson.Value{"a": canonjson.StringValue("1"), "b": canonjson.StringValue("2")}
	digest := func(m map[string]canonjson.Value) string { return argsDigest(objectOf(m)) }
	rec := &spanRecorder{}
	c := &Coordinator{core: &core{now: time.Now, logger: slog.New(slog.DiscardHandler), analysts: map[NodeID]analystOf{},
		watch: &WatchWorkers{Detectors: []Detector{rec}}, watchRaised: map[NodeID]int{}}}
	obs := c.watchFor("run:w1", nil, nil)
	ctx := context.Background()
	for _, e := range []contract.EnvironmentEvent{
		toolPart(t, "p1", "grep", contract.ToolStatusPending, q("x"), ""),
		toolPart(t, "p1", "grep", contract.ToolStatusRunning, q("x"), ""),
		toolPart(t, "p2", "bash", contract.ToolStatusPending, two, ""),
		toolPart(t, "p2", "bash", contract.ToolStatusFailed, two, "exit 1"),
		toolPart(t, "p1", "grep", contract.ToolStatusCompleted, q("x"), ""),
		toolPart(t, "p1", "grep", contract.ToolStatusCompleted, q("x"), ""), // repeated terminal update
		toolPart(t, "p3", "edit", contract.ToolStatusError, q("y"), "no such file"),
		toolPart(t, "p4", "grep", contract.ToolStatusPending, q("z"), ""),
	} {
		if err := obs.Event(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	if err := obs.TurnEnded(ctx, kernel.TurnEnd{}); err != nil {
		t.Fatal(err)
	}
	want := []ToolSpan{
		{Tool: "bash", ArgsDigest: digest(two), Status: SpanError, Error: "exit 1"},
		{Tool: "grep", ArgsDigest: digest(q("x")), Status: SpanOK},
		{Tool: "edit", ArgsDigest: digest(q("y")), Status: SpanError, Error: "no such file"},
		{Tool: "grep", ArgsDigest: digest(q("z")), Status: SpanUnknown},
	}
	if diff := cmp.Diff(want, rec.spans); diff != "" {
		t.Errorf("spans (-want +got):\n%s", diff)
	}
	reordered := canonjson.ObjectValue([]canonjson.Member{{Name: "b", Value: canonjson.StringValue("2")}, {Name: "a", Value: canonjson.StringValue("1")}})
	if argsDigest(reordered) != digest(two) {
		t.Errorf("the digest depends on member order")
	}
}

// The built-in detectors' rules, the reference's: the stuck loop trips
// at the third consecutive identical call and on every repeat after it,
// a different call resets it; the error streak trips at the third
// consecutive error, a good call resets it, an unknown end leaves it.
func TestBuiltinDetectors(t *testing.T) {
	call := func(tool, args string, st SpanStatus) ToolSpan {
		return ToolSpan{Tool: tool, ArgsDigest: args, Status: st}
	}
	for _, tc := range []struct {
		name  string
		d     Detector
		spans []ToolSpan
		want  []int // the streak of each trip, in order
	}{
		{"stuck loop", StuckLoop(3), []ToolSpan{call("g", "x", SpanOK), call("g", "x", SpanOK), call("g", "x", SpanOK), call("g", "x", SpanOK),
			call("g", "y", SpanOK), call("g", "x", SpanOK), call("g", "x", SpanOK)}, []int{3, 4}},
		{"stuck loop: another tool", StuckLoop(3), []ToolSpan{call("g", "x", SpanOK), call("h", "x", SpanOK), call("g", "x", SpanOK)}, nil},
		{"stuck loop off", StuckLoop(0), []ToolSpan{call("g", "x", SpanOK), call("g", "x", SpanOK), call("g", "x", SpanOK)}, nil},
		{"error streak", ErrorStreak(3), []ToolSpan{call("a", "1", SpanError), call("a", "2", SpanError), call("a", "3", SpanUnknown),
			call("a", "4", SpanError), call("a", "5", SpanError), call("a", "6", SpanOK), call("a", "7", SpanError)}, []int{3, 4}},
		{"error streak off", ErrorStreak(-1), []ToolSpan{call("a", "1", SpanError), call("a", "2", SpanError), call("a", "3", SpanError)}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := tc.d.NewWatch()
			var got []int
			for _, s := range tc.spans {
				if d, ok := w.Observe(s); ok {
					got = append(got, d.Streak)
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("trips (-want +got):\n%s", diff)
			}
		})
	}
}

// A resumed run counts the online findings its coordination log holds
// against each worker's cap (replayQuestions), and the spawn journal of
// a store keeps them as KindFindingDetected records that read back as
// the same coordination records.
func TestWatchResumeCountsJournaledFindings(t *testing.T) {
	f := CoordRecord{Kind: CoordFinding, Finding: &FindingRecord{Outcome: FindingDetected, Lens: "online:error-streak", Source: "run:w1",
		Findings: `{"detector":"error-streak","streak":3}`}}
	rec, ok := questionRecord(f)
	if !ok || rec.Kind != KindFindingDetected {
		t.Fatalf("questionRecord = %+v, %v", rec, ok)
	}
	back, ok := coordRecord(rec)
	if !ok {
		t.Fatal("coordRecord refused a finding-detected record")
	}
	if diff := cmp.Diff(f, back); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	c := &Coordinator{core: &core{now: time.Now, logger: slog.New(slog.DiscardHandler), analysts: map[NodeID]analystOf{},
		watch: &WatchWorkers{MaxFindingsPerWorker: 2}, watchRaised: map[NodeID]int{}, log: &runLog{questionsInSpawn: true}}}
	c.replayQuestions(context.Background(), []Record{rec, rec})
	if got := c.watchRaised["run:w1"]; got != 2 {
		t.Fatalf("replayed %d findings of run:w1, want 2", got)
	}
	// Its cap is spent: the error streak trips, and nothing is raised.
	obs, ok := c.watchFor("run:w1", nil, nil).(watchObserver)
	if !ok {
		t.Fatal("run:w1 is not watched")
	}
	for range 4 {
		if err := obs.ToolEnded(context.Background(), kernel.ToolCallEnd{Call: contract.ToolCall{Name: "build"}, Outcome: kernel.ToolOutcome{Code: "x"}}); err != nil {
			t.Fatal(err)
		}
	}
	if obs.w.raised != 2 {
		t.Errorf("the worker has raised %d findings, want the 2 journaled before", obs.w.raised)
	}
}
