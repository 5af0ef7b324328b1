package supervise_test

import (
	"context"
	"encoding/json"
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

// "Only the bridge backend can honour resume": KernelExecutor cannot
// re-attach to a settled worker's session (its environment is destroyed
// when the worker settles), so it does not claim to, and a resume spawn
// on it is refused preflight — never silently run fresh — even on a
// provider that declares native continuation.
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
	exec := &supervise.KernelExecutor{Provider: prov, Store: memory.New(nil)}
	got := map[string]map[string]any{}
	o := baseOptions(t, exec, nil)
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
}
