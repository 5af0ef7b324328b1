package supervise_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/internal/journaltest"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/supervise"
)

// loopWorker runs each worker as a real kernel tool loop on a scripted
// chat model: one call of tool "build" per turn with the given
// arguments, in order, then a final "DONE". build fails when fail is
// set; the call at index blockAt (-1: none) waits for release first.
// With observe false the executor does not pass Work.Observer on: its
// worker exposes no trace.
func loopWorker(args []string, fail bool, blockAt int, release <-chan struct{}, observe bool) supervise.ExecutorFunc {
	return func(ctx context.Context, w supervise.Work) (supervise.WorkResult, error) {
		var turns []scripted.ChatTurn
		for i, a := range args {
			turns = append(turns, turn(scripted.Call(fmt.Sprintf("b%d", i), "build", a)))
		}
		turns = append(turns, turn(scripted.Text("DONE")))
		var n atomic.Int64
		build := contract.Tool{Name: "build", Run: func(ctx context.Context, _ canonjson.Value) (canonjson.Value, error) {
			if int(n.Add(1)-1) == blockAt {
				select {
				case <-release:
				case <-ctx.Done():
					return canonjson.Value{}, ctx.Err()
				}
			}
			if fail {
				return canonjson.Value{}, errors.New("build failed")
			}
			return canonjson.StringValue("built"), nil
		}}
		o := kernel.ToolLoopOptions{Model: scripted.NewChatModel(scripted.ChatScript{Turns: turns}), User: w.Task,
			Tools: []contract.Tool{build}, MaxToolTurns: 20, RunID: string(w.Node)}
		if observe {
			o.Observer = w.Observer
		}
		res, err := kernel.RunToolLoop(ctx, o)
		if err != nil {
			return supervise.WorkResult{}, err
		}
		return supervise.WorkResult{Text: res.FinalText}, nil
	}
}

// distinct is n different build arguments.
func distinct(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf(`{"target":"t%d"}`, i)
	}
	return out
}

// awaitAll awaits every event of the run's one worker until its
// settlement, through await_event.
func awaitAll(t *testing.T, ctx context.Context, c *supervise.Coordinator) []map[string]any {
	t.Helper()
	var out []map[string]any
	for range 20 {
		r := tool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{"timeoutMs": 30000})
		ev, _ := r["event"].(map[string]any)
		if ev == nil {
			t.Fatalf("await_event returned no event: %v", r)
		}
		out = append(out, ev)
		if ev["kind"] == supervise.EventSettled {
			return out
		}
	}
	t.Fatal("no settlement after 20 events")
	return nil
}

// findingOf decodes an online finding event's output.
func findingOf(t *testing.T, ev map[string]any) supervise.OnlineFinding {
	t.Helper()
	var f supervise.OnlineFinding
	s, _ := ev["output"].(string)
	if err := json.Unmarshal([]byte(s), &f); err != nil {
		t.Fatalf("finding output %q: %v", s, err)
	}
	return f
}

// detected is the coordination log's online findings.
func detected(t *testing.T, dir string) []supervise.FindingRecord {
	t.Helper()
	recs, _, err := supervise.ReadCoordinationLog(context.Background(), dir)
	if err != nil {
		return nil
	}
	var out []supervise.FindingRecord
	for _, r := range recs {
		if r.Kind == supervise.CoordFinding && r.Finding != nil && r.Finding.Outcome == supervise.FindingDetected {
			out = append(out, *r.Finding)
		}
	}
	return out
}

