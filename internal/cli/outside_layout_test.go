package cli_test

// Outside scenarios for the cross-process run layout through the real
// binary (§3.6 "Supervisor run layout", "Steering", "Cancellation"; §15
// behaviours 48–50, 71): a shell driving agentrt supervise in one
// process and agentrt steer, cancel and top in others, on a live run and
// on the same run after it ended.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/supervise"
)

// oneJSONDocument decodes out as exactly one JSON document into v.
func oneJSONDocument(t *testing.T, out string, v any) {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(out))
	if err := dec.Decode(v); err != nil {
		t.Fatalf("--json output is not a JSON document: %v\n%s", err, out)
	}
	var extra json.RawMessage
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		t.Fatalf("--json output holds more than one document (%v):\n%s", err, out)
	}
}

type steerJSON struct {
	Request         supervise.SteerRequest `json:"request"`
	Acknowledgement *supervise.SteerAck    `json:"acknowledgement"`
}

func TestOutsideCLILiveAndEndedRunBehaviour48to50(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	script := filepath.Join(dir, "slow.json")
	// The worker's turn starts and then takes a minute: it is live and
	// mid-turn for the whole live part of the test.
	if err := os.WriteFile(script, []byte(`{"turns":[{"repeat":true,"steps":[{"text":"working"},{"delayMs":60000},{"text":" done note"}]}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	runDir := filepath.Join(dir, "run")
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	sup := exec.CommandContext(ctx, buildAgentrt(t), "supervise", filepath.Join("..", "..", "examples", "profiles", "delegation-manager.json"),
		"--worker", noteWriter, "--task", "write a note", "--script", script, "--run-dir", runDir, "--run-id", "rv9",
		"--budget-tokens", "100000", "--iterations", "5")
	var supOut, supErr bytes.Buffer
	sup.Stdout, sup.Stderr = &supOut, &supErr
	if err := sup.Start(); err != nil {
		t.Fatal(err)
	}
	sup.WaitDelay = 10 * time.Second
	exited := make(chan struct{})
	go func() {
		_ = sup.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		_ = sup.Process.Kill()
		<-exited
	})
	deadline := time.Now().Add(2 * time.Minute)
	for {
		st, err := supervise.ReadRunState(ctx, runDir)
		if err == nil && st.Live == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the worker never went live: %v\nstderr:\n%s", err, supErr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}

	// Behaviour 48 on a kernel worker mid-turn: the request is claimed,
	// unknown until its next turn; exit 1 says so and how to see the
	// outcome; a retry returns the first request; a changed message
	// under the same id is a usage error naming the operation.
	out, errOut, code := runBinary(t, "steer", runDir, "note-writer", "be brief", "--operation-id", "s1", "--wait", "2s", "--json")
	var first steerJSON
	oneJSONDocument(t, out, &first)
	if code != 1 || first.Acknowledgement == nil || first.Acknowledgement.Effect != supervise.SteerUnknown {
		t.Errorf("steer mid-turn: exit %d, %+v, stderr %q; want exit 1, unknown", code, first, errOut)
	}
	// Without --json, the answer is on stdout and what to do on stderr.
	out, errOut, code = runBinary(t, "steer", runDir, "note-writer", "be brief", "--operation-id", "s1", "--wait", "1s")
	if code != 1 || !strings.Contains(out, "unknown") || !strings.Contains(errOut, "same --operation-id") || strings.Contains(out, "same --operation-id") {
		t.Errorf("steer mid-turn: exit %d, stdout %q, stderr %q; want exit 1, unknown, and how to see the outcome (the same --operation-id) on stderr", code, out, errOut)
	}
	out, _, code = runBinary(t, "steer", runDir, "note-writer", "be brief", "--operation-id", "s1", "--wait", "1s", "--json")
	var retry steerJSON
	oneJSONDocument(t, out, &retry)
	if diff := cmp.Diff(first.Request, retry.Request); diff != "" || code != 1 {
		t.Errorf("steer retried: exit %d, request (-first +retry):\n%s", code, diff)
	}
	out, errOut, code = runBinary(t, "steer", runDir, "note-writer", "be longer", "--operation-id", "s1", "--wait", "1s", "--json")
	if code != 2 || out != "" || !strings.Contains(errOut, `"s1"`) || !strings.Contains(errOut, "conflicts") {
		t.Errorf("steer with a changed message under s1: exit %d, stdout %q, stderr %q; want exit 2 naming the conflict", code, out, errOut)
	}
	out, _, code = runBinary(t, "supervise", "steer", runDir, "ghost", "--message", "hi", "--operation-id", "s-ghost", "--wait", "10s")
	if code != 1 || !strings.Contains(out, "refused") || !strings.Contains(out, "no worker ghost") {
		t.Errorf("steer to a worker the run never had: exit %d, %q; want exit 1, refused, the run has no worker ghost", code, out)
	}

	// Behaviour 71: top --once over the live run, by --run-dir and by
	// the run dir given as ROOT.
	for _, args := range [][]string{{"top", "--once", "--run-dir", runDir}, {"top", "--once", runDir}} {
		out, errOut, code = runBinary(t, args...)
		if code != 0 || !strings.Contains(out, "rv9") || !strings.Contains(out, "running") || !strings.Contains(out, "note-writer") {
			t.Errorf("agentrt %s on the live run: exit %d, stderr %q, frame:\n%s\nwant the run rv9 running with worker note-writer", strings.Join(args, " "), code, errOut, out)
		}
	}

	// Behaviour 49: cancel the worker; a retry returns the same record.
	out, _, code = runBinary(t, "cancel", runDir, "note-writer", "--operation-id", "c1", "--wait", "30s", "--json")
	var c1 supervise.WorkerCancellation
	oneJSONDocument(t, out, &c1)
	if code != 0 || c1.Effect != "cancelled" || !cmp.Equal(c1.Terminated, []supervise.NodeID{"rv9:s1"}) {
		t.Errorf("cancel the worker: exit %d, %+v; want 0, cancelled, rv9:s1 terminated", code, c1)
	}
	out, _, code = runBinary(t, "cancel", runDir, "note-writer", "--operation-id", "c1", "--wait", "1s", "--json")
	var c1again supervise.WorkerCancellation
	oneJSONDocument(t, out, &c1again)
	if diff := cmp.Diff(c1, c1again); diff != "" || code != 0 {
		t.Errorf("cancel retried: exit %d (-first +retry):\n%s", code, diff)
	}

	select {
	case <-exited:
	case <-time.After(2 * time.Minute):
		t.Fatalf("the run did not end after its only worker was cancelled; stderr:\n%s", supErr.String())
	}
	st, err := supervise.ReadRunState(ctx, runDir)
	if err != nil || st.Status == supervise.RunStatusRunning || st.Live != 0 || st.Settled[supervise.StateCancelled] != 1 {
		t.Fatalf("state.json after the end: %+v, %v", st, err)
	}

	// After the end: the unread steer of the worker that settled, a new
	// steer, and two run cancellations under new operation ids are all
	// not_live, and not_live is never success: exit 1 for both.
	out, _, code = runBinary(t, "steer", runDir, "note-writer", "be brief", "--operation-id", "s1", "--wait", "1s", "--json")
	var s1end steerJSON
	oneJSONDocument(t, out, &s1end)
	if code != 1 || s1end.Acknowledgement == nil || s1end.Acknowledgement.Effect != supervise.SteerNotLive {
		t.Errorf("the mid-turn steer after the end: exit %d, %+v; want 1, not_live", code, s1end.Acknowledgement)
	}
	out, _, code = runBinary(t, "steer", runDir, "note-writer", "again", "--operation-id", "s2", "--wait", "1s")
	if code != 1 || !strings.Contains(out, "not_live") || !strings.Contains(out, "ended") {
		t.Errorf("a new steer after the end: exit %d, %q; want 1, not_live, the run had ended", code, out)
	}
	for _, op := range []string{"r1", "r2", "r1"} {
		out, errOut, code = runBinary(t, "cancel", runDir, "--operation-id", op, "--wait", "1s", "--json")
		var rc supervise.RunCancellation
		if code != 1 {
			t.Errorf("cancel the ended run under %s: exit %d, stderr %q, stdout %q; want 1, not_live (never success)", op, code, errOut, out)
			continue
		}
		oneJSONDocument(t, out, &rc)
		if rc.Effect != "not_live" || rc.OperationID != op || !strings.Contains(rc.Detail, "ended") {
			t.Errorf("cancel the ended run under %s: %+v; want not_live for %s, the run had ended", op, rc, op)
		}
	}
	out, _, code = runBinary(t, "top", "--once", "--run-dir", runDir)
	if code != 0 || !strings.Contains(out, string(st.Status)) || !strings.Contains(out, "cancelled") {
		t.Errorf("top --once on the ended run: exit %d, frame:\n%s\nwant its status %s and the cancelled worker", code, out, st.Status)
	}
}

// A worker in doubt after a restart (§3.6 "in-flight keyed work is
// in-doubt until recovered"; behaviour 49 "never success"): the
// supervisor is killed while its worker runs, a cancel and a steer of
// that worker are written while no process holds the run, and the run
// is resumed. The resumed run cannot stop a worker that may still run
// under the dead process's lease: the cancellation is unknown (exit 1),
// not not_live (which would say it found nothing live), and both answers
// say the worker is in doubt rather than call it settled or running.
func TestOutsideCLICancelInDoubtAfterRestartBehaviour49(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	slow := filepath.Join(dir, "slow.json")
	quick := filepath.Join(dir, "quick.json")
	if err := errors.Join(
		os.WriteFile(slow, []byte(`{"turns":[{"repeat":true,"steps":[{"text":"working"},{"delayMs":60000},{"text":" done note"}]}]}`), 0o600),
		os.WriteFile(quick, []byte(`{"turns":[{"repeat":true,"steps":[{"text":"done note"}]}]}`), 0o600)); err != nil {
		t.Fatal(err)
	}
	runDir := filepath.Join(dir, "run")
	manager := filepath.Join("..", "..", "examples", "profiles", "delegation-manager.json")
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	sup := exec.CommandContext(ctx, buildAgentrt(t), "supervise", manager, "--worker", noteWriter, "--task", "write a note", "--script", slow,
		"--run-dir", runDir, "--run-id", "rv9x", "--budget-tokens", "100000", "--iterations", "5")
	sup.WaitDelay = 10 * time.Second
	if err := sup.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		st, err := supervise.ReadRunState(ctx, runDir)
		if err == nil && st.Live == 1 {
			break
		}
		if time.Now().After(deadline) {
			_ = sup.Process.Kill()
			_ = sup.Wait()
			t.Fatalf("the worker never went live: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := sup.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = sup.Wait()

	if out, errOut, code := runBinary(t, "cancel", runDir, "rv9x:s1", "--operation-id", "k1", "--wait", "0"); code != 0 {
		t.Fatalf("cancel --wait 0 with no supervisor: exit %d, %q %q", code, out, errOut)
	}
	if out, errOut, code := runBinary(t, "steer", runDir, "rv9x:s1", "hello", "--operation-id", "ks1", "--wait", "0"); code != 0 {
		t.Fatalf("steer --wait 0 with no supervisor: exit %d, %q %q", code, out, errOut)
	}
	out, errOut, code := runBinary(t, "supervise", manager, "--worker", noteWriter, "--script", quick, "--run-dir", runDir, "--resume")
	if !strings.Contains(out, "IN DOUBT") {
		t.Fatalf("the resumed run (exit %d) shows no worker in doubt:\n%s\n%s", code, out, errOut)
	}

	out, _, code = runBinary(t, "cancel", runDir, "rv9x:s1", "--operation-id", "k1", "--wait", "1s", "--json")
	var k1 supervise.WorkerCancellation
	oneJSONDocument(t, out, &k1)
	if code != 1 || k1.Effect != "unknown" || !strings.Contains(k1.Detail, "in doubt") {
		t.Errorf("cancel of the worker in doubt: exit %d, %+v; want exit 1, unknown, a detail saying it is in doubt", code, k1)
	}
	out, _, code = runBinary(t, "steer", runDir, "rv9x:s1", "hello", "--operation-id", "ks1", "--wait", "1s", "--json")
	var ks1 steerJSON
	oneJSONDocument(t, out, &ks1)
	if code != 1 || ks1.Acknowledgement == nil || !strings.Contains(ks1.Acknowledgement.Detail, "in doubt") {
		t.Errorf("steer of the worker in doubt: exit %d, %+v; want exit 1 and a detail saying it is in doubt", code, ks1.Acknowledgement)
	}
}
