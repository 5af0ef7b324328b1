package cli_test

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentrt/agentrt/internal/pgtest"
	"github.com/agentrt/agentrt/supervise"
)

// TestMCPDelegatePausedPastItsClaim runs two real agentrt delegation
// servers on one PostgreSQL store and run dir (on SQLite a process
// paused inside a write transaction, which under fsync load is often,
// holds the file's write lock, and no other process can write until it
// continues; PostgreSQL ends a paused session's transaction after
// pgdb.IdleInTransactionTimeout). The first is stopped with SIGSTOP
// while a delegation's worker runs, and stays stopped well past its
// claim (1 s). The second sees the claim lapse but finds the journal
// still locked by the paused holder, so it waits rather than failing
// the delegation or starting it over. Continued, the first finds its
// claim gone, stops its run and releases the journal; a server (either:
// both scan for delegations to resume) then resumes the delegation from
// it: one winner, and nothing in the journal from the paused server's
// first attempt after it lost its claim.
func TestMCPDelegatePausedPastItsClaim(t *testing.T) {
	t.Parallel()
	ctx := mcpDeadline(t)
	bin := buildAgentrt(t)
	dir := t.TempDir()
	dbURL, runDir := pgtest.Schema(t), filepath.Join(dir, "delegations")
	// The first server's worker outlasts the pause (12 s) and the notice
	// of the lost claim; either server may resume the delegation after,
	// the first with this script (25 s), the second at once.
	slow := writeFile(t, "slow.json", strings.Replace(delegateWorkerScript, `"delayMs": 60000`, `"delayMs": 25000`, 1))
	fast := writeFile(t, "fast.json", delegateFastScript)
	start := func(script string) (*mcp.ClientSession, *exec.Cmd, *bytes.Buffer) {
		return startDelegate(t, ctx, bin, dir, delegateArgs(script, runDir, "--database", dbURL)...)
	}

	cs1, cmd1, stderr1 := start(slow)
	defer func() {
		_ = cmd1.Process.Signal(syscall.SIGCONT)
		_ = cmd1.Process.Kill()
	}()
	running := toolResult(t, ctx, cs1, "delegate", `{"intent": "write slow", "waitSeconds": 0}`)
	id, _ := running["taskId"].(string)
	delegationDir := filepath.Join(runDir, id)
	for !journaledKind(ctx, delegationDir, supervise.KindSpawned) {
		select {
		case <-ctx.Done():
			t.Fatal("the delegation never spawned its worker")
		case <-time.After(20 * time.Millisecond):
		}
	}
	if err := cmd1.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}

	cs2, cmd2, stderr2 := start(fast)
	// Past the paused server's claim, and past two of the second
	// server's scans (every 5 s), the delegation is still running: the
	// journal's lock, held by the paused process, keeps it from being
	// taken over, and nothing fails or restarts it.
	time.Sleep(12 * time.Second)
	st := toolResult(t, ctx, cs2, "delegation_status", `{"taskId": "`+id+`"}`)
	if st["state"] != "running" && st["state"] != "pending" {
		t.Fatalf("while its holder is paused, the delegation is %v (failure %v); want it running or handed back", st["state"], st["failure"])
	}
	if n := countKind(t, delegationDir, supervise.KindFinished); n != 0 {
		t.Fatalf("the journal holds %d finished records while its holder is paused", n)
	}

	if err := cmd1.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	continued := time.Now()
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); {
		st = toolResult(t, ctx, cs2, "delegation_status", `{"taskId": "`+id+`", "waitSeconds": 10}`)
		if s := st["state"]; s != "pending" && s != "running" {
			break
		}
	}
	t.Logf("the delegation ended %v %v after the paused server continued", st["state"], time.Since(continued).Round(time.Millisecond))
	if st["state"] != "completed" || st["resumed"] != true {
		t.Errorf("after the paused server continued: state %v resumed %v attempts %v failure %v\nfirst server:\n%s\nsecond server:\n%s",
			st["state"], st["resumed"], st["attempts"], st["failure"], stderr1.String(), stderr2.String())
	}
	// The worker in flight when its holder was paused is spawned again
	// by the resuming server (it never settled, so it is charged at its
	// ceiling and re-run, behaviour 46); the paused server, continued,
	// journaled nothing: no settlement of its cancelled worker, no end.
	recs, _, err := supervise.ReadRunDir(t.Context(), delegationDir)
	if err != nil {
		t.Fatal(err)
	}
	var first supervise.NodeID
	finished := 0
	var kinds []string
	for _, r := range recs {
		kinds = append(kinds, strings.TrimSpace(r.Kind+" "+string(r.Node)+" "+string(r.State)))
		switch {
		case r.Kind == supervise.KindSpawned && first == "":
			first = r.Node
		case r.Kind == supervise.KindSettled && r.Node == first:
			t.Errorf("the paused server's worker %s has a settlement in the journal (%s): it wrote after losing its claim", first, r.State)
		case r.Kind == supervise.KindFinished:
			finished++
		}
	}
	if first == "" || finished != 1 {
		t.Errorf("the journal: first worker %q, %d finished records; want one end, the second server's:\n%s", first, finished, strings.Join(kinds, "\n"))
	}
	cs1.Close()
	if err := cs2.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	if !cmd2.ProcessState.Success() {
		t.Errorf("the second server ended with %v: %s", cmd2.ProcessState, stderr2.String())
	}
	if strings.Contains(stderr1.String(), "panic") {
		t.Errorf("the paused server panicked:\n%s", stderr1.String())
	}
}

// countKind counts the records of kind in the journal of run dir dir.
func countKind(t *testing.T, dir, kind string) int {
	t.Helper()
	recs, _, err := supervise.ReadRunDir(t.Context(), dir)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range recs {
		if r.Kind == kind {
			n++
		}
	}
	return n
}
