package cli_test

import (
	"bytes"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentrt/agentrt/fleet"
	"github.com/agentrt/agentrt/internal/pgtest"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/store"
)

var metricsURL = regexp.MustCompile(`"url":"(http://127\.0\.0\.1:\d+/metrics)"`)

// fleetDB returns a fresh test database URL and its schema, where the
// tests keep River's tables too (dropped with the schema).
func fleetDB(t *testing.T) (conn, schema string) {
	t.Helper()
	conn = pgtest.Schema(t)
	u, err := url.Parse(conn)
	if err != nil {
		t.Fatal(err)
	}
	return conn, u.Query().Get("search_path")
}

// lockedBuffer is a bytes.Buffer safe for a child's output and a test
// reading it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startWorker runs `agentrt worker` as a real child process; it is
// killed when the test ends if still running.
func startWorkerProcess(t *testing.T, conn, schema, id, script string, extra ...string) (*exec.Cmd, *lockedBuffer) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "worker", "--database", conn, "--river-schema", schema, "--id", id, "--script", script,
		"--lease", "2s", "--rescue-after", "2s", "--poll-interval", "100ms", "--concurrency", "4", "--shutdown-timeout", "5s", "--log-format", "json")
	cmd.Args = append(cmd.Args, extra...)
	cmd.Env = append(os.Environ(), "AGENTRT_CLI_CHILD=1")
	logs := new(lockedBuffer)
	cmd.Stderr = logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	return cmd, logs
}

