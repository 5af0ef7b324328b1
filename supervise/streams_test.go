package supervise_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/supervise"
)

// streamKinds lists the kinds of recs in order, with the tool name for
// tool records.
func streamKinds(recs []supervise.StreamRecord) []string {
	var out []string
	for _, r := range recs {
		k := r.Kind
		if r.Tool != "" {
			k += " " + strings.TrimPrefix(r.Tool, supervise.ToolPrefix)
		}
		if r.Kind == supervise.StreamEvent {
			continue // how many events a turn streams is the provider's business
		}
		out = append(out, k)
	}
	return out
}

// §3.6 "Supervisor run layout": root-stream.jsonl holds the manager's own
// stream (each model turn with the tokens it reported, each coordination
// tool it called and how the call ended), and workers/<label>.ndjson each
// worker's log (spawned, its turns and what they streamed, settled), all
// written beside the spawn journal through the journal writer.
func TestRunLayoutRootStreamAndWorkerLogs(t *testing.T) {
	dir := t.TempDir()
	o := baseOptions(t, newCounting(t, workerProvider(t)), twoWorkerManager())
	o.RunDir = dir
	res, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker, supervise.VerbAwaitEvent), "ship a note", o)
	if err != nil || res.Status != supervise.StatusWinner {
		t.Fatalf("Supervise = %s %s, %v; want a winner", res.Status, res.Reason, err)
	}
	ctx := context.Background()

	root, skipped, err := supervise.ReadRootStream(ctx, dir)
	if err != nil || skipped != 0 {
		t.Fatalf("ReadRootStream: %d skipped, %v", skipped, err)
	}
	wantRoot := []string{
		"turn-started", "turn-ended",
		"tool-started spawn_worker", "tool-ended spawn_worker", "tool-started spawn_worker", "tool-ended spawn_worker",
		"turn-started", "turn-ended",
		"tool-started await_event", "tool-ended await_event", "tool-started await_event", "tool-ended await_event",
		"turn-started", "turn-ended",
	}
	if diff := cmp.Diff(wantRoot, streamKinds(root)); diff != "" {
		t.Errorf("root stream (-want +got):\n%s", diff)
	}
	var tokens []int64
	for _, r := range root {
		switch r.Kind {
		case supervise.StreamTurnEnded:
			if r.InputTokens == nil || r.OutputTokens == nil {
				t.Errorf("turn %s ended without its reported tokens: %+v", r.Run, r)
				continue
			}
			tokens = append(tokens, *r.InputTokens+*r.OutputTokens)
		case supervise.StreamToolEnded:
			if r.OK == nil || !*r.OK {
				t.Errorf("tool call %s ended %+v, want ok", r.CallID, r)
			}
		case supervise.StreamToolStarted:
			if r.CallID == "" || !strings.HasPrefix(r.Text, "{") {
				t.Errorf("tool call %+v lacks its id or arguments", r)
			}
		}
	}
	if !cmp.Equal(tokens, []int64{15, 25, 35}) {
		t.Errorf("turn tokens %v, want [15 25 35] as the manager's turns reported them", tokens)
	}

	for _, w := range []struct {
		label, node, text string
		state             supervise.State
	}{{"a", "run1:s1", "alpha: DONE", supervise.StateDone}, {"b", "run1:s2", "beta: half", supervise.StateDone}} {
		recs, skipped, err := supervise.ReadWorkerLog(ctx, dir, w.label)
		if err != nil || skipped != 0 {
			t.Fatalf("ReadWorkerLog(%s): %d skipped, %v", w.label, skipped, err)
		}
		if diff := cmp.Diff([]string{"spawned", "turn-started", "turn-ended", "settled"}, streamKinds(recs)); diff != "" {
			t.Errorf("worker %s log (-want +got):\n%s", w.label, diff)
		}
		var streamed strings.Builder
		for _, r := range recs {
			if string(r.Node) != w.node {
				t.Errorf("worker %s log holds a record of %s: %+v", w.label, r.Node, r)
			}
			if r.Kind == supervise.StreamEvent {
				streamed.WriteString(r.Text)
			}
		}
		if !strings.Contains(streamed.String(), w.text) {
			t.Errorf("worker %s streamed %q, want it to contain %q", w.label, streamed.String(), w.text)
		}
		first, last := recs[0], recs[len(recs)-1]
		if first.Label != w.label || first.Profile != "writer" || !strings.Contains(first.Text, "write") {
			t.Errorf("worker %s spawned record %+v", w.label, first)
		}
		if last.State != w.state {
			t.Errorf("worker %s settled %+v, want %s", w.label, last, w.state)
		}
	}
}

// The stream logs' readers are tolerant (§3.6 "Readers are tolerant"): a
// corrupt line is skipped and counted without hiding the lines after it,
// and a half-written last line (an append under way) is ignored.
func TestWorkerLogReaderToleratesCorruptAndTornLines(t *testing.T) {
	dir := t.TempDir()
	o := baseOptions(t, newCounting(t, workerProvider(t)), twoWorkerManager())
	o.RunDir = dir
	if _, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker, supervise.VerbAwaitEvent), "ship a note", o); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	path := supervise.WorkerLogPath(dir, "a")
	clean, _, err := supervise.ReadWorkerLog(ctx, dir, "a")
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(data), "\n")
	// A corrupt line after the first, and a torn tail.
	damaged := lines[0] + "{not json\n" + strings.Join(lines[1:], "") + `{"kind":"sett`
	if err := os.WriteFile(path, []byte(damaged), 0o600); err != nil {
		t.Fatal(err)
	}
	got, skipped, err := supervise.ReadWorkerLog(ctx, dir, "a")
	if err != nil || skipped != 1 {
		t.Fatalf("ReadWorkerLog: %d skipped, %v; want the one corrupt line skipped", skipped, err)
	}
	if diff := cmp.Diff(clean, got); diff != "" {
		t.Errorf("records after damage (-want +got):\n%s", diff)
	}
	if _, _, err := supervise.ReadWorkerLog(ctx, dir, "never-spawned"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a label without a log: %v, want fs.ErrNotExist", err)
	}
}

