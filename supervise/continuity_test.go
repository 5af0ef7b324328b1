package supervise_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/supervise"
)

// sessionsExecutor declares whether it re-attaches to sessions.
type sessionsExecutor struct {
	*gateExecutor
	resumes bool
}

func (e sessionsExecutor) ResumesSessions() bool { return e.resumes }

// §3.6 Continuity: spawn_worker's schema offers continuity "fresh" (the
// default), so the scope admits it; "resume" needs an executor whose
// ResumesSessions reports true — an executor declaring false is refused
// preflight, whatever the method's presence suggests.
func TestSpawnContinuityFreshAndResumesSessionsValue(t *testing.T) {
	for _, resumes := range []bool{false, true} {
		gate := &gateExecutor{release: make(chan struct{})}
		close(gate.release)
		o := baseOptions(t, sessionsExecutor{gate, resumes}, nil)
		got := map[string]map[string]any{}
		o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
			got["fresh"] = tool(t, ctx, c, supervise.VerbSpawnWorker, map[string]any{"profile": "writer", "task": "one", "continuity": "fresh"})
			tool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{"timeoutMs": 60000})
			got["resume"] = tool(t, ctx, c, supervise.VerbSpawnWorker, map[string]any{"profile": "writer", "task": "two", "continuity": "resume"})
			tool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{"timeoutMs": 60000})
			got["bogus"] = tool(t, ctx, c, supervise.VerbSpawnWorker, map[string]any{"profile": "writer", "task": "three", "continuity": "sideways"})
			return supervise.BrainReport{}, nil
		})
		if _, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o); err != nil {
			t.Fatal(err)
		}
		if got["fresh"]["workerId"] != "run1:s1" {
			t.Errorf("resumes=%v: continuity fresh: %v", resumes, got["fresh"])
		}
		if resumes && got["resume"]["workerId"] != "run1:s2" {
			t.Errorf("resumes=true: continuity resume: %v", got["resume"])
		}
		if !resumes && (got["resume"]["error"] != "preflight-refused" || got["resume"]["cause"] != "preflight") {
			t.Errorf("resumes=false: continuity resume: %v, want preflight-refused", got["resume"])
		}
		if got["bogus"]["error"] != "invalid-identity" {
			t.Errorf("resumes=%v: continuity sideways: %v", resumes, got["bogus"])
		}
	}
}

// The in-process steer_agent is journaled exactly like a cross-process
// steer (behaviour 48's records): a steer-requested record carrying a
// SteerRequest with source steer_agent and an operation id, then a
// steer-acknowledged record with the effect steer_agent returned — for
// a delivered steer and a not_live one alike.
func TestSteerAgentJournaledLikeCrossProcessSteers(t *testing.T) {
	exec := newInboxExecutor()
	o := baseOptions(t, exec, nil)
	o.RunDir = t.TempDir()
	var results []map[string]any
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		spawnSteerable(t, ctx, c, exec)
		results = append(results, tool(t, ctx, c, supervise.VerbSteerAgent, map[string]any{"workerId": "run1:s1", "instruction": "finish"}))
		tool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{"timeoutMs": 60000})
		results = append(results, tool(t, ctx, c, supervise.VerbSteerAgent, map[string]any{"workerId": "run1:s1", "instruction": "more", "interrupt": true}))
		return supervise.BrainReport{}, nil
	})
	if _, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o); err != nil {
		t.Fatal(err)
	}
	recs, _, err := supervise.ReadRunDir(context.Background(), o.RunDir)
	if err != nil {
		t.Fatal(err)
	}
	type steer struct{ Kind, Node, Op, Source, Message, Effect string }
	var got []steer
	for _, r := range recs {
		switch r.Kind {
		case supervise.KindSteerRequested:
			var req supervise.SteerRequest
			if err := canonjson.FromValue(r.Data, &req); err != nil {
				t.Fatal(err)
			}
			if req.RequestDigest == "" || req.SchemaVersion != 1 {
				t.Errorf("request %+v lacks its digest or schema version", req)
			}
			got = append(got, steer{r.Kind, string(r.Node), req.OperationID, req.Source, req.Message, ""})
		case supervise.KindSteerAcknowledged:
			var ack supervise.SteerAck
			if err := canonjson.FromValue(r.Data, &ack); err != nil {
				t.Fatal(err)
			}
			got = append(got, steer{r.Kind, string(r.Node), ack.OperationID, "", "", string(ack.Effect)})
		}
	}
	want := []steer{
		{supervise.KindSteerRequested, "run1:s1", "steer_agent-1", "steer_agent", "finish", ""},
		{supervise.KindSteerAcknowledged, "run1:s1", "steer_agent-1", "", "", "delivered"},
		{supervise.KindSteerRequested, "run1:s1", "steer_agent-2", "steer_agent", "more", ""},
		{supervise.KindSteerAcknowledged, "run1:s1", "steer_agent-2", "", "", "not_live"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("journaled steers (-want +got):\n%s", diff)
	}
	if results[0]["outcome"] != "delivered" || results[1]["outcome"] != "not_live" {
		t.Errorf("steer_agent results %v", results)
	}
}

