package cli_test

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentrt/agentrt/internal/pgtest"
	"github.com/agentrt/agentrt/store/postgres"
	"github.com/agentrt/agentrt/supervise"
)

// Task D2 point 3: PostgreSQL stops answering a supervise process
// mid-run — a TCP proxy between the process and the server stops
// forwarding bytes without closing anything — while its worker is
// about to answer with a result that would win. Every store call the
// process makes (the journal's appends and lease renewals, the worker's
// kernel run, the run record) goes through the frozen proxy. The
// process must end in bounded time, non-zero, naming the journal it
// lost, and must not report the winner it could not record. Once the
// proxy forwards again, a resume (another process, another run dir)
// finishes the run with a winner, and the journal holds one spawn row
// and at most one settlement per node.
func TestSuperviseWhenPostgresFreezesMidRun(t *testing.T) {
	if testing.Short() {
		t.Skip("runs agentrt in a child process")
	}
	dsn, proxy := pgtest.ProxiedSchema(t)
	// The worker answers "Done" four seconds after it starts: the
	// proxy freezes in between.
	slow := writeFile(t, "slow.json", `{"turns": [{"match": "note", "repeat": true, "steps": [{"text": "drafting"}, {"delayMs": 4000}, {"text": "Done: the note."}]}]}`)
	script := managerScript(t, `{"turns": [`+spawnNote+`, `+awaitOne+`, `+spawnNote+`, `+awaitOne+`, `+answerDone+`]}`)
	common := []string{"supervise", supManager, "--task", "Write release notes.", "--worker", noteWriter,
		"--manager-script", script, "--run-id", "frozen", "--journal-in-store", "--lease", "2s",
		"--worker-tokens", "1000", "--expect", "Done", "--script", slow}

	a := exec.Command(os.Args[0], append(common, "--run-dir", t.TempDir(), "--database", dsn, "--json")...)
	a.Env = append(os.Environ(), "AGENTRT_CLI_CHILD=1")
	var aOut, aErr strings.Builder
	a.Stdout, a.Stderr = &aOut, &aErr
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	var aExit error
	exited := make(chan struct{})
	go func() { aExit = a.Wait(); close(exited) }()
	defer func() {
		_ = a.Process.Signal(syscall.SIGKILL)
		<-exited
	}()

	// The test reads the journal around the proxy.
	direct := strings.Replace(dsn, proxy.Addr(), pgHostPort(t), 1)
	st, err := postgres.Open(context.Background(), direct, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	bound := func(recs []supervise.Record) bool {
		for _, r := range recs {
			if r.Kind == supervise.KindExecutionBound {
				return true
			}
		}
		return false
	}
	awaitStoreJournal(t, st, "frozen", bound, func() string { return "stderr:\n" + aErr.String() })
	proxy.BlackHole()
	frozen := time.Now()
	before := journalText(storeRecords(st, "frozen"))

	// A bound generous for a loaded machine: the lease (2 s), a
	// renewal's timeout, the worker's settling and the release.
	const limit = 2 * time.Minute
	select {
	case <-exited:
	case <-time.After(limit):
		t.Fatalf("the process still runs %v after its store froze; stderr:\n%s", limit, aErr.String())
	}
	hang := time.Since(frozen)
	t.Logf("the process ended %v after PostgreSQL froze (%v); stderr:\n%s", hang.Round(time.Millisecond), aExit, aErr.String())
	// Task H2: the lease bounds the end. Lost (its renewer saw it, or
	// its deadline passed unrenewed), every journal call in flight is
	// cut at once, not run out its own timeout; what remains is the
	// worker's own settling, a progress read in flight (5 s) and the
	// store's bounded close. Before: 20 s
	// (an append ran out its 5 s, the PostgreSQL pool's close waited
	// 15 s on pgx's cancel request to the frozen server).
	if bound := 2*time.Second + 12*time.Second; hang > bound {
		t.Errorf("the process ended %v after its store froze, past its lease and a small bound (%v)", hang.Round(time.Millisecond), bound)
	}
	if aExit == nil {
		t.Errorf("the process exited 0 with its store frozen; stdout:\n%s", aOut.String())
	}
	if strings.Contains(aOut.String(), `"winner"`) {
		t.Errorf("the process reported a winner it could not record:\n%s", aOut.String())
	}
	if !strings.Contains(aErr.String(), "spawn journal") {
		t.Errorf("the process's error does not name the store journal it lost:\n%s", aErr.String())
	}
	if after := journalText(storeRecords(st, "frozen")); after != before {
		t.Errorf("the journal changed while the proxy was frozen:\nbefore:\n%safter:\n%s", before, after)
	}

	proxy.Restore()
	fast := writeFile(t, "fast.json", `{"turns": [{"match": "note", "repeat": true, "steps": [{"text": "Done: the note."}]}]}`)
	args := append(append([]string{}, common...), "--run-dir", t.TempDir(), "--database", dsn, "--resume", "--json", "--script", fast)
	out, errOut, code := resumeOnceLeaseLapsed(t, args...)
	if code != 0 {
		t.Fatalf("the resume after the proxy forwards again: exit %d\n%s%s", code, out, errOut)
	}
	if s := member(decode(t, out), "status").Str(); s != "winner" {
		t.Errorf("the resume's status %q, want winner:\n%s", s, out)
	}
	recs := storeRecords(st, "frozen")
	checkOneSpawnEach(t, "", recs)
	t.Logf("journal:\n%sresume's stderr:\n%s", journalText(recs), errOut)
}

// pgHostPort is the test database's host:port (the one the proxy
// forwards to).
func pgHostPort(t *testing.T) string {
	t.Helper()
	u := pgtest.URL(t)
	i := strings.Index(u, "@")
	rest := u[i+1:]
	if j := strings.IndexAny(rest, "/?"); j >= 0 {
		rest = rest[:j]
	}
	return rest
}
