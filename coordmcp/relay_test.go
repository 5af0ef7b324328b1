package coordmcp_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentrt/agentrt/coordmcp"
	"github.com/agentrt/agentrt/supervise"
)

// relaySession starts `agentrt mcp coordination runDir` as a real child
// process and connects the SDK client to it over stdio.
func relaySession(t *testing.T, ctx context.Context, runDir string) *mcp.ClientSession {
	t.Helper()
	cmd := exec.Command(agentrtBinary(t), "mcp", "coordination", runDir)
	cmd.Stderr = os.Stderr
	cl := mcp.NewClient(&mcp.Implementation{Name: "test-harness", Version: "1"}, nil)
	cs, err := cl.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connecting to the relay: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// call calls verb and returns its structured result and isError; a
// protocol error fails the test.
func call(t *testing.T, ctx context.Context, cs *mcp.ClientSession, verb string, args map[string]any) (map[string]any, bool) {
	t.Helper()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: supervise.ToolPrefix + verb, Arguments: args})
	if err != nil {
		t.Errorf("%s: a protocol error %v, want a tool result", verb, err)
		return nil, true
	}
	m, _ := res.StructuredContent.(map[string]any)
	return m, res.IsError
}

// OS-04 (live coordination under the mcp entry point), §3.6 external
// harness brain: the SDK client drives a LIVE supervised run through
// the stdio relay (agentrt mcp coordination RUN-DIR, a real child
// process) — every verb listed, spawn_worker admitted, await_event
// returns the settlement, observe_agent sees it delivered, a refused
// spawn and a refused submit stay tool results {error, reason}, and an
// accepted submit_result makes the run's winner. When the run ends the
// endpoint file is gone, the old token is refused, the still-open relay
// answers {error: run-not-live} as a result, and a new relay refuses to
// start, saying the run is not live.
func TestRelayDrivesLiveRun(t *testing.T) {
	agentrtBinary(t) // build before the run's clock starts
	ctx := deadline(t)
	runDir := t.TempDir()
	var (
		cs                       *mcp.ClientSession
		ep                       coordmcp.Endpoint
		names                    []string
		spawned, awaited, obs    map[string]any
		refused, badSubmit, subm map[string]any
		isErr                    = map[string]bool{}
	)
	brain := supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		srv, err := coordmcp.Serve(ctx, c, coordmcp.ServeOptions{})
		if err != nil {
			return supervise.BrainReport{}, err
		}
		defer srv.Close()
		if ep, err = coordmcp.ReadEndpoint(runDir); err != nil {
			return supervise.BrainReport{}, err
		}
		cs = relaySession(t, ctx, runDir)
		listed, err := cs.ListTools(ctx, nil)
		if err != nil {
			return supervise.BrainReport{}, err
		}
		for _, tl := range listed.Tools {
			names = append(names, tl.Name)
		}
		var e bool
		spawned, e = call(t, ctx, cs, supervise.VerbSpawnWorker, map[string]any{"profile": "writer", "task": "write alpha"})
		isErr["spawn"] = e
		awaited, isErr["await"] = call(t, ctx, cs, supervise.VerbAwaitEvent, map[string]any{"timeoutMs": 60000})
		obs, isErr["observe"] = call(t, ctx, cs, supervise.VerbObserveAgent, map[string]any{"workerId": spawned["workerId"]})
		refused, isErr["refused"] = call(t, ctx, cs, supervise.VerbSpawnWorker, map[string]any{"profile": "nobody", "task": "x"})
		badSubmit, isErr["badSubmit"] = call(t, ctx, cs, supervise.VerbSubmitResult, map[string]any{"result": "not yet"})
		subm, isErr["submit"] = call(t, ctx, cs, supervise.VerbSubmitResult, map[string]any{"result": "alpha: DONE"})
		return supervise.BrainReport{Text: "submitted"}, nil
	})
	res, err := supervise.Supervise(ctx, cliBase(t), "write alpha", runOptions(t, runDir, brain))
	if err != nil {
		t.Fatal(err)
	}

	want := supervise.Verbs()
	for i := range want {
		want[i] = supervise.ToolPrefix + want[i]
	}
	sort.Strings(want)
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("verbs listed through the relay (-want +got):\n%s", diff)
	}
	for k, v := range isErr {
		if v {
			t.Errorf("%s: isError, want a result", k)
		}
	}
	if spawned["workerId"] != "run1:s1" {
		t.Errorf("spawn_worker: %v", spawned)
	}
	if ev, _ := awaited["event"].(map[string]any); ev["workerId"] != "run1:s1" || ev["delivered"] != true {
		t.Errorf("await_event: %v", awaited)
	}
	if obs["status"] != "done" || obs["delivered"] != true {
		t.Errorf("observe_agent: %v", obs)
	}
	if refused["error"] != string(supervise.CodeInvalidIdentity) || refused["reason"] == nil {
		t.Errorf("a refused spawn: %v, want {error: %s, reason}", refused, supervise.CodeInvalidIdentity)
	}
	if badSubmit["accepted"] != false {
		t.Errorf("a failing submit_result: %v, want accepted false", badSubmit)
	}
	if subm["accepted"] != true {
		t.Errorf("submit_result: %v", subm)
	}
	if res.Status != supervise.StatusWinner || res.Winner == nil || !res.Winner.Submitted || res.Winner.Text != "alpha: DONE" {
		t.Fatalf("result %+v winner %+v, want the submitted winner", res, res.Winner)
	}

	// The run ended: its endpoint is gone and its token dead.
	if _, err := os.Stat(filepath.Join(runDir, coordmcp.EndpointFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the endpoint file outlived the run: %v", err)
	}
	if code := post(t, ep.URL, ep.Token); code != http.StatusUnauthorized && code != 0 {
		t.Errorf("the old token after the run: HTTP %d, want refused", code)
	}
	late, lateErr := call(t, ctx, cs, supervise.VerbSpawnWorker, map[string]any{"profile": "writer", "task": "write alpha"})
	if !lateErr || late["error"] != coordmcp.CodeNotLive {
		t.Errorf("a call through the relay after the run: isError %v %v, want {error: %s}", lateErr, late, coordmcp.CodeNotLive)
	}
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, agentrtBinary(t), "mcp", "coordination", runDir)
	cmd.Stdin, cmd.Stderr = strings.NewReader(""), &stderr
	err = cmd.Run()
	var xe *exec.ExitError
	if !errors.As(err, &xe) || xe.ExitCode() != 1 || !strings.Contains(stderr.String(), "not live") {
		t.Errorf("a relay to an ended run: %v, stderr %q; want exit 1 saying the run is not live", err, stderr.String())
	}
}

