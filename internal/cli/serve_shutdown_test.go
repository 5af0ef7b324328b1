package cli_test

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/internal/servetest"
)

// serveProc is one `agentrt serve` child process the test stops itself.
type serveProc struct {
	url  string
	cmd  *exec.Cmd
	mu   sync.Mutex
	log  strings.Builder
	read chan struct{} // closed once the child closed its stderr
}

func (p *serveProc) logged() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.log.String()
}

// stop sends sig and waits (at most within) for the child to exit.
func (p *serveProc) stop(t *testing.T, sig os.Signal, within time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.read:
	case <-time.After(within):
		_ = p.cmd.Process.Kill()
		<-p.read
		t.Fatalf("agentrt serve did not exit within %v of %v; its log:\n%s", within, sig, p.logged())
	}
	_ = p.cmd.Wait()
	return time.Since(start)
}

var listeningAt = regexp.MustCompile(`listening on (https?://127\.0\.0\.1:\d+)`)

// startServeProc starts `agentrt serve --listen 127.0.0.1:0 args…` (this
// test binary as agentrt) and waits for its address; the test stops it
// (stop), or the cleanup kills it.
func startServeProc(t *testing.T, env []string, args ...string) *serveProc {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	p := &serveProc{read: make(chan struct{})}
	p.cmd = exec.Command(exe, append([]string{"serve", "--listen", "127.0.0.1:0"}, args...)...)
	p.cmd.Env = slices.Concat(os.Environ(), []string{servetest.Home(t)}, env, []string{"AGENTRT_CLI_CHILD=1", "AGENTRT_SERVE_TOKEN=" + serveToken})
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	found := make(chan string, 1)
	go func() {
		defer close(p.read)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			p.mu.Lock()
			p.log.WriteString(sc.Text() + "\n")
			p.mu.Unlock()
			if m := listeningAt.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
		}
	}()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.read
		_ = p.cmd.Wait()
		if strings.Contains(p.logged(), serveToken) {
			t.Errorf("the server's log carries its token")
		}
	})
	select {
	case p.url = <-found:
	case <-p.read:
		t.Fatalf("agentrt serve exited; its log:\n%s", p.logged())
	case <-time.After(2 * time.Minute):
		t.Fatalf("agentrt serve did not report its address; its log:\n%s", p.logged())
	}
	return p
}

// startRetained starts `agentrt run --retain --json` against url as a
// child process and returns it, its stdout lines (closed at its exit)
// and the record id, once it printed its control ref and the turn's
// first part.
func startRetained(t *testing.T, url string, db []string) (*exec.Cmd, <-chan string, string) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	starter := startChild(t, func(c *exec.Cmd) { c.Stdout = w; c.Env = append(c.Env, "AGENTRT_SERVE_TOKEN="+serveToken) },
		append([]string{"run", noteWriter, "--task", "Work long.", "--retain", "--json", "--provider", "remote", "--base-url", url}, db...)...)
	w.Close()
	lines := make(chan string, 64)
	go func() {
		defer close(lines)
		defer r.Close()
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	record := ""
	deadline := time.After(2 * time.Minute)
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				t.Fatalf("the starter exited before the turn's first part (record %q)", record)
			}
			v := decode(t, line)
			if c, ok := v.Get("controlRef"); ok {
				record = member(c, "record").Str()
				continue
			}
			if strings.Contains(line, "first part") && record != "" {
				return starter, lines, record
			}
		case <-deadline:
			t.Fatal("the starter printed no control ref or no first part within 2 minutes")
		}
	}
}

// waitExit waits (at most within) for a child and returns its exit code
// and the stdout lines it printed after the ones already read.
func waitExit(t *testing.T, c *exec.Cmd, lines <-chan string, within time.Duration) (int, []string) {
	t.Helper()
	var rest []string
	deadline := time.After(within)
	for open := true; open; {
		select {
		case line, ok := <-lines:
			if !ok {
				open = false
				break
			}
			rest = append(rest, line)
		case <-deadline:
			_ = c.Process.Kill()
			t.Fatalf("the starter did not exit within %v; it printed %q", within, rest)
		}
	}
	err := c.Wait()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), rest
	}
	if err != nil {
		t.Fatal(err)
	}
	return 0, rest
}

// Issue 14, graceful shutdown; RES-05, FD-08. SIGTERM reaches agentrt
// serve while a retained run's slow turn is live. Within
// --shutdown-grace the turn completes: the starter, following it through
// providers/remote, prints the whole result and exits 0, and the server
// refused nothing it was running.
func TestServeSIGTERMLetsALiveRetainedRunFinishWithinTheGrace(t *testing.T) {
	dir := t.TempDir()
	script := writeFile(t, "slow.json", `{"turns":[{"repeat":true,"steps":[{"text":"first part "},{"delayMs":2500},{"text":"second part"}]}]}`)
	srv := startServeProc(t, nil, "--provider", "scripted", "--script", script, "--db", filepath.Join(dir, "serve.db"), "--shutdown-grace", "60s")
	starter, lines, _ := startRetained(t, srv.url, []string{"--db", filepath.Join(dir, "client.db")})
	took := srv.stop(t, syscall.SIGTERM, 90*time.Second)
	code, rest := waitExit(t, starter, lines, 60*time.Second)
	if code != 0 {
		t.Fatalf("the starter exited %d after the server's graceful stop; it printed %q; the server's log:\n%s", code, rest, srv.logged())
	}
	if len(rest) == 0 {
		t.Fatal("the starter printed nothing after the stop began")
	}
	result := decode(t, rest[len(rest)-1])
	if !member(result, "success").Bool() || !strings.Contains(member(result, "text").Str(), "second part") {
		t.Fatalf("the result the starter read across the stop: %s", canonjson.Marshal(result))
	}
	log := srv.logged()
	if !strings.Contains(log, "agentrt serve: stopped") || strings.Contains(log, "still live") {
		t.Fatalf("the server did not stop cleanly after its live turn ended (took %v); its log:\n%s", took, log)
	}
}

