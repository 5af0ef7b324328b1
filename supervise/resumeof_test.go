package supervise_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/store/memory"
	"github.com/agentrt/agentrt/supervise"
)

// sessionRecorder resumes sessions and records, by node, which settled
// worker each execution was told it continues.
type sessionRecorder struct {
	mu       sync.Mutex
	resumeOf map[supervise.NodeID]supervise.NodeID
}

func (r *sessionRecorder) Execute(_ context.Context, w supervise.Work) (supervise.WorkResult, error) {
	r.mu.Lock()
	r.resumeOf[w.Node] = w.ResumeOf
	r.mu.Unlock()
	return supervise.WorkResult{Text: w.Task + " DONE", Spent: ledger.Spend{Tokens: i64(10), Iterations: i64(1), MicroUSD: i64(10)}}, nil
}

func (*sessionRecorder) ResumesSessions() bool { return true }

// §3.6 Continuity: a resume spawn re-attaches to its label's LATEST
// settled worker, and the executor is told which (Work.ResumeOf) — else
// an executor declaring ResumesSessions could not know whose session to
// continue. A fresh spawn names none.
func TestResumeSpawnTellsTheExecutorWhichWorker(t *testing.T) {
	exec := &sessionRecorder{resumeOf: map[supervise.NodeID]supervise.NodeID{}}
	o := baseOptions(t, exec, nil)
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		for _, continuity := range []string{"fresh", "resume", "resume", "fresh"} {
			tool(t, ctx, c, supervise.VerbSpawnWorker, map[string]any{"profile": "writer", "task": "draft", "continuity": continuity})
			tool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{"timeoutMs": 60000})
		}
		return supervise.BrainReport{}, nil
	})
	if _, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o); err != nil {
		t.Fatal(err)
	}
	want := map[supervise.NodeID]supervise.NodeID{"run1:s1": "", "run1:s2": "run1:s1", "run1:s3": "run1:s2", "run1:s4": ""}
	if diff := cmp.Diff(want, exec.resumeOf); diff != "" {
		t.Errorf("Work.ResumeOf by node (-want +got):\n%s", diff)
	}
}

// A KernelExecutor whose provider declares no native continuation (a
// CLI bridge's kind) cannot re-attach to a settled worker's session, so
// it does not claim to, and a resume spawn on it is refused preflight —
// never silently run fresh (resume_kernel_test.go has the provider that
// can). It does journal the provider session each worker left.
func TestKernelExecutorRefusesResume(t *testing.T) {
	var script scripted.Script
	if err := json.Unmarshal([]byte(`{"turns": [{"repeat": true, "steps": [{"text": "drafted"}]}]}`), &script); err != nil {
		t.Fatal(err)
	}
	prov := scripted.New(&script, scripted.Options{})
	caps, err := prov.Capabilities(context.Background())
	if err != nil || caps.NativeContinuation == nil {
		t.Fatalf("the scripted provider should declare native continuation: %v", err)
	}
	exec := &supervise.KernelExecutor{Provider: withoutNative{prov}, Store: memory.New(nil)}
	got := map[string]map[string]any{}
	o := baseOptions(t, exec, nil)
	o.RunDir = t.TempDir()
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		got["fresh"] = tool(t, ctx, c, supervise.VerbSpawnWorker, map[string]any{"profile": "writer", "task": "draft"})
		tool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{"timeoutMs": 60000})
		got["resume"] = tool(t, ctx, c, supervise.VerbSpawnWorker, map[string]any{"profile": "writer", "task": "again", "continuity": "resume"})
		return supervise.BrainReport{}, nil
	})
	if _, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o); err != nil {
		t.Fatal(err)
	}
	if got["fresh"]["workerId"] != "run1:s1" {
		t.Errorf("fresh spawn: %v", got["fresh"])
	}
	if got["resume"]["error"] != "preflight-refused" {
		t.Errorf("resume on KernelExecutor: %v, want preflight-refused", got["resume"])
	}
	// What it does keep is the provider session each worker's run
	// observed (NSO-02), journaled with the settlement.
	recs, _, err := supervise.ReadRunDir(context.Background(), o.RunDir)
	if err != nil {
		t.Fatal(err)
	}
	var session string
	for _, r := range recs {
		if r.Kind == supervise.KindSettled && r.Node == "run1:s1" {
			session = r.Session
		}
	}
	if !strings.Contains(session, "-session-") {
		t.Errorf("the kernel worker's settlement journals session %q, want the scripted provider's session id", session)
	}
}

// sessionLeaver is a sessionRecorder whose workers each leave a provider
// session named after their node.
type sessionLeaver struct {
	sessionRecorder
	given map[supervise.NodeID]string
}