// post sends an MCP initialize to url with token ("" for none) and
// returns the HTTP status (0 when nothing answered).
func post(t *testing.T, url, token string) int {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// The endpoint of a live run is published 0600 and requires the run's
// token: none or a wrong one is refused with 401 before reaching a
// verb; the right one initializes. Close refuses the right one too and
// removes the file.
func TestEndpointTokenRequired(t *testing.T) {
	ctx := deadline(t)
	runDir := t.TempDir()
	type probe struct{ None, Wrong, Right, AfterClose int }
	var got probe
	var mode os.FileMode
	var fileGone bool
	brain := supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		srv, err := coordmcp.Serve(ctx, c, coordmcp.ServeOptions{})
		if err != nil {
			return supervise.BrainReport{}, err
		}
		fi, err := os.Stat(filepath.Join(runDir, coordmcp.EndpointFile))
		if err != nil {
			return supervise.BrainReport{}, err
		}
		mode = fi.Mode().Perm()
		ep := srv.Endpoint()
		got.None = post(t, ep.URL, "")
		got.Wrong = post(t, ep.URL, strings.Repeat("0", 64))
		got.Right = post(t, ep.URL, ep.Token)
		if err := srv.Close(); err != nil {
			return supervise.BrainReport{}, err
		}
		got.AfterClose = post(t, ep.URL, ep.Token)
		_, err = os.Stat(filepath.Join(runDir, coordmcp.EndpointFile))
		fileGone = errors.Is(err, os.ErrNotExist)
		return supervise.BrainReport{}, nil
	})
	if _, err := supervise.Supervise(ctx, cliBase(t), "write alpha", runOptions(t, runDir, brain)); err != nil {
		t.Fatal(err)
	}
	if mode != 0o600 {
		t.Errorf("endpoint file mode %v, want 0600", mode)
	}
	want := probe{None: http.StatusUnauthorized, Wrong: http.StatusUnauthorized, Right: http.StatusOK}
	if got.AfterClose != 0 && got.AfterClose != http.StatusUnauthorized {
		t.Errorf("after Close: HTTP %d, want refused", got.AfterClose)
	}
	got.AfterClose = 0
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("HTTP statuses (-want +got):\n%s", diff)
	}
	if !fileGone {
		t.Error("Close left the endpoint file")
	}
}

