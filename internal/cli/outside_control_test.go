package cli_test

// Outside scenario: steer and cancel across processes through the real
// agentrt binary against a live agentrt supervise process
// (spec/runtime.md §3.6 "Steering", "Cancellation"; §15 behaviours
// 48–50), written from the spec and the commands' --help.

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt/supervise"
)

const (
	osFastProfile = `{"name": "fast", "harness": "cli-base", "model": {"provider": "scripted", "default": "scripted/fast"}}`
	osSlowProfile = `{"name": "slow", "harness": "cli-base", "model": {"provider": "scripted", "default": "scripted/slow"}}`
	osManagerDoc  = `{"name": "lead", "harness": "cli-base", "model": {"default": "scripted/manager"},
	 "tools": {"agent_runtime_coordination_spawn_worker": true, "agent_runtime_coordination_await_event": true}}`
	// The quick task is done at once; a slow one streams for two minutes
	// (it ends only when cancelled).
	osWorkerScript = `{"turns": [
	 {"match": "quick", "repeat": true, "steps": [{"text": "quick: DONE"}, {"usage": {"inputTokens": 10, "outputTokens": 2}, "mode": "delta"}]},
	 {"match": "slowly", "repeat": true, "steps": [{"text": "working"}, {"delayMs": 120000}, {"text": "slow: DONE"}]}]}`
	osManagerScript = `{"turns": [
	 {"calls": [{"verb": "spawn_worker", "args": {"profile": "fast", "label": "fast", "task": "a quick job"}},
	            {"verb": "spawn_worker", "args": {"profile": "slow", "label": "slow", "task": "do it slowly"}},
	            {"verb": "spawn_worker", "args": {"profile": "slow", "label": "slow2", "task": "do it slowly too"}}]},
	 {"calls": [{"verb": "await_event", "args": {"timeoutMs": 120000}}]},
	 {"calls": [{"verb": "await_event", "args": {"timeoutMs": 120000}}]},
	 {"hang": true}]}`
)

