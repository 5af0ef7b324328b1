package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/internal/clitest"
)

// xh19API is a local Anthropic Messages API for a claude-code manager
// and its claude-code workers. The manager (a call offering the
// coordination tools) follows managerStep, chosen by the number of tool
// results its call carries; a worker's call answers "alpha: DONE" unless
// hangWorkers, when it is held open until the client leaves or the
// server closes. It counts calls and keeps the manager's bodies.
type xh19API struct {
	url         string
	mu          sync.Mutex
	mgr, wrk    int
	mgrBodies   []string
	hangWorkers bool
	managerStep func(results int, body string) (tool, input, text string)
	release     chan struct{}
}

func newXH19API(t *testing.T, hangWorkers bool, step func(results int, body string) (tool, input, text string)) *xh19API {
	const prefix = "mcp__agentrt__agent_runtime_coordination_"
	a := &xh19API{hangWorkers: hangWorkers, managerStep: step, release: make(chan struct{})}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 16<<20))
		if r.Method != http.MethodPost || r.URL.Path != "/v1/messages" {
			return
		}
		var req struct {
			Model string `json:"model"`
			Tools []struct {
				Name string `json:"name"`
			} `json:"tools"`
		}
		json.Unmarshal(body, &req)
		manager := false
		for _, tl := range req.Tools {
			manager = manager || strings.HasPrefix(tl.Name, prefix)
		}
		results := strings.Count(string(body), `"type":"tool_result"`)
		a.mu.Lock()
		if manager {
			a.mgr++
			a.mgrBodies = append(a.mgrBodies, string(body))
		} else {
			a.wrk++
		}
		n := a.mgr + a.wrk
		a.mu.Unlock()
		if !manager && a.hangWorkers {
			select {
			case <-r.Context().Done():
			case <-a.release:
			}
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		ev := func(name string, data any) {
			b, _ := json.Marshal(data)
			fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, b)
			w.(http.Flusher).Flush()
		}
		ev("message_start", map[string]any{"type": "message_start", "message": map[string]any{"id": fmt.Sprint("msg_", n), "type": "message",
			"role": "assistant", "model": req.Model, "content": []any{}, "stop_reason": nil, "stop_sequence": nil,
			"usage": map[string]any{"input_tokens": 20, "output_tokens": 1}}})
		tool, input, text := "", "", "alpha: DONE"
		if manager {
			tool, input, text = a.managerStep(results, string(body))
		}
		stop := "end_turn"
		if tool != "" {
			stop = "tool_use"
			ev("content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{
				"type": "tool_use", "id": fmt.Sprint("toolu_", n), "name": prefix + tool, "input": map[string]any{}}})
			ev("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "input_json_delta", "partial_json": input}})
		} else {
			ev("content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{"type": "text", "text": ""}})
			ev("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "text_delta", "text": text}})
		}
		ev("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
		ev("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]any{"output_tokens": 5}})
		ev("message_stop", map[string]any{"type": "message_stop"})
	}))
	t.Cleanup(func() {
		close(a.release)
		srv.CloseClientConnections()
		srv.Close()
	})
	a.url = srv.URL
	return a
}

func (a *xh19API) calls() (mgr, wrk int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.mgr, a.wrk
}

func (a *xh19API) managerBodies() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.mgrBodies...)
}

// procInfo is one live process: its parent and its argv.
type procInfo struct {
	ppid   int
	argv   string
	zombie bool
}

// procTable reads /proc: every process's parent, argv and whether it is
// a zombie.
func procTable() map[int]procInfo {
	ents, _ := os.ReadDir("/proc")
	tab := map[int]procInfo{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces; cut at the last ')'.
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(stat[i+1:]))
		if len(f) < 2 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		argv, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		tab[pid] = procInfo{ppid: ppid, argv: string(bytes.ReplaceAll(argv, []byte{0}, []byte{' '})), zombie: f[0] == "Z"}
	}
	return tab
}

// descendants are the live (not zombie) processes below root.
func descendants(root int) map[int]string {
	tab := procTable()
	out := map[int]string{}
	var walk func(int)
	walk = func(p int) {
		for pid, pi := range tab {
			if pi.ppid == p && !pi.zombie {
				if _, seen := out[pid]; !seen {
					out[pid] = pi.argv
					walk(pid)
				}
			}
		}
	}
	walk(root)
	return out
}

// stillRunning are the processes of procs still alive with the same argv
// (a recycled pid is another process).
func stillRunning(procs map[int]string) map[int]string {
	tab := procTable()
	left := map[int]string{}
	for pid, argv := range procs {
		if pi, ok := tab[pid]; ok && !pi.zombie && pi.argv == argv {
			left[pid] = argv
		}
	}
	return left
}