// §3.6 watchWorkers, the tool-loop arm: a worker whose build fails three
// calls in a row raises one error-streak finding that its manager's
// await_event returns while the worker still runs (its fourth call is
// held until the manager has seen it), journaled in the coordination
// log first; the worker then settles.
func TestWatchWorkersErrorStreakMidRun(t *testing.T) {
	release := make(chan struct{})
	o := baseOptions(t, loopWorker(distinct(4), true, 3, release, true), nil)
	o.RunDir = t.TempDir()
	o.WatchWorkers = &supervise.WatchWorkers{}
	var first, observed map[string]any
	var rest []map[string]any
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		defer close(release)
		tool(t, ctx, c, supervise.VerbSpawnWorker, spawnArgs("build it"))
		r := tool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{"kinds": []string{"finding"}, "timeoutMs": 30000})
		first, _ = r["event"].(map[string]any)
		observed = tool(t, ctx, c, supervise.VerbObserveAgent, map[string]any{"workerId": "run1:s1"})
		close(release)
		release = nil
		rest = awaitAll(t, ctx, c)
		return supervise.BrainReport{}, nil
	})
	if _, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o); err != nil {
		t.Fatal(err)
	}
	if first == nil {
		t.Fatal("no finding before the worker settled")
	}
	if first["kind"] != supervise.EventFinding || first["lens"] != "online:error-streak" || first["workerId"] != "run1:s1" ||
		first["sourceWorkerId"] != "run1:s1" || first["state"] != string(supervise.StateRunning) {
		t.Errorf("finding event = %v", first)
	}
	if got := observed["status"]; got != string(supervise.StateRunning) {
		t.Errorf("the worker was %v when its manager held the finding, want running (%v)", got, observed)
	}
	want := supervise.OnlineFinding{Detector: supervise.DetectorErrorStreak, ToolName: "build", Detection: supervise.Detection{
		Severity: "warn", Summary: "stuck: 3 consecutive errored step(s)", Streak: 3, FailureClass: "tool_recovery_failure",
		Evidence: map[string]string{"lastError": "build"}}}
	got := findingOf(t, first)
	got.AtMS = 0
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("finding (-want +got):\n%s", diff)
	}
	// The held fourth call errored too: one more finding, then the
	// settlement.
	if len(rest) != 2 || rest[0]["kind"] != supervise.EventFinding || findingOf(t, rest[0]).Streak != 4 || rest[1]["kind"] != supervise.EventSettled {
		t.Errorf("events after the first = %v", rest)
	}
	if recs := detected(t, o.RunDir); len(recs) != 2 || recs[0].Lens != "online:error-streak" || recs[0].Source != "run1:s1" {
		t.Errorf("coordination log findings = %+v", recs)
	}
}