// spawnSteerable spawns alpha (run1:s1) on exec and waits until its
// inbox is open to steers.
func spawnSteerable(t *testing.T, ctx context.Context, c *supervise.Coordinator, exec *inboxExecutor) {
	t.Helper()
	tool(t, ctx, c, supervise.VerbSpawnWorker, spawnArgs("alpha"))
	eventually(t, "the worker's inbox opens", func() (bool, error) {
		exec.mu.Lock()
		defer exec.mu.Unlock()
		return exec.inbox["run1:s1"] != nil, nil
	})
}

// Behaviour 48 at its edge: steer_agent holds its instruction to the
// bound a cross-process steer has (1..64 KiB of UTF-8), refusing one
// outside it before anything is journaled or delivered — a manager's
// 2 MiB instruction never becomes a 2 MiB journal record and inbox line.
func TestSteerAgentRefusesAnInstructionPastTheSteerBound(t *testing.T) {
	exec := newInboxExecutor()
	o := baseOptions(t, exec, nil)
	o.RunDir = t.TempDir()
	var results []map[string]any
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		spawnSteerable(t, ctx, c, exec)
		for _, instruction := range []string{strings.Repeat("x", 2<<20), ""} {
			results = append(results, tool(t, ctx, c, supervise.VerbSteerAgent, map[string]any{"workerId": "run1:s1", "instruction": instruction}))
		}
		results = append(results, tool(t, ctx, c, supervise.VerbSteerAgent, map[string]any{"workerId": "run1:s1", "instruction": strings.Repeat("y", 64<<10)}))
		tool(t, ctx, c, supervise.VerbSteerAgent, map[string]any{"workerId": "run1:s1", "instruction": "finish"})
		tool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{"timeoutMs": 60000})
		return supervise.BrainReport{}, nil
	})
	if _, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o); err != nil {
		t.Fatal(err)
	}
	for i, r := range results[:2] {
		if r["outcome"] != "refused" || r["delivered"] != false || !strings.Contains(fmt.Sprint(r["reason"]), "65536") {
			t.Errorf("steer %d: %v, want refused naming the bound", i, r)
		}
	}
	if r := results[2]; r["outcome"] != "delivered" {
		t.Errorf("a 64 KiB instruction: %v, want delivered", r)
	}
	recs, _, err := supervise.ReadRunDir(context.Background(), o.RunDir)
	if err != nil {
		t.Fatal(err)
	}
	requested := 0
	for _, r := range recs {
		if r.Kind == supervise.KindSteerRequested {
			requested++
		}
	}
	if requested != 2 {
		t.Errorf("%d steer requests journaled, want 2 (the two within the bound)", requested)
	}
}