func openTestFleet(t *testing.T, conn, schema string) *fleet.Fleet {
	t.Helper()
	f, err := fleet.Open(t.Context(), fleet.Options{DatabaseURL: conn, RiverSchema: schema})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func TestFleetSubmitIsIdempotent(t *testing.T) {
	t.Parallel()
	conn, schema := fleetDB(t)
	db := []string{"--database", conn, "--river-schema", schema}
	if out, errOut, code := run(t, "", append([]string{"fleet", "migrate"}, db...)...); code != 0 {
		t.Fatalf("fleet migrate: %d %s %s", code, out, errOut)
	}
	submit := func(task string) (string, string, int) {
		out, errOut, code := run(t, "", append([]string{"fleet", "submit", noteWriter, "--task", task, "--idempotency-key", "nightly-1"}, db...)...)
		return strings.TrimSpace(out), errOut, code
	}
	first, errOut, code := submit("write a note")
	if code != 0 || first == "" {
		t.Fatalf("fleet submit: %d %q %s", code, first, errOut)
	}
	again, errOut, code := submit("write a note")
	if code != 0 || again != first {
		t.Errorf("resubmitting with the key: %d %q %s; want %q", code, again, errOut, first)
	}
	if _, errOut, code := submit("write another note"); code != 1 || !strings.Contains(errOut, "already submitted run "+first) {
		t.Errorf("the key with another request: exit %d, %s; want 1 naming %s", code, errOut, first)
	}
	// runs list and runs show know a fleet run for what it is.
	out, errOut, code := run(t, "", "runs", "list", "--database", conn)
	if code != 0 || !strings.Contains(out, `"write a note", 0 attempt(s)`) {
		t.Errorf("runs list: %d %s %s; want the fleet run summarized", code, out, errOut)
	}
	out, errOut, code = run(t, "", "runs", "show", first, "--database", conn)
	if code != 0 || !strings.Contains(out, "agentrt fleet show "+first) || strings.Contains(out, "unreadable") {
		t.Errorf("runs show: %d %s %s; want a pointer to fleet show", code, out, errOut)
	}
	out, errOut, code = run(t, "", append([]string{"fleet", "status", "--json"}, db...)...)
	if code != 0 {
		t.Fatalf("fleet status: %d %s", code, errOut)
	}
	if depth := member(decode(t, out), "depth"); depth.Float() != 1 {
		t.Errorf("queue depth %v, want 1 (one job for the key)\n%s", depth, out)
	}
}

// TestFleetWorkerKilledMidRun runs two worker processes on one database
// sharing runs, SIGKILLs one while it executes runs, and checks that each
// run completes exactly once: the killed worker's attempts read
// interrupted in their own kernel runs and another attempt, in the next
// generation, completed the run.
func TestFleetWorkerKilledMidRun(t *testing.T) {
	if testing.Short() {
		t.Skip("kills a worker and waits for River's rescuer (about 30s)")
	}
	// Serial: its surviving worker holds a 2 s lease, which a busy
	// machine running parallel tests can starve (as TestFleetEndToEnd).
	conn, schema := fleetDB(t)
	db := []string{"--database", conn, "--river-schema", schema}
	if out, errOut, code := run(t, "", append([]string{"fleet", "migrate"}, db...)...); code != 0 {
		t.Fatalf("fleet migrate: %d %s %s", code, out, errOut)
	}
	script := writeFile(t, "slow.json", `{"turns":[{"repeat":true,"steps":[{"text":"working "},{"delayMs":1500},{"text":"done"},{"usage":{"inputTokens":5,"outputTokens":3},"mode":"delta"}]}]}`)
	f := openTestFleet(t, conn, schema)
	const n = 16
	var ids []string
	for i := range n {
		out, errOut, code := run(t, "", append([]string{"fleet", "submit", noteWriter, "--task", "note " + strings.Repeat("i", i+1)}, db...)...)
		if code != 0 {
			t.Fatalf("fleet submit: %d %s", code, errOut)
		}
		ids = append(ids, strings.TrimSpace(out))
	}
	start := time.Now()
	victim, victimLogs := startWorkerProcess(t, conn, schema, "victim", script)
	survivor, survivorLogs := startWorkerProcess(t, conn, schema, "survivor", script, "--metrics-listen", "127.0.0.1:0")

	// Kill the victim while it executes runs.
	deadline := time.Now().Add(60 * time.Second)
	for held := 0; held == 0; {
		if time.Now().After(deadline) {
			t.Fatalf("the victim never held a run\nvictim:\n%s", victimLogs)
		}
		time.Sleep(100 * time.Millisecond)
		for _, id := range ids {
			r, err := f.Get(t.Context(), id)
			if err != nil {
				t.Fatal(err)
			}
			if r.Status != store.StatusRunning || r.Owner != "victim" || len(r.Attempts) == 0 {
				continue
			}
			// Its attempt is executing: the kernel recorded it running.
			if a, err := f.Store().GetRun(t.Context(), r.Attempts[len(r.Attempts)-1].RunID); err == nil && a.Status == store.StatusRunning {
				held++
			}
		}
	}
	if err := victim.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	victim.Wait()
	killedAt := time.Since(start)

	deadline = time.Now().Add(3 * time.Minute)
	var runs []*fleet.Run
	for len(runs) < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d runs ended\nsurvivor:\n%s", len(runs), n, survivorLogs)
		}
		time.Sleep(200 * time.Millisecond)
		runs = runs[:0]
		for _, id := range ids {
			r, err := f.Get(t.Context(), id)
			if err != nil {
				t.Fatal(err)
			}
			if r.Status.Terminal() && r.Status != store.StatusInterrupted {
				runs = append(runs, r)
			}
		}
	}
	t.Logf("%d runs on 2 workers, one killed at %s: all ended after %s", n, killedAt.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))

	recovered := 0
	var ledgerIn, ledgerOut int64
	for _, r := range runs {
		if r.Status != store.StatusCompleted || r.Outcome == nil || !r.Outcome.Delivered {
			t.Errorf("run %s ended %s (%+v), want completed and delivered", r.ID, r.Status, r.Outcome)
			continue
		}
		completed := 0
		for i, a := range r.Attempts {
			rec, err := kernel.ReadRun(t.Context(), f.Store(), a.RunID)
			if err != nil {
				t.Fatalf("attempt %s: %v", a.RunID, err)
			}
			if i > 0 && a.Generation != r.Attempts[i-1].Generation+1 {
				t.Errorf("run %s: attempt generations %+v are not consecutive", r.ID, r.Attempts)
			}
			switch rec.Run.Status {
			case store.StatusCompleted:
				completed++
				// Its spend is its last ledger entry: the closing one.
				entries, err := f.Store().Ledger(t.Context(), a.RunID)
				if err != nil || len(entries) == 0 {
					t.Fatalf("attempt %s: %d ledger entries, %v", a.RunID, len(entries), err)
				}
				last := entries[len(entries)-1].Body
				if kind, _ := last.Get("kind"); kind.Str() != kernel.LedgerTurn {
					t.Errorf("attempt %s: last ledger entry %s, want the closing turn entry", a.RunID, kind.Str())
				}
				usage, _ := last.Get("usage")
				in, _ := usage.Get("inputTokens")
				out, _ := usage.Get("outputTokens")
				ledgerIn, ledgerOut = ledgerIn+int64(in.Float()), ledgerOut+int64(out.Float())
				if a.RunID != r.Outcome.RunID {
					t.Errorf("run %s: completed attempt %s is not the outcome's %s", r.ID, a.RunID, r.Outcome.RunID)
				}
			case store.StatusInterrupted:
				if a.Worker != "victim" {
					t.Errorf("run %s: attempt %s of %s interrupted; only the killed worker's should be", r.ID, a.RunID, a.Worker)
				}
			default:
				t.Errorf("run %s: attempt %s ended %s", r.ID, a.RunID, rec.Run.Status)
			}
		}
		if completed != 1 {
			t.Errorf("run %s: %d completed attempts (%+v), want exactly 1", r.ID, completed, r.Attempts)
		}
		if len(r.Attempts) > 1 {
			recovered++
			if last := r.Attempts[len(r.Attempts)-1]; last.Worker != "survivor" {
				t.Errorf("run %s: taken over by %s, want the survivor", r.ID, last.Worker)
			}
		}
	}
	if recovered == 0 {
		t.Error("no run was taken over from the killed worker")
	}
	// The ledger of the delivered attempts totals the usage of n runs
	// (5 in, 3 out each), no more: no run was paid for twice as delivered.
	if ledgerIn != 5*n || ledgerOut != 3*n {
		t.Errorf("ledger totals %d in, %d out; want %d, %d", ledgerIn, ledgerOut, 5*n, 3*n)
	}
	t.Logf("%d runs recovered from the killed worker", recovered)

	// The show command tells the same story.
	for _, r := range runs {
		if len(r.Attempts) < 2 {
			continue
		}
		out, errOut, code := run(t, "", append([]string{"fleet", "show", r.ID}, db...)...)
		if code != 0 || !strings.Contains(out, "interrupted") || !strings.Contains(out, "completed") {
			t.Errorf("fleet show %s: %d %s %s; want the interrupted and the completed attempt", r.ID, code, out, errOut)
		}
		break
	}

	// The survivor's metrics count what it did.
	m := metricsURL.FindStringSubmatch(survivorLogs.String())
	if m == nil {
		t.Fatalf("the survivor did not log its metrics address:\n%s", survivorLogs)
	}
	resp, err := http.Get(m[1])
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`agentrt_fleet_runs_total{event="completed"`, `agentrt_fleet_queue_depth`, `agentrt_fleet_event_append_duration_seconds_bucket`} {
		if !strings.Contains(string(body), want) {
			t.Errorf("the survivor's metrics lack %s:\n%s", want, body)
		}
	}

	// The survivor stops gracefully, and no log carries the password.
	if err := survivor.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- survivor.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("survivor exited: %v\n%s", err, survivorLogs)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the survivor did not stop within 30s of SIGTERM")
	}
	u, _ := url.Parse(conn)
	if pw, ok := u.User.Password(); ok {
		for name, logs := range map[string]string{"victim": victimLogs.String(), "survivor": survivorLogs.String()} {
			if strings.Contains(logs, ":"+pw+"@") || strings.Contains(logs, "password="+pw) {
				t.Errorf("the %s's logs carry the database password", name)
			}
		}
	}
	if !strings.Contains(survivorLogs.String(), `"msg":"worker stopped"`) {
		t.Errorf("the survivor did not log a graceful stop:\n%s", survivorLogs)
	}
}