func (l *sessionLeaver) Execute(ctx context.Context, w supervise.Work) (supervise.WorkResult, error) {
	res, err := l.sessionRecorder.Execute(ctx, w)
	l.mu.Lock()
	l.given[w.Node] = w.ResumeSession
	l.mu.Unlock()
	res.Session = "native-" + string(w.Node)
	return res, err
}

// §3.6 Continuity across a restart: the provider session a settled
// worker left is journaled with its settlement, so a process resuming
// the run (here after a crash before its finished record) hands a
// continuity-resume spawn of that worker's label the session to
// continue (Work.ResumeSession), as the first process would have.
func TestResumeSessionSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	spawnFirst := func(ctx context.Context, c *supervise.Coordinator) {
		tool(t, ctx, c, supervise.VerbSpawnWorker, map[string]any{"profile": "writer", "task": "draft"})
		tool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{"timeoutMs": 60000})
	}
	first := &sessionLeaver{sessionRecorder{resumeOf: map[supervise.NodeID]supervise.NodeID{}}, map[supervise.NodeID]string{}}
	o := baseOptions(t, first, nil)
	o.RunDir = dir
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		spawnFirst(ctx, c)
		return supervise.BrainReport{}, nil
	})
	if _, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o); err != nil {
		t.Fatal(err)
	}
	recs, _, err := supervise.ReadRunDir(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	var settledSession string
	for _, r := range recs {
		if r.Kind == supervise.KindSettled && r.Node == "run1:s1" {
			settledSession = r.Session
		}
	}
	if settledSession != "native-run1:s1" {
		t.Fatalf("the settled record journals session %q, want native-run1:s1", settledSession)
	}
	crashBeforeFinish(t, filepath.Join(dir, supervise.SpawnJournalFile))

	second := &sessionLeaver{sessionRecorder{resumeOf: map[supervise.NodeID]supervise.NodeID{}}, map[supervise.NodeID]string{}}
	o = baseOptions(t, second, nil)
	o.RunDir, o.Resume = dir, true
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		spawnFirst(ctx, c) // replayed from the journal
		tool(t, ctx, c, supervise.VerbSpawnWorker, map[string]any{"profile": "writer", "task": "revise", "continuity": "resume"})
		tool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{"timeoutMs": 60000})
		return supervise.BrainReport{}, nil
	})
	res, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Resumed {
		t.Fatal("the second run did not resume the journal")
	}
	if _, ran := second.given["run1:s1"]; ran {
		t.Error("the settled worker ran again instead of being replayed")
	}
	if got := second.given["run1:s2"]; got != "native-run1:s1" || second.resumeOf["run1:s2"] != "run1:s1" {
		t.Errorf("the resume spawn after the restart got session %q of %q; want native-run1:s1 of run1:s1", got, second.resumeOf["run1:s2"])
	}
}

// A provider session id longer than MaxSessionIDLen is journaled as
// unknown, never clipped into an id naming another session.
func TestOverlongSessionIsUnknown(t *testing.T) {
	dir := t.TempDir()
	exec := supervise.ExecutorFunc(func(_ context.Context, w supervise.Work) (supervise.WorkResult, error) {
		return supervise.WorkResult{Text: "ok", Session: strings.Repeat("s", supervise.MaxSessionIDLen+1),
			Spent: ledger.Spend{Tokens: i64(1), Iterations: i64(1), MicroUSD: i64(0)}}, nil
	})
	o := baseOptions(t, exec, nil)
	o.RunDir = dir
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		tool(t, ctx, c, supervise.VerbSpawnWorker, map[string]any{"profile": "writer", "task": "draft"})
		tool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{"timeoutMs": 60000})
		return supervise.BrainReport{}, nil
	})
	if _, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o); err != nil {
		t.Fatal(err)
	}
	recs, _, err := supervise.ReadRunDir(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if r.Kind == supervise.KindSettled && r.Session != "" {
			t.Errorf("an overlong session was journaled (%d bytes)", len(r.Session))
		}
	}
}

// crashBeforeFinish rewrites the journal file at path as a process that
// died before journaling the run's end would have left it: every line
// but the finished record.
func crashBeforeFinish(t *testing.T, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var kept []string
	dropped := 0
	for _, line := range strings.SplitAfter(string(data), "\n") {
		if strings.Contains(line, `"kind":"`+supervise.KindFinished+`"`) {
			dropped++
			continue
		}
		kept = append(kept, line)
	}
	if dropped != 1 {
		t.Fatalf("the journal holds %d finished records, want 1:\n%s", dropped, data)
	}
	if err := os.WriteFile(path, []byte(strings.Join(kept, "")), 0o600); err != nil {
		t.Fatal(err)
	}
}