// xh19Files writes the manager and worker profiles of a claude-code run
// in dir.
func xh19Files(t *testing.T, dir string, verbs ...string) (manager, worker string) {
	t.Helper()
	tools := make([]string, len(verbs))
	for i, v := range verbs {
		tools[i] = fmt.Sprintf("%q: true", "agent_runtime_coordination_"+v)
	}
	manager = filepath.Join(dir, "manager.json")
	worker = filepath.Join(dir, "writer.json")
	if err := os.WriteFile(manager, []byte(`{"name": "manager", "harness": "claude-code", "model": {"default": "claude-e2e-1"}, "tools": {`+strings.Join(tools, ", ")+`}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(worker, []byte(`{"name": "writer", "harness": "claude-code", "model": {"default": "claude-e2e-1"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	return manager, worker
}

// xh19Env is the environment of an agentrt supervise child on claude.
func xh19Env(claude string) []string {
	return append(os.Environ(), "ANTHROPIC_API_KEY=sk-ant-fake-cli-key", "PATH="+filepath.Dir(claude)+string(os.PathListSeparator)+os.Getenv("PATH"))
}

// waitFor polls cond every 25 ms until it holds or d passes.
func waitFor(d time.Duration, cond func() bool) bool {
	for deadline := time.Now().Add(d); ; {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// A supervisor SIGKILLed while its claude-code manager's await_event is
// in flight (its worker's model call held open) leaves nothing of the
// run running: not the manager's harness, not its `agentrt mcp
// coordination` relay, not the worker's harness — a harness left behind
// would go on calling its model, spending, with no one to meter it
// (spec/runtime.md §3.6 resume; checklist OS-04). And the orphaned
// manager makes no further model call.
func TestXH19KilledSupervisorLeavesNoHarnessRunning(t *testing.T) {
	claude := clitest.Claude(t)
	exe := buildAgentrt(t)
	api := newXH19API(t, true, func(results int, _ string) (string, string, string) {
		switch results {
		case 0:
			return "spawn_worker", `{"profile":"writer","task":"write alpha","key":"alpha"}`, ""
		case 1:
			return "await_event", `{"timeoutMs":120000}`, ""
		case 2:
			return "await_event", `{"timeoutMs":120000}`, ""
		default:
			return "", "", "gave up"
		}
	})
	dir := t.TempDir()
	manager, worker := xh19Files(t, dir, "spawn_worker", "await_event", "submit_result")
	runDir := filepath.Join(dir, "run")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe, "supervise", manager, "--worker", worker, "--task", "write alpha", "--provider", "claude-code",
		"--base-url", api.url, "--expect", "DONE", "--run-dir", runDir, "--run-id", "run1", "--db", filepath.Join(dir, "runs.db"), "--json")
	cmd.Env = xh19Env(claude)
	// The manager asked for await_event and the worker's model call is
	// held open; its relay runs. Then the harness's tool call has 500 ms
	// to reach the relay and the run.
	tracked := sigkillOnce(t, cmd, "its await_event", 500*time.Millisecond, func() bool {
		m, w := api.calls()
		return m >= 2 && w >= 1 && relayUp(cmd, runDir)
	})
	mgrAtKill, _ := api.calls()
	if left := survivors(tracked); left != "" {
		t.Errorf("20 s after the supervisor's SIGKILL, of its %d processes these still run:\n%s", len(tracked), left)
	}
	if m, _ := api.calls(); m != mgrAtKill {
		t.Errorf("the killed run's manager made %d more model calls after the kill", m-mgrAtKill)
	}
}

// A claude-code manager's run SIGKILLed while its await_event is in
// flight (its keyed worker's model call held open), then resumed with
// --resume: the old endpoint's token is refused by the resumed run's
// endpoint, the resumed manager's prompt carries the re-entry note, its
// spawn_worker of the same key and request does not run the worker a
// second time (§3.6 keyed spawns across restarts: in doubt, or the
// journaled node), and the final --json counts the killed turn's
// unreported spend as a gap, never as known (checklist OS-04).
func TestXH19ResumedHarnessManagerAfterKill(t *testing.T) {
	claude := clitest.Claude(t)
	exe := buildAgentrt(t)
	dir := t.TempDir()
	runDir := filepath.Join(dir, "run")
	var oldEP struct {
		URL   string `json:"url"`
		Token string `json:"token"`
	}
	var probeMu sync.Mutex
	var oldTokenStatus, newTokenStatus int
	probe := func() {
		probeMu.Lock()
		defer probeMu.Unlock()
		if oldTokenStatus != 0 {
			return
		}
		var ep struct {
			URL   string `json:"url"`
			Token string `json:"token"`
		}
		b, err := os.ReadFile(filepath.Join(runDir, "coordination-endpoint.json"))
		if err != nil || json.Unmarshal(b, &ep) != nil {
			return
		}
		post := func(token string) int {
			req, _ := http.NewRequest(http.MethodPost, ep.URL, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"probe","version":"1"}}}`))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("Authorization", "Bearer "+token)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return -1
			}
			resp.Body.Close()
			return resp.StatusCode
		}
		oldTokenStatus, newTokenStatus = post(oldEP.Token), post(ep.Token)
	}
	api := newXH19API(t, false, func(results int, body string) (string, string, string) {
		resumed := strings.Contains(body, "You are re-entering run")
		if resumed && results == 0 {
			probe()
		}
		switch {
		case results == 0:
			return "spawn_worker", `{"profile":"writer","task":"write alpha","key":"alpha"}`, ""
		case results == 1:
			return "await_event", `{"timeoutMs":` + map[bool]string{true: "5000", false: "120000"}[resumed] + `}`, ""
		case results == 2 && resumed:
			return "submit_result", `{"result":"alpha: DONE"}`, ""
		default:
			return "", "", "done"
		}
	})
	api.hangWorkers = true
	manager, worker := xh19Files(t, dir, "spawn_worker", "await_event", "submit_result")
	args := []string{"supervise", manager, "--worker", worker, "--task", "write alpha", "--provider", "claude-code",
		"--base-url", api.url, "--expect", "DONE", "--run-dir", runDir, "--run-id", "run1", "--db", filepath.Join(dir, "runs.db"), "--json"}
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe, args...)
	cmd.Env = xh19Env(claude)
	tracked := sigkillOnce(t, cmd, "its await_event", 500*time.Millisecond, func() bool { return awaiting(api, runDir) })
	b, err := os.ReadFile(filepath.Join(runDir, "coordination-endpoint.json"))
	if err != nil || json.Unmarshal(b, &oldEP) != nil {
		t.Fatalf("reading the endpoint: %v", err)
	}
	if left := survivors(tracked); left != "" {
		t.Fatalf("the killed run's processes still run:\n%s", left)
	}
	_, wrkBefore := api.calls()
	mgrBefore := len(api.managerBodies())
	api.mu.Lock()
	api.hangWorkers = false
	api.mu.Unlock()

	res := exec.CommandContext(ctx, exe, append(args, "--resume")...)
	res.Env = xh19Env(claude)
	var stderr2 strings.Builder
	res.Stderr = &stderr2
	out, err := res.Output()
	t.Logf("resumed: %v\nstdout %s\nstderr %s", err, out, stderr2.String())
	bodies := api.managerBodies()[mgrBefore:]
	if len(bodies) == 0 || !strings.Contains(bodies[0], "You are re-entering run run1") {
		t.Errorf("the resumed manager's first call carries no re-entry note")
	}
	probeMu.Lock()
	if oldTokenStatus != http.StatusUnauthorized || newTokenStatus != http.StatusOK {
		t.Errorf("the resumed endpoint answered the killed run's token %d and its own %d; want 401 and 200", oldTokenStatus, newTokenStatus)
	}
	probeMu.Unlock()
	if err != nil {
		t.Fatalf("the resumed run failed: %v", err)
	}
	if len(bodies) < 2 || !strings.Contains(bodies[1], `\"error\":\"in-doubt\"`) {
		t.Errorf("the resumed manager's spawn_worker of key alpha was not refused in-doubt")
	}
	v := decode(t, string(out))
	if s := member(v, "status").Str(); s != "winner" {
		t.Errorf("status %q, want winner", s)
	}
	// §3.6: the killed turn reported nothing (claude-code reports its
	// usage at the turn's end), so the manager's spend is a gap, not 0.
	gb, _ := canonjson.Canonical(member(v, "spendGaps"))
	gaps := string(gb)
	for _, want := range []string{`"id":"run1","kind":"unreported","label":"manager"`, `"id":"run1:s1","kind":"never-settled","label":"writer"`} {
		if !strings.Contains(gaps, want) {
			t.Errorf("spendGaps %s; want %s", gaps, want)
		}
	}
	if k := member(member(v, "spentTotal"), "tokensKnown"); k.Kind() != canonjson.Bool || k.Bool() {
		t.Errorf("spentTotal.tokensKnown %v across a killed harness turn; want false", k)
	}
	if _, w := api.calls(); w != wrkBefore {
		t.Errorf("the resumed run ran the keyed worker again: %d more worker model calls", w-wrkBefore)
	}
	j, _ := os.ReadFile(filepath.Join(runDir, "spawn-journal.jsonl"))
	if n := strings.Count(string(j), `"kind":"spawned"`); n != 1 {
		t.Errorf("journal: %d spawned records, want 1:\n%s", n, j)
	}
}

// killHarnessRunMidAwait starts `agentrt supervise` with a claude-code
// manager on api (args), waits until the manager's await_event is in
// flight (two manager calls, a worker's call held open, the endpoint
// published) and SIGKILLs it; it returns once none of its processes run.
func killHarnessRunMidAwait(t *testing.T, exe, claude string, api *xh19API, runDir string, args []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe, args...)
	cmd.Env = xh19Env(claude)
	tracked := sigkillOnce(t, cmd, "its await_event", 500*time.Millisecond, func() bool { return awaiting(api, runDir) })
	if left := survivors(tracked); left != "" {
		t.Fatalf("the killed run's processes still run:\n%s", left)
	}
}

// awaiting reports whether a claude-code manager's run on api reached
// its await_event: two manager calls, a worker's call held open, the
// run's endpoint published in runDir.
func awaiting(api *xh19API, runDir string) bool {
	m, w := api.calls()
	_, err := os.Stat(filepath.Join(runDir, "coordination-endpoint.json"))
	return m >= 2 && w >= 1 && err == nil
}

// relayUp reports whether the supervisor cmd runs the MCP relay of
// runDir (agentrt mcp coordination RUN-DIR) among its descendants.
func relayUp(cmd *exec.Cmd, runDir string) bool {
	for _, argv := range descendants(cmd.Process.Pid) {
		if strings.Contains(argv, "mcp coordination "+runDir) {
			return true
		}
	}
	return false
}

// sigkillOnce starts cmd (its stderr kept), waits up to 2 minutes until
// ready — failing the test with what the run never reached and its
// stderr — gives what is in flight settle to land, SIGKILLs it and
// returns the processes the run had started by then (pid → argv); any
// that outlive the test are killed at its end.
func sigkillOnce(t *testing.T, cmd *exec.Cmd, what string, settle time.Duration, ready func() bool) map[int]string {
	t.Helper()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if !waitFor(2*time.Minute, ready) {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("the run never reached %s; stderr:\n%s", what, stderr.String())
	}
	time.Sleep(settle)
	tracked := descendants(cmd.Process.Pid)
	t.Cleanup(func() {
		for pid := range stillRunning(tracked) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	t.Logf("the run's processes before the kill: %d", len(tracked))
	if err := cmd.Process.Kill(); err != nil { // SIGKILL
		t.Fatal(err)
	}
	_ = cmd.Wait()
	return tracked
}

// survivors waits up to 20 s for every process of tracked to end and
// describes those that did not, one "pid: argv" line each ("" if none).
func survivors(tracked map[int]string) string {
	if waitFor(20*time.Second, func() bool { return len(stillRunning(tracked)) == 0 }) {
		return ""
	}
	var lines []string
	for pid, argv := range stillRunning(tracked) {
		lines = append(lines, fmt.Sprintf("%d: %.160s", pid, argv))
	}
	return strings.Join(lines, "\n")
}

// runAgentrt runs the built agentrt with args and returns its stdout,
// stderr and exit code.
func runAgentrt(t *testing.T, exe, claude string, args ...string) (string, string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe, args...)
	cmd.Env = xh19Env(claude)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("agentrt %v: %v", args, err)
	}
	return stdout.String(), stderr.String(), code
}

// §3.6 Steering and Cancellation with the supervisor dead: a worker
// steer, a root steer and a run cancel issued while a claude-code
// manager's run is SIGKILLed, then --resume. Each steer is answered
// exactly once in the steer vocabulary (unknown, delivered, not_live,
// unsupported, refused); the run cancel ends the resumed run cancelled
// with its operation id, without a fresh full run (no new worker, the
// manager not driven through its task again).
func TestXH19SteerAndCancelWhileDeadThenResume(t *testing.T) {
	claude := clitest.Claude(t)
	exe := buildAgentrt(t)
	dir := t.TempDir()
	runDir := filepath.Join(dir, "run")
	api := newXH19API(t, true, func(results int, body string) (string, string, string) {
		switch results {
		case 0:
			return "spawn_worker", `{"profile":"writer","task":"write alpha","key":"alpha"}`, ""
		case 1:
			return "await_event", `{"timeoutMs":60000}`, ""
		case 2:
			return "submit_result", `{"result":"alpha: DONE"}`, ""
		default:
			return "", "", "done"
		}
	})
	manager, worker := xh19Files(t, dir, "spawn_worker", "await_event", "submit_result")
	args := []string{"supervise", manager, "--worker", worker, "--task", "write alpha", "--provider", "claude-code",
		"--base-url", api.url, "--expect", "DONE", "--run-dir", runDir, "--run-id", "run1", "--db", filepath.Join(dir, "runs.db"), "--json"}
	killHarnessRunMidAwait(t, exe, claude, api, runDir, args)

	out, errOut, code := runAgentrt(t, exe, claude, "steer", runDir, "run1:s1", "use blue", "--wait", "0", "--json")
	t.Logf("worker steer while dead: exit %d\n%s%s", code, out, errOut)
	out, errOut, code = runAgentrt(t, exe, claude, "steer", runDir, "run1", "wrap up", "--wait", "0", "--json")
	t.Logf("root steer while dead: exit %d\n%s%s", code, out, errOut)
	out, errOut, code = runAgentrt(t, exe, claude, "cancel", runDir, "--wait", "0", "--json")
	t.Logf("run cancel while dead: exit %d\n%s%s", code, out, errOut)
	if code != 0 {
		t.Fatalf("agentrt cancel --wait 0 on a dead run: exit %d, want 0 (cancel_requested)", code)
	}
	mgrBefore, wrkBefore := api.calls()
	out, errOut, code = runAgentrt(t, exe, claude, append(args, "--resume")...)
	t.Logf("resumed: exit %d\n%s\n%s", code, out, errOut)
	res := decode(t, out)
	if s, r := member(res, "status").Str(), member(res, "reason").Str(); s != "no-winner" || r != "cancelled" || !strings.HasPrefix(member(res, "operationId").Str(), "cancel-") {
		t.Errorf("the resumed run ended %q (reason %q, operation %q), want no-winner cancelled by the dead run's cancel", s, r, member(res, "operationId").Str())
	}
	mgr, wrk := api.calls()
	if wrk != wrkBefore {
		t.Errorf("the cancelled run's resume ran %d worker model calls", wrk-wrkBefore)
	}
	t.Logf("manager model calls on resume: %d", mgr-mgrBefore)
	acks, _ := filepath.Glob(filepath.Join(runDir, "steers", "acks", "*.json"))
	reqs, _ := filepath.Glob(filepath.Join(runDir, "steers", "requests", "*.json"))
	if len(reqs) != 2 || len(acks) != 2 {
		t.Errorf("%d steer requests, %d acknowledgements; want 2 and 2", len(reqs), len(acks))
	}
	for _, a := range acks {
		b, _ := os.ReadFile(a)
		var ack struct {
			Effect string `json:"effect"`
			Worker string `json:"worker"`
		}
		if err := json.Unmarshal(b, &ack); err != nil {
			t.Errorf("ack %s: %v", a, err)
			continue
		}
		switch ack.Effect {
		case "unknown", "delivered", "not_live", "unsupported", "refused":
		default:
			t.Errorf("ack of %s: effect %q outside the steer vocabulary", ack.Worker, ack.Effect)
		}
		t.Logf("ack %s", b)
	}
	b, err := os.ReadFile(filepath.Join(runDir, "cancellations", "run.json"))
	if err != nil || !strings.Contains(string(b), `"effect":"cancelled"`) {
		t.Errorf("run cancellation ack %s (%v); want effect cancelled", b, err)
	}
}

// §9 coordination tools under a hostile claude-code manager model,
// through the real claude CLI and relay: spawn_worker with a task that
// is not a string, a verb the run does not serve, spawn_worker with a
// 5 MB task, then await_event for ever (its turn never ends). Each bad
// call is a tool result the model reads (an error naming what is
// wrong), nothing runs, and the run's --timeout ends the endless turn
// within its bound (no-winner budget-exhausted), leaving no process.
func TestXH19HostileHarnessManager(t *testing.T) {
	claude := clitest.Claude(t)
	exe := buildAgentrt(t)
	dir := t.TempDir()
	runDir := filepath.Join(dir, "run")
	huge := strings.Repeat("x", 5<<20)
	api := newXH19API(t, false, func(results int, _ string) (string, string, string) {
		switch results {
		case 0:
			return "spawn_worker", `{"profile":"writer","task":42}`, ""
		case 1:
			return "frobnicate", `{}`, ""
		case 2:
			return "spawn_worker", `{"profile":"writer","task":"` + huge + `"}`, ""
		default:
			return "await_event", `{"timeoutMs":50}`, ""
		}
	})
	manager, worker := xh19Files(t, dir, "spawn_worker", "await_event", "submit_result")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe, "supervise", manager, "--worker", worker, "--task", "write alpha", "--provider", "claude-code",
		"--base-url", api.url, "--expect", "DONE", "--run-dir", runDir, "--run-id", "run1", "--db", filepath.Join(dir, "runs.db"), "--json",
		"--timeout", "40s")
	cmd.Env = xh19Env(claude)
	var stderr strings.Builder
	var stdout bytes.Buffer
	cmd.Stderr, cmd.Stdout = &stderr, &stdout
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var tracked map[int]string
	var trackMu sync.Mutex
	stopTrack := make(chan struct{})
	trackDone := make(chan struct{})
	go func() {
		defer close(trackDone)
		for {
			d := descendants(cmd.Process.Pid)
			trackMu.Lock()
			if tracked == nil {
				tracked = map[int]string{}
			}
			for pid, argv := range d {
				tracked[pid] = argv
			}
			trackMu.Unlock()
			select {
			case <-stopTrack:
				return
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(func() {
		trackMu.Lock()
		defer trackMu.Unlock()
		for pid := range stillRunning(tracked) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	err := cmd.Wait()
	close(stopTrack)
	<-trackDone
	took := time.Since(start)
	t.Logf("exit %v after %s; stderr:\n%s", err, took, stderr.String())
	res := decode(t, stdout.String())
	if s, r := member(res, "status").Str(), member(res, "reason").Str(); s != "no-winner" || r != "budget-exhausted" {
		t.Errorf("the endless manager's run ended %q (%q), want no-winner budget-exhausted by its --timeout:\n%s", s, r, stdout.String())
	}
	if took > 100*time.Second {
		t.Errorf("the run took %s past its 40 s deadline", took)
	}
	trackMu.Lock()
	left := stillRunning(tracked)
	trackMu.Unlock()
	if !waitFor(10*time.Second, func() bool {
		trackMu.Lock()
		defer trackMu.Unlock()
		left = stillRunning(tracked)
		return len(left) == 0
	}) {
		t.Errorf("processes of the ended run still run: %v", left)
	}
	if _, w := api.calls(); w != 0 {
		t.Errorf("%d worker model calls; no hostile spawn may run a worker", w)
	}
	bodies := api.managerBodies()
	if len(bodies) < 4 {
		t.Fatalf("the manager made %d model calls; want at least 4 (three hostile calls answered)", len(bodies))
	}
	// The tool result each hostile call got, as the model read it.
	lastResult := func(body string) string {
		i := strings.LastIndex(body, `"type":"tool_result"`)
		if i < 0 {
			return ""
		}
		r := body[i:]
		return r[:min(len(r), 600)]
	}
	for i, want := range []string{"task", "frobnicate", "task"} {
		r := lastResult(bodies[i+1])
		t.Logf("hostile call %d: the model read %.300s", i+1, r)
		if !strings.Contains(r, "error") || !strings.Contains(r, want) {
			t.Errorf("hostile call %d: the model read %q; want an error naming %q", i+1, r, want)
		}
	}
	var req struct {
		Messages []struct {
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal([]byte(bodies[3]), &req); err != nil || len(req.Messages) == 0 {
		t.Fatalf("the manager's fourth call: %v", err)
	}
	if n := len(req.Messages[len(req.Messages)-1].Content); n > 64<<10 {
		t.Errorf("the 5 MB spawn's refusal sent the model %d bytes", n)
	}
	j, _ := os.ReadFile(filepath.Join(runDir, "spawn-journal.jsonl"))
	if n := strings.Count(string(j), `"kind":"spawned"`); n != 0 {
		t.Errorf("journal: %d spawned records after hostile spawns, want 0", n)
	}
}

// xh19Responses is a local OpenAI Responses API for a codex manager and
// its codex workers: the manager (its call offers the coordination
// tools) calls spawn_worker, then await_event, then answers; a worker's
// call is held open until the client leaves or the server closes.
type xh19Responses struct {
	url      string
	mu       sync.Mutex
	mgr, wrk int
}

func newXH19Responses(t *testing.T) *xh19Responses {
	f := &xh19Responses{}
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 16<<20))
		if r.Method != http.MethodPost || r.URL.Path != "/v1/responses" {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		manager := strings.Contains(string(body), "agent_runtime_coordination_")
		outputs := strings.Count(string(body), `"type":"function_call_output"`)
		f.mu.Lock()
		if manager {
			f.mgr++
		} else {
			f.wrk++
		}
		n := f.mgr + f.wrk
		f.mu.Unlock()
		if !manager {
			select {
			case <-r.Context().Done():
			case <-release:
			}
			return
		}
		var req struct {
			Model string `json:"model"`
		}
		json.Unmarshal(body, &req)
		w.Header().Set("Content-Type", "text/event-stream")
		ev := func(name string, data any) {
			b, _ := json.Marshal(data)
			fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, b)
			w.(http.Flusher).Flush()
		}
		id := fmt.Sprint("resp_", n)
		ev("response.created", map[string]any{"type": "response.created", "response": map[string]any{"id": id, "model": req.Model, "status": "in_progress"}})
		plan := [][2]string{{"spawn_worker", `{"profile":"writer","task":"write alpha","key":"alpha"}`}, {"await_event", `{"timeoutMs":120000}`}}
		if outputs < len(plan) {
			ev("response.output_item.done", map[string]any{"type": "response.output_item.done", "output_index": 0, "item": map[string]any{
				"type": "function_call", "id": fmt.Sprint("fc_", n), "call_id": fmt.Sprint("call_", n), "namespace": "mcp__agentrt",
				"name": "agent_runtime_coordination_" + plan[outputs][0], "arguments": plan[outputs][1]}})
		} else {
			msg := fmt.Sprint("msg_", n)
			ev("response.output_item.done", map[string]any{"type": "response.output_item.done", "output_index": 0, "item": map[string]any{
				"type": "message", "id": msg, "role": "assistant", "content": []any{map[string]any{"type": "output_text", "text": "gave up"}}}})
		}
		ev("response.completed", map[string]any{"type": "response.completed", "response": map[string]any{"id": id, "model": req.Model, "status": "completed",
			"usage": map[string]any{"input_tokens": 20, "output_tokens": 5, "total_tokens": 25, "input_tokens_details": map[string]any{"cached_tokens": 0},
				"output_tokens_details": map[string]any{"reasoning_tokens": 0}}}})
	}))
	t.Cleanup(func() {
		close(release)
		srv.CloseClientConnections()
		srv.Close()
	})
	f.url = srv.URL
	return f
}

func (f *xh19Responses) calls() (mgr, wrk int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.mgr, f.wrk
}

// The codex CLI is a node launcher that runs the native codex as its
// child: a supervisor SIGKILLed while its codex manager's await_event is
// in flight (its codex worker's model call held open) must leave
// neither running — not the launcher, not the native codex, not the
// relay — and the orphaned manager makes no further model call.
func TestXH19KilledSupervisorLeavesNoCodexRunning(t *testing.T) {
	codex := clitest.Codex(t)
	exe := buildAgentrt(t)
	api := newXH19Responses(t)
	dir := t.TempDir()
	manager := filepath.Join(dir, "manager.json")
	worker := filepath.Join(dir, "writer.json")
	if err := os.WriteFile(manager, []byte(`{"name": "manager", "harness": "codex", "model": {"default": "gpt-e2e-1"}, "tools": {
		"agent_runtime_coordination_spawn_worker": true, "agent_runtime_coordination_await_event": true, "agent_runtime_coordination_submit_result": true}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(worker, []byte(`{"name": "writer", "harness": "codex", "model": {"default": "gpt-e2e-1"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	runDir := filepath.Join(dir, "run")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe, "supervise", manager, "--worker", worker, "--task", "write alpha", "--provider", "codex",
		"--base-url", api.url+"/v1", "--expect", "DONE", "--run-dir", runDir, "--run-id", "run1", "--db", filepath.Join(dir, "runs.db"), "--json")
	cmd.Env = append(os.Environ(), "OPENAI_API_KEY=sk-fake-codex-key", "PATH="+filepath.Dir(codex)+string(os.PathListSeparator)+os.Getenv("PATH"))
	tracked := sigkillOnce(t, cmd, "its await_event", 500*time.Millisecond, func() bool {
		m, w := api.calls()
		return m >= 2 && w >= 1 && relayUp(cmd, runDir)
	})
	mgrAtKill, _ := api.calls()
	if left := survivors(tracked); left != "" {
		t.Errorf("20 s after the supervisor's SIGKILL, of its %d processes these still run:\n%s", len(tracked), left)
	}
	if m, _ := api.calls(); m != mgrAtKill {
		t.Errorf("the killed run's manager made %d more model calls after the kill", m-mgrAtKill)
	}
}

// xh19Chat is a local OpenAI-compatible chat completions API for an
// opencode manager (its tools <server>_<tool>) and its opencode
// workers: the manager calls spawn_worker, then await_event, then
// answers; a worker's call is held open.
type xh19Chat struct {
	url      string
	mu       sync.Mutex
	mgr, wrk int
}

func newXH19Chat(t *testing.T) *xh19Chat {
	f := &xh19Chat{}
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 16<<20))
		if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		var req struct {
			Model    string `json:"model"`
			Messages []struct {
				Role string `json:"role"`
			} `json:"messages"`
		}
		json.Unmarshal(body, &req)
		manager := strings.Contains(string(body), "agent_runtime_coordination_")
		n := 0
		for _, m := range req.Messages {
			if m.Role == "tool" {
				n++
			}
		}
		f.mu.Lock()
		if manager {
			f.mgr++
		} else {
			f.wrk++
		}
		f.mu.Unlock()
		if !manager {
			select {
			case <-r.Context().Done():
			case <-release:
			}
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		chunk := func(delta map[string]any, finish any, usage any) {
			c := map[string]any{"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 1, "model": req.Model,
				"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}}
			if usage != nil {
				c["choices"] = []any{}
				c["usage"] = usage
			}
			b, _ := json.Marshal(c)
			fmt.Fprintf(w, "data: %s\n\n", b)
			w.(http.Flusher).Flush()
		}
		plan := [][2]string{{"spawn_worker", `{"profile":"writer","task":"write alpha","key":"alpha"}`}, {"await_event", `{"timeoutMs":120000}`}}
		finish := "stop"
		if n < len(plan) {
			finish = "tool_calls"
			chunk(map[string]any{"role": "assistant", "tool_calls": []any{map[string]any{"index": 0, "id": fmt.Sprint("call_", n), "type": "function",
				"function": map[string]any{"name": "agentrt_agent_runtime_coordination_" + plan[n][0], "arguments": plan[n][1]}}}}, nil, nil)
		} else {
			chunk(map[string]any{"role": "assistant", "content": "gave up"}, nil, nil)
		}
		chunk(map[string]any{}, finish, nil)
		chunk(nil, nil, map[string]any{"prompt_tokens": 20, "completion_tokens": 5, "total_tokens": 25})
		fmt.Fprint(w, "data: [DONE]\n\n")
		w.(http.Flusher).Flush()
	}))
	t.Cleanup(func() {
		close(release)
		srv.CloseClientConnections()
		srv.Close()
	})
	f.url = srv.URL
	return f
}

// The opencode variant of TestXH19KilledSupervisorLeavesNoCodexRunning:
// opencode starts its MCP relay itself; nothing of the killed run
// survives the supervisor's SIGKILL, and its manager makes no further
// model call.
func TestXH19KilledSupervisorLeavesNoOpencodeRunning(t *testing.T) {
	opencode := clitest.OpenCode(t)
	exe := buildAgentrt(t)
	api := newXH19Chat(t)
	calls := func() (int, int) { api.mu.Lock(); defer api.mu.Unlock(); return api.mgr, api.wrk }
	dir := t.TempDir()
	manager := filepath.Join(dir, "manager.json")
	worker := filepath.Join(dir, "writer.json")
	if err := os.WriteFile(manager, []byte(`{"name": "manager", "harness": "opencode", "model": {"default": "gpt-e2e-1"}, "tools": {
		"agent_runtime_coordination_spawn_worker": true, "agent_runtime_coordination_await_event": true, "agent_runtime_coordination_submit_result": true}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(worker, []byte(`{"name": "writer", "harness": "opencode", "model": {"default": "gpt-e2e-1"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	runDir := filepath.Join(dir, "run")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe, "supervise", manager, "--worker", worker, "--task", "write alpha", "--provider", "opencode",
		"--base-url", api.url+"/v1", "--expect", "DONE", "--run-dir", runDir, "--run-id", "run1", "--db", filepath.Join(dir, "runs.db"), "--json")
	cmd.Env = append(os.Environ(), "OPENAI_API_KEY=sk-fake-opencode-key", "PATH="+filepath.Dir(opencode)+string(os.PathListSeparator)+os.Getenv("PATH"))
	tracked := sigkillOnce(t, cmd, "its await_event", time.Second, func() bool { m, w := calls(); return m >= 2 && w >= 1 })
	mgrAtKill, _ := calls()
	if left := survivors(tracked); left != "" {
		t.Errorf("20 s after the supervisor's SIGKILL, of its %d processes these still run:\n%s", len(tracked), left)
	}
	if m, _ := calls(); m != mgrAtKill {
		t.Errorf("the killed run's manager made %d more model calls after the kill", m-mgrAtKill)
	}
}

// A supervisor SIGKILLed while its --check-cmd judges the manager's
// submitted result leaves no check running: the command (and what it
// started) dies with the run, as the harnesses do, rather than going on
// beside the resumed run's own check of the same result.
func TestXH19KilledSupervisorLeavesNoCheckRunning(t *testing.T) {
	claude := clitest.Claude(t)
	exe := buildAgentrt(t)
	api := newXH19API(t, false, func(results int, _ string) (string, string, string) {
		if results == 0 {
			return "submit_result", `{"result":"alpha: DONE"}`, ""
		}
		return "", "", "done"
	})
	dir := t.TempDir()
	manager, worker := xh19Files(t, dir, "spawn_worker", "await_event", "submit_result")
	runDir := filepath.Join(dir, "run")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe, "supervise", manager, "--worker", worker, "--task", "write alpha", "--provider", "claude-code",
		"--base-url", api.url, "--check-cmd", "sleep 90; true", "--run-dir", runDir, "--run-id", "run1", "--db", filepath.Join(dir, "runs.db"), "--json")
	cmd.Env = xh19Env(claude)
	tracked := sigkillOnce(t, cmd, "its check", 0, func() bool {
		for _, argv := range descendants(cmd.Process.Pid) {
			if strings.HasPrefix(argv, "sleep 90") {
				return true
			}
		}
		return false
	})
	if left := survivors(tracked); left != "" {
		t.Errorf("20 s after the supervisor's SIGKILL, of its %d processes these still run:\n%s", len(tracked), left)
	}
}