// osCtl runs one agentrt control command and decodes its --json output
// into a map (nil when it printed none).
func osCtl(t *testing.T, args ...string) (map[string]any, string, int) {
	t.Helper()
	out, errOut, code := agentrtBinary(t, nil, args...)
	var v map[string]any
	if s := strings.TrimSpace(out); strings.HasPrefix(s, "{") {
		if err := json.Unmarshal([]byte(s), &v); err != nil {
			t.Fatalf("agentrt %s: not JSON: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	return v, out + errOut, code
}

// osWaitRecord polls the run's journal until ok holds for a record.
func osWaitRecord(t *testing.T, dir, what string, ok func(supervise.Record) bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		recs, _, _ := supervise.ReadRunDir(context.Background(), dir)
		if slices.ContainsFunc(recs, ok) {
			return
		}
		time.Sleep(25 * time.Millisecond)
	}
	t.Fatalf("no journal record %s within 60 s", what)
}

var osSteerEffects = []string{"unknown", "delivered", "not_live", "unsupported", "refused"}

func TestOutsideSteerAndCancelAcrossProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("runs agentrt in child processes")
	}
	tmp := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(tmp, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	dir := filepath.Join(tmp, "run")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	sup := exec.CommandContext(ctx, buildAgentrt(t), "supervise", write("lead.json", osManagerDoc),
		"--task", "do the jobs", "--worker", write("fast.json", osFastProfile), "--worker", write("slow.json", osSlowProfile),
		"--manager-script", write("m.json", osManagerScript), "--script", write("w.json", osWorkerScript),
		"--run-dir", dir, "--run-id", "os11", "--db", filepath.Join(tmp, "runs.db"), "--expect", "DONE",
		"--budget-tokens", "20000", "--iterations", "8", "--json")
	var supOut, supErr bytes.Buffer
	sup.Stdout, sup.Stderr = &supOut, &supErr
	if err := sup.Start(); err != nil {
		t.Fatal(err)
	}
	supDone := make(chan error, 1)
	go func() { supDone <- sup.Wait() }()
	defer func() {
		if sup.ProcessState == nil {
			_ = sup.Process.Kill()
			<-supDone
		}
	}()
	osWaitRecord(t, dir, "settled fast", func(r supervise.Record) bool { return r.Kind == supervise.KindSettled && r.Node == "os11:s1" })
	osWaitRecord(t, dir, "spawned slow2", func(r supervise.Record) bool { return r.Kind == supervise.KindSpawned && r.Label == "slow2" })

	// Behaviour 48: same operation id and body returns the original.
	first, out, code := osCtl(t, "supervise", "steer", dir, "slow", "--message", "look at X", "--operation-id", "s1", "--wait", "0", "--json")
	if code != 0 {
		t.Fatalf("steer s1 --wait 0: exit %d\n%s", code, out)
	}
	time.Sleep(5 * time.Millisecond) // a retry written later must still return the first request's time
	again, out, code := osCtl(t, "supervise", "steer", dir, "slow", "--message", "look at X", "--operation-id", "s1", "--wait", "0", "--json")
	if code != 0 {
		t.Fatalf("steer s1 retry: exit %d\n%s", code, out)
	}
	if got, want := again["request"], first["request"]; !jsonEqual(got, want) || got == nil {
		t.Fatalf("behaviour 48: a same-body retry returned %v, want the original %v", got, want)
	}
	// A changed body under the same id fails loud, and changes nothing.
	_, out, code = osCtl(t, "supervise", "steer", dir, "slow", "--message", "look at Y", "--operation-id", "s1", "--wait", "0", "--json")
	if code == 0 || !strings.Contains(strings.ToLower(out), "s1") {
		t.Fatalf("behaviour 48: a changed body under s1: exit %d, want a clear failure naming s1\n%s", code, out)
	}
	t.Logf("changed body: exit %d: %s", code, strings.TrimSpace(out))
	req, err := os.ReadDir(filepath.Join(dir, "steers", "requests"))
	if err != nil || len(req) != 1 {
		t.Fatalf("steer requests after the conflict: %v %v, want one file", req, err)
	}
	// Steering the settled worker: not_live.
	v, out, code := osCtl(t, "supervise", "steer", dir, "fast", "--message", "more", "--operation-id", "s2", "--wait", "20s", "--json")
	if code != 1 || ackEffect(v) != "not_live" {
		t.Fatalf("behaviour 48: steer to a settled worker: exit %d effect %q, want 1 not_live\n%s", code, ackEffect(v), out)
	}
	// s1's acknowledgement, whatever it is yet, is in the vocabulary.
	if ack, err := supervise.ReadSteerAck(ctx, dir, "s1"); err != nil || (ack != nil && !slices.Contains(osSteerEffects, string(ack.Effect))) {
		t.Fatalf("s1 ack %+v %v", ack, err)
	}

	// Behaviour 49: worker cancel twice under one id applies once.
	c1, out, code := osCtl(t, "supervise", "cancel", dir, "slow", "--operation-id", "c1", "--reason", "enough", "--wait", "30s", "--json")
	if code != 0 || c1["effect"] != "cancelled" {
		t.Fatalf("cancel slow: exit %d %v\n%s", code, c1, out)
	}
	c1b, out, code := osCtl(t, "supervise", "cancel", dir, "slow", "--operation-id", "c1", "--reason", "enough", "--wait", "30s", "--json")
	if code != 0 || !jsonEqual(c1, c1b) {
		t.Fatalf("behaviour 49: repeated c1: exit %d\n%v\nwant the same record %v\n%s", code, c1b, c1, out)
	}
	lines, _ := os.ReadFile(filepath.Join(dir, "cancellations", "requests.ndjson"))
	if n := strings.Count(string(lines), `"c1"`); n != 1 {
		t.Fatalf("behaviour 49: c1 appears %d times in requests.ndjson:\n%s", n, lines)
	}
	recs, _, _ := supervise.ReadRunDir(ctx, dir)
	var slowDowns int
	for _, r := range recs {
		if r.Kind == supervise.KindSettled && r.Node == "os11:s2" {
			slowDowns++
		}
	}
	if slowDowns != 1 {
		t.Fatalf("behaviour 49: slow settled %d times", slowDowns)
	}
	// The same id with another reason conflicts.
	_, out, code = osCtl(t, "supervise", "cancel", dir, "slow", "--operation-id", "c1", "--reason", "other", "--wait", "1s", "--json")
	if code == 0 {
		t.Fatalf("c1 with another reason: exit 0, want a conflict\n%s", out)
	}
	// A worker already gone: not_live.
	c2, out, code := osCtl(t, "supervise", "cancel", dir, "slow", "--operation-id", "c2", "--wait", "30s", "--json")
	if code != 1 || c2["effect"] != "not_live" {
		t.Fatalf("behaviour 49: cancel of a gone worker: exit %d %v, want 1 not_live (never success)\n%s", code, c2, out)
	}
	// An unresolved request stays unknown, never success.
	c3, out, code := osCtl(t, "supervise", "cancel", dir, "ghost", "--operation-id", "c3", "--wait", "500ms", "--json")
	if code != 1 || c3["effect"] != "unknown" {
		t.Fatalf("behaviour 49: cancel of a worker the run has none of: exit %d %v, want 1 unknown\n%s", code, c3, out)
	}

	// Behaviour 50: run cancel with a deadline.
	rc, out, code := osCtl(t, "supervise", "cancel", dir, "--operation-id", "r1", "--operator", "ops", "--reason", "shutdown", "--deadline", "60s", "--wait", "60s", "--json")
	if code != 0 || rc["effect"] != "cancelled" {
		t.Fatalf("run cancel: exit %d %v\n%s", code, rc, out)
	}
	if _, ok := rc["appliedAfterMs"].(float64); !ok {
		t.Fatalf("behaviour 50: run cancel ack has no appliedAfterMs: %v", rc)
	}
	if rc["deadlineExceeded"] != false {
		t.Fatalf("behaviour 50: run cancel ack deadlineExceeded %v, want false", rc["deadlineExceeded"])
	}
	select {
	case <-supDone:
	case <-time.After(90 * time.Second):
		t.Fatalf("the supervisor did not end after its run was cancelled:\n%s", supErr.String())
	}
	t.Logf("supervisor stderr:\n%s", supErr.String())
	var res map[string]any
	if err := json.Unmarshal(supOut.Bytes(), &res); err != nil {
		t.Fatalf("supervise --json: %v\n%s\n%s", err, supOut.String(), supErr.String())
	}
	if res["reason"] != "cancelled" {
		t.Fatalf("behaviour 50: reason %v, want cancelled\n%s", res["reason"], supOut.String())
	}
	cn, _ := res["cancellation"].(map[string]any)
	if cn["operationId"] != "r1" || cn["source"] == nil || cn["source"] == "" || cn["source"] == "context" {
		t.Fatalf("behaviour 50: the result's cancellation %v, want operationId r1 and the request's source\n%s", cn, supOut.String())
	}

	// Run end expires open requests: c3 is unknown (never success) with a
	// detail; s1, pending in a worker cancelled mid-turn, is not delivered.
	c3rec, err := supervise.ReadWorkerCancellation(ctx, dir, "c3")
	if err != nil || c3rec.Effect != "unknown" || c3rec.ObservedAt == 0 || c3rec.Detail == "" {
		t.Fatalf("behaviour 49: c3 after run end: %+v %v, want unknown, observed, with a detail", c3rec, err)
	}
	s1, err := supervise.ReadSteerAck(ctx, dir, "s1")
	if err != nil || s1 == nil || s1.Effect == "delivered" || s1.Effect == "unknown" || !slices.Contains(osSteerEffects, string(s1.Effect)) {
		t.Fatalf("behaviour 48: s1 after run end: %+v %v, want expired not_live", s1, err)
	}
	t.Logf("s1 %s (%s); c3 %s (%s)", s1.Effect, s1.Detail, c3rec.Effect, c3rec.Detail)
}

func ackEffect(v map[string]any) string {
	if a, ok := v["acknowledgement"].(map[string]any); ok {
		s, _ := a["effect"].(string)
		return s
	}
	s, _ := v["effect"].(string)
	return s
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}