// File stems (§3.6 "Worker file stems"): characters outside
// [A-Za-z0-9._-] become '_', an empty label "worker", and a label never
// names an inbox projection.
func TestWorkerLogPathStems(t *testing.T) {
	for _, tc := range []struct{ label, want string }{
		{"a", "a.ndjson"},
		{"", "worker.ndjson"},
		{"../../etc/passwd", ".._.._etc_passwd.ndjson"},
		{"run1:s1.inbox", "run1_s1.inbox_.ndjson"},
		{"tests é", "tests__.ndjson"},
	} {
		if got := supervise.WorkerLogPath("/r", tc.label); got != filepath.Join("/r", supervise.WorkersDir, tc.want) {
			t.Errorf("WorkerLogPath(%q) = %s, want workers/%s", tc.label, got, tc.want)
		}
	}
}

// §3.6: without a RunDir, a WorkspaceRoot puts the run at
// <root>/.agent/supervisor/<runId>, where a resume finds it again by the
// run's id; a run id that is not a plain name is refused, as is a resume
// that does not name its run.
func TestWorkspaceRootDefaultRunDir(t *testing.T) {
	root := t.TempDir()
	exec := newCounting(t, workerProvider(t))
	o := baseOptions(t, exec, twoWorkerManager())
	o.WorkspaceRoot = root
	manager := managerProfile(t, supervise.VerbSpawnWorker, supervise.VerbAwaitEvent)
	res, err := supervise.Supervise(context.Background(), manager, "ship a note", o)
	if err != nil || res.Status != supervise.StatusWinner {
		t.Fatalf("Supervise = %s, %v", res.Status, err)
	}
	dir := filepath.Join(root, ".agent", "supervisor", "run1")
	if got := supervise.RunDirFor(root, "run1"); got != dir {
		t.Errorf("RunDirFor = %s, want %s", got, dir)
	}
	for _, f := range []string{supervise.SpawnJournalFile, supervise.RootStreamFile, supervise.StateFile, supervise.ProgressFile,
		filepath.Join(supervise.WorkersDir, "a.ndjson")} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("the default run dir lacks %s: %v", f, err)
		}
	}
	// The same id resumes it: nothing runs again.
	o.Router, o.Resume = twoWorkerManager(), true
	again, err := supervise.Supervise(context.Background(), manager, "ship a note", o)
	if err != nil || !again.Resumed || again.Winner == nil || again.Winner.OutRef != res.Winner.OutRef {
		t.Fatalf("resume = %+v, %v; want the same winner, resumed", again, err)
	}
	if exec.count("alpha") != 1 {
		t.Errorf("alpha ran %d times; the resume must replay it", exec.count("alpha"))
	}

	for _, tc := range []struct {
		name  string
		runID string
		resum bool
	}{{"path", "../escape", false}, {"slash", "a/b", false}, {"resume-without-id", "", true}} {
		t.Run(tc.name, func(t *testing.T) {
			o := baseOptions(t, exec, twoWorkerManager())
			o.WorkspaceRoot, o.RunID, o.Resume = t.TempDir(), tc.runID, tc.resum
			if _, err := supervise.Supervise(context.Background(), manager, "t", o); !errors.Is(err, supervise.ErrInvalidOptions) {
				t.Errorf("Supervise = %v, want ErrInvalidOptions", err)
			}
			if entries, _ := os.ReadDir(o.WorkspaceRoot); len(entries) != 0 {
				t.Errorf("a refused run wrote %d entries in the workspace", len(entries))
			}
		})
	}
}

// A manager that calls the coordination verbs as tools without the
// router brain's observer — an external harness over MCP calls
// Coordinator.Tools the same way — still has each call in the root
// stream, with its arguments and how it ended; the router brain's calls
// are recorded once (TestRunLayoutRootStreamAndWorkerLogs).
func TestRootStreamRecordsVerbCallsOfAnyBrain(t *testing.T) {
	dir := t.TempDir()
	o := baseOptions(t, newCounting(t, workerProvider(t)), nil)
	o.RunDir = dir
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		tools, err := c.Tools()
		if err != nil {
			return supervise.BrainReport{}, err
		}
		for _, call := range []struct{ verb, args string }{
			{supervise.VerbSpawnWorker, `{"profile":"writer","task":"write alpha","label":"a"}`},
			{supervise.VerbAwaitEvent, `{"timeoutMs":60000}`},
		} {
			for _, tool := range tools {
				if tool.Name == supervise.ToolPrefix+call.verb {
					args, err := canonjson.Decode([]byte(call.args))
					if err != nil {
						return supervise.BrainReport{}, err
					}
					if _, err := tool.Run(ctx, args); err != nil {
						return supervise.BrainReport{}, err
					}
				}
			}
		}
		return supervise.BrainReport{}, nil
	})
	if _, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o); err != nil {
		t.Fatal(err)
	}
	root, _, err := supervise.ReadRootStream(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"tool-started spawn_worker", "tool-ended spawn_worker", "tool-started await_event", "tool-ended await_event"}
	if diff := cmp.Diff(want, streamKinds(root)); diff != "" {
		t.Errorf("root stream (-want +got):\n%s", diff)
	}
	if len(root) == 4 && (!strings.Contains(root[0].Text, "write alpha") || root[1].OK == nil || !*root[1].OK) {
		t.Errorf("spawn call records %+v %+v", root[0], root[1])
	}
}