// Issue 14, graceful shutdown; RES-05, RES-06, ENV-10. SIGTERM reaches
// agentrt serve while a retained run's turn is live and outlasts
// --shutdown-grace: the server stops at the grace without cancelling the
// turn, so no client is told the run was cancelled; a server restarted
// on the same store then answers recovery truthfully — the environment
// held by the stopped process is gone (not_found, nothing to clean up),
// never "recovered" from another run — and recovering, even with the
// profile and task that could replay the keyed create, creates no second
// environment.
func TestServeSIGTERMPastTheGraceLeavesARetainedRunRecoverable(t *testing.T) {
	dir := t.TempDir()
	script := writeFile(t, "slow.json", `{"turns":[{"repeat":true,"steps":[{"text":"first part "},{"delayMs":60000},{"text":"second part"}]}]}`)
	serveDB := filepath.Join(dir, "serve.db")
	db := []string{"--db", filepath.Join(dir, "client.db")}
	srv := startServeProc(t, nil, "--provider", "scripted", "--script", script, "--db", serveDB, "--shutdown-grace", "1s")
	starter, lines, record := startRetained(t, srv.url, db)
	if took := srv.stop(t, syscall.SIGTERM, 60*time.Second); took > 30*time.Second {
		t.Errorf("the server took %v to stop with a 1s grace", took)
	}
	log := srv.logged()
	if !strings.Contains(log, "still live after 1s") || !strings.Contains(log, "not cancelled") || !strings.Contains(log, "agentrt serve: stopped") {
		t.Fatalf("the server's log does not say it left the live turn: \n%s", log)
	}
	code, rest := waitExit(t, starter, lines, 3*time.Minute)
	t.Logf("starter after the stop: exit %d, %q", code, rest)
	if code == 0 {
		t.Fatalf("the starter exited 0 although its server stopped mid-turn; it printed %q", rest)
	}
	for _, line := range rest {
		if strings.Contains(strings.ToLower(line), "cancel") || strings.Contains(line, "second part") {
			t.Fatalf("the starter was told something the run did not do: %s", line)
		}
	}

	again := startServeProc(t, nil, "--provider", "scripted", "--script", script, "--db", serveDB)
	// Without the server's token the recovery says the server does not
	// answer, not that the run names another provider.
	t.Setenv("AGENTRT_SERVE_TOKEN", "")
	if out, errOut, code := run(t, "", append([]string{"runs", "recover", record, "--provider", "remote", "--base-url", again.url, "--json"}, db...)...); code != 1 ||
		!strings.Contains(errOut, "does not answer") || strings.Contains(errOut, "does not match") {
		t.Fatalf("recovering without the token: exit %d, %s%s; want a failure saying the server does not answer", code, out, errOut)
	}
	t.Setenv("AGENTRT_SERVE_TOKEN", serveToken)
	out, errOut, code := run(t, "", append([]string{"runs", "recover", record, "--provider", "remote", "--base-url", again.url,
		"--profile", noteWriter, "--task", "Work long.", "--json"}, db...)...)
	if code == 0 {
		t.Fatalf("recovering a run whose server stopped mid-turn exited 0: %s%s", out, errOut)
	}
	if strings.TrimSpace(out) == "" {
		t.Fatalf("recovery printed nothing (exit %d): %s", code, errOut)
	}
	got := decode(t, out)
	if o := member(got, "outcome").Str(); o != "not_found" {
		t.Fatalf("recovery outcome %q, want not_found (the environment went with the stopped server): %s", o, out)
	}
	if reason := member(got, "reason").Str(); !strings.Contains(reason, "no longer exists") {
		t.Errorf("recovery reason %q does not say the environment is gone", reason)
	}
	if env := member(got, "environmentId"); !env.IsValid() || env.Kind() != canonjson.String || env.Str() == "" {
		t.Errorf("recovery names no environment: %s", out)
	}
	created := regexp.MustCompile(`method=POST route=/v1/environments status=20`)
	if n := len(created.FindAllString(again.logged(), -1)); n != 0 {
		t.Fatalf("the restarted server created %d environments during recovery; its log:\n%s", n, again.logged())
	}
	again.stop(t, syscall.SIGTERM, 60*time.Second)
	if !strings.Contains(again.logged(), "agentrt serve: stopped") {
		t.Errorf("the idle restarted server did not stop gracefully; its log:\n%s", again.logged())
	}
}