// Serve needs a run dir to publish in.
func TestServeNeedsRunDir(t *testing.T) {
	var err error
	brain := supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		_, err = coordmcp.Serve(ctx, c, coordmcp.ServeOptions{})
		return supervise.BrainReport{}, nil
	})
	if _, serr := supervise.Supervise(deadline(t), cliBase(t), "x", runOptions(t, "", brain)); serr != nil {
		t.Fatal(serr)
	}
	if !errors.Is(err, coordmcp.ErrNoRunDir) {
		t.Errorf("Serve without a run dir: %v, want ErrNoRunDir", err)
	}
}

// A relay to a dir with no live run fails before serving, with an error
// matching ErrNotLive.
func TestRelayNotLive(t *testing.T) {
	err := coordmcp.Relay(deadline(t), t.TempDir(), strings.NewReader(""), io.Discard, coordmcp.RelayOptions{})
	if !errors.Is(err, coordmcp.ErrNotLive) {
		t.Errorf("Relay to an empty dir: %v, want ErrNotLive", err)
	}
}

// §3.6 stop through the relay: the harness's stop call is answered
// {stopped: true} as a result, the brain's context ends (supervise
// cancels the manager's turn), and the run ends with no winner and no
// endpoint left.
func TestRelayStopEndsRun(t *testing.T) {
	agentrtBinary(t) // build before the run's clock starts
	ctx := deadline(t)
	runDir := t.TempDir()
	var stopped map[string]any
	var stopErr, ended bool
	brain := supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		srv, err := coordmcp.Serve(ctx, c, coordmcp.ServeOptions{})
		if err != nil {
			return supervise.BrainReport{}, err
		}
		defer srv.Close()
		// The harness is another process: its calls do not share the
		// brain's context, which stop ends.
		hctx := deadline(t)
		cs := relaySession(t, hctx, runDir)
		stopped, stopErr = call(t, hctx, cs, supervise.VerbStop, map[string]any{"reason": "nothing to do"})
		select {
		case <-ctx.Done():
			ended = true
		case <-time.After(time.Minute):
		}
		return supervise.BrainReport{}, context.Cause(ctx)
	})
	res, err := supervise.Supervise(ctx, cliBase(t), "write alpha", runOptions(t, runDir, brain))
	if err != nil {
		t.Fatal(err)
	}
	if stopErr || stopped["stopped"] != true {
		t.Errorf("stop: isError %v %v, want {stopped: true}", stopErr, stopped)
	}
	if !ended {
		t.Error("stop did not end the brain's context")
	}
	if res.Status != supervise.StatusNoWinner || res.Reason != supervise.ReasonAllChildrenDown {
		t.Errorf("status %s reason %s error %+v, want no-winner all-children-down", res.Status, res.Reason, res.Error)
	}
	if _, err := coordmcp.ReadEndpoint(runDir); !errors.Is(err, coordmcp.ErrNotLive) {
		t.Errorf("after the run: %v, want the endpoint gone", err)
	}
}