// §3.6 watchWorkers, the environment arm: a worker on the scripted
// provider through the kernel whose turn calls the same tool with the
// same arguments three times raises one repeated-action (stuck-loop)
// finding, queued before its settlement; a worker that does not loop
// raises none.
func TestWatchWorkersStuckLoopEnvironmentArm(t *testing.T) {
	s, err := scripted.ParseScript([]byte(`{"turns": [
	  {"match": "loop", "steps": [
	    {"toolCall": {"id": "c1", "name": "grep", "arguments": {"q": "x"}}},
	    {"toolCall": {"id": "c2", "name": "grep", "arguments": {"q": "x"}}},
	    {"toolCall": {"id": "c3", "name": "grep", "arguments": {"q": "x"}}},
	    {"text": "DONE"}]},
	  {"match": "vary", "steps": [
	    {"toolCall": {"id": "c1", "name": "grep", "arguments": {"q": "x"}}},
	    {"toolCall": {"id": "c2", "name": "grep", "arguments": {"q": "y"}}},
	    {"toolCall": {"id": "c3", "name": "grep", "arguments": {"q": "x"}}},
	    {"text": "DONE"}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		task  string
		kinds []string
	}{
		{"loop", []string{supervise.EventFinding, supervise.EventSettled}},
		{"vary", []string{supervise.EventSettled}},
	} {
		t.Run(tc.task, func(t *testing.T) {
			o := baseOptions(t, &supervise.KernelExecutor{Provider: scripted.New(s, scripted.Options{}), Store: newStore(t)}, nil)
			o.WatchWorkers = &supervise.WatchWorkers{}
			var events []map[string]any
			o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
				tool(t, ctx, c, supervise.VerbSpawnWorker, spawnArgs(tc.task))
				events = awaitAll(t, ctx, c)
				return supervise.BrainReport{}, nil
			})
			if _, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o); err != nil {
				t.Fatal(err)
			}
			var kinds []string
			for _, ev := range events {
				kinds = append(kinds, ev["kind"].(string))
			}
			if diff := cmp.Diff(tc.kinds, kinds); diff != "" {
				t.Fatalf("event kinds (-want +got):\n%s\nevents: %v", diff, events)
			}
			if len(events) == 2 {
				f := findingOf(t, events[0])
				if events[0]["lens"] != "online:repeated-action" || f.Streak != 3 || f.ToolName != "grep" ||
					f.Summary != "stuck: repeated same action for 3 step(s)" || events[0]["state"] != string(supervise.StateRunning) {
					t.Errorf("finding = %v (%+v)", events[0], f)
				}
			}
		})
	}
}

// §3.6 watchWorkers' maxFindingsPerWorker: six errored calls trip the
// error streak four times (at 3, 4, 5, 6); the default cap raises three,
// a cap of 2 two, a negative cap all four. Omitted options watch nothing,
// and neither does a worker whose executor exposes no trace.
func TestWatchWorkersCapAndOff(t *testing.T) {
	for _, tc := range []struct {
		name    string
		watch   *supervise.WatchWorkers
		observe bool
		streaks []int
	}{
		{"default cap", &supervise.WatchWorkers{}, true, []int{3, 4, 5}},
		{"cap 2", &supervise.WatchWorkers{MaxFindingsPerWorker: 2}, true, []int{3, 4}},
		{"unlimited", &supervise.WatchWorkers{MaxFindingsPerWorker: -1}, true, []int{3, 4, 5, 6}},
		{"omitted", nil, true, nil},
		{"no trace", &supervise.WatchWorkers{}, false, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := baseOptions(t, loopWorker(distinct(6), true, -1, nil, tc.observe), nil)
			o.RunDir = t.TempDir()
			o.WatchWorkers = tc.watch
			var events []map[string]any
			o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
				tool(t, ctx, c, supervise.VerbSpawnWorker, spawnArgs("build it"))
				events = awaitAll(t, ctx, c)
				return supervise.BrainReport{}, nil
			})
			if _, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o); err != nil {
				t.Fatal(err)
			}
			var streaks []int
			for _, ev := range events {
				if ev["kind"] == supervise.EventFinding {
					streaks = append(streaks, findingOf(t, ev).Streak)
				}
			}
			if diff := cmp.Diff(tc.streaks, streaks); diff != "" {
				t.Errorf("finding streaks (-want +got):\n%s", diff)
			}
			if n := len(detected(t, o.RunDir)); n != len(tc.streaks) {
				t.Errorf("coordination log holds %d online findings, want %d", n, len(tc.streaks))
			}
		})
	}
}

// badDetector is a caller's detector that panics, or hangs past
// DetectorTimeout, on every call; calls counts them.
type badDetector struct {
	hang  bool
	calls *atomic.Int64
}

func (badDetector) Kind() string                        { return "bad" }
func (d badDetector) NewWatch() supervise.DetectorWatch { return d }
func (d badDetector) Observe(supervise.ToolSpan) (supervise.Detection, bool) {
	d.calls.Add(1)
	if d.hang {
		time.Sleep(supervise.DetectorTimeout + 500*time.Millisecond)
		return supervise.Detection{Summary: "late"}, true
	}
	panic("detector bug")
}

// A caller's detector that panics, or does not answer within
// DetectorTimeout, is disabled for the worker after its first call; the
// rest of the panel still raises, and the worker runs on unharmed.
func TestWatchWorkersBadDetectorDisabled(t *testing.T) {
	for _, hang := range []bool{false, true} {
		t.Run(fmt.Sprintf("hang=%v", hang), func(t *testing.T) {
			var calls atomic.Int64
			o := baseOptions(t, loopWorker(distinct(3), true, -1, nil, true), nil)
			o.WatchWorkers = &supervise.WatchWorkers{Detectors: []supervise.Detector{badDetector{hang: hang, calls: &calls}, supervise.ErrorStreak(3)}}
			var events []map[string]any
			o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
				tool(t, ctx, c, supervise.VerbSpawnWorker, spawnArgs("build it"))
				events = awaitAll(t, ctx, c)
				return supervise.BrainReport{}, nil
			})
			if _, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o); err != nil {
				t.Fatal(err)
			}
			if n := calls.Load(); n != 1 {
				t.Errorf("the bad detector was called %d times, want once", n)
			}
			if len(events) != 2 || events[0]["lens"] != "online:error-streak" || events[1]["kind"] != supervise.EventSettled ||
				events[1]["state"] != string(supervise.StateDone) {
				t.Errorf("events = %v", events)
			}
		})
	}
}

// resumeManager is a router manager model: it spawns one worker, awaits
// a finding, then (releasing the worker) awaits its settlement and
// answers. got records the last await_event result each run's model
// saw.
type resumeManager struct {
	mu      sync.Mutex
	release chan struct{}
	results []string
}

func (m *resumeManager) Turn(_ context.Context, msgs []contract.ChatMessage, _ []contract.Tool) iter.Seq2[contract.ChatEvent, error] {
	return func(yield func(contract.ChatEvent, error) bool) {
		last := msgs[len(msgs)-1]
		var ev contract.ChatEvent
		switch {
		case last.Role != contract.ChatTool:
			ev = call("s1", supervise.VerbSpawnWorker, spawnArgs("build it"))
		case last.ToolCallID == "s1":
			ev = call("a1", supervise.VerbAwaitEvent, map[string]any{"kinds": []string{"finding"}, "timeoutMs": 30000})
		case last.ToolCallID == "a1":
			m.mu.Lock()
			if m.release != nil {
				close(m.release)
				m.release = nil
			}
			m.mu.Unlock()
			ev = call("a2", supervise.VerbAwaitEvent, map[string]any{"kinds": []string{"settled"}, "timeoutMs": 3000})
		default:
			m.mu.Lock()
			if last.Content != nil {
				m.results = append(m.results, *last.Content)
			}
			m.mu.Unlock()
			ev = scripted.Text("answered")
		}
		if yield(ev, nil) {
			yield(managerUsage(10, 5, 0.0001), nil)
		}
	}
}

// §3.6 watchWorkers at a cut: a router manager took a worker's online
// finding (its journaled conversation says so), the worker settled, and
// the process stopped before the manager took the settlement. The
// resumed manager's await_event returns the settlement — the taken
// finding is not mistaken for it (TakenEvent.Online) — and no online
// finding is raised again. Before the fix the replayed settlement was
// dropped as already taken, and the resumed await timed out empty.
func TestWatchWorkersResumeAtCut(t *testing.T) {
	dir := t.TempDir()
	release := make(chan struct{})
	opts := func(m *resumeManager) supervise.Options {
		o := baseOptions(t, loopWorker(distinct(4), true, 3, release, true), m)
		o.RunDir = dir
		o.WatchWorkers = &supervise.WatchWorkers{}
		return o
	}
	manager := managerProfile(t, supervise.VerbSpawnWorker, supervise.VerbAwaitEvent)
	first := &resumeManager{release: release}
	if _, err := supervise.Supervise(context.Background(), manager, "build", opts(first)); err != nil {
		t.Fatal(err)
	}
	if len(first.results) != 1 || !strings.Contains(first.results[0], `"kind":"settled"`) {
		t.Fatalf("the first run's manager saw %q", first.results)
	}
	if n := len(detected(t, dir)); n != 2 {
		t.Fatalf("the first run journaled %d online findings, want 2 (streaks 3 and 4)", n)
	}
	journaltest.KeepThrough(t, dir, supervise.KindSettled, 1) // the settlement, not the manager's taking it

	again := &resumeManager{}
	o := opts(again)
	o.Resume = true
	if _, err := supervise.Supervise(context.Background(), manager, "build", o); err != nil {
		t.Fatal(err)
	}
	if len(again.results) != 1 || !strings.Contains(again.results[0], `"kind":"settled"`) || !strings.Contains(again.results[0], `"workerId":"run1:s1"`) {
		t.Errorf("the resumed manager's await_event returned %q, want the worker's settlement", again.results)
	}
	if n := len(detected(t, dir)); n != 2 {
		t.Errorf("after the resume the coordination log holds %d online findings, want the 2 raised before the cut", n)
	}
}
