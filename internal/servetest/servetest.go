package servetest

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// buildTimeout bounds building cmd/agentrt on a loaded machine.
const buildTimeout = 10 * time.Minute

var (
	buildOnce sync.Once
	built     string
	buildErr  error
	buildOut  []byte
)

// Binary builds cmd/agentrt once per test binary and returns its path.
func Binary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "agentrt-test-")
		if err != nil {
			buildErr = err
			return
		}
		built = filepath.Join(dir, "agentrt")
		ctx, cancel := context.WithTimeout(context.Background(), buildTimeout)
		defer cancel()
		buildOut, buildErr = exec.CommandContext(ctx, "go", "build", "-o", built, "github.com/agentrt/agentrt/cmd/agentrt").CombinedOutput()
	})
	if buildErr != nil {
		t.Fatalf("go build ./cmd/agentrt: %v\n%s", buildErr, buildOut)
	}
	return built
}

// Run runs a package's tests (m.Run) and then removes the binary Binary
// built, if it built one, so test runs leave nothing in the temporary
// directory. A package whose tests call Binary or Serve calls it from
// TestMain: os.Exit(servetest.Run(m)).
func Run(m *testing.M) int {
	code := m.Run()
	if built != "" {
		os.RemoveAll(filepath.Dir(built))
	}
	return code
}

// Home is the environment entry AGENTRT_HOME=DIR of a fresh directory
// the test removes: a server's default store (its keyed creates) lives
// there, never in the developer's ~/.agentrt nor shared with another
// test's server.
func Home(t testing.TB) string {
	t.Helper()
	return "AGENTRT_HOME=" + t.TempDir()
}

// Log is a child's stderr, safe to read while it is written.
type Log struct {
	mu sync.Mutex
	b  strings.Builder
}

// Write implements io.Writer.
func (l *Log) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String returns what was written so far.
func (l *Log) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// listening is the line `agentrt serve` prints once it accepts
// connections.
var listening = regexp.MustCompile(`listening on (https?://127\.0\.0\.1:\d+)`)

// Serve runs `agentrt serve --listen 127.0.0.1:0 args…` with env added
// to the test's environment and a home of its own (AGENTRT_HOME, where
// its default store lives, unless env sets another), waits (at most two minutes) for it to
// accept connections and returns its base URL and its log. When the test
// ends the server is interrupted and must stop gracefully (it says
// "agentrt serve: stopped"); one that does not within 30 s is killed and
// fails the test.
func Serve(t testing.TB, env []string, args ...string) (string, *Log) {
	t.Helper()
	// The server stops within 30 s even with a turn left live (the grace
	// is 30 s by default); args may set --shutdown-grace again.
	cmd := exec.Command(Binary(t), append([]string{"serve", "--listen", "127.0.0.1:0", "--shutdown-grace", "10s"}, args...)...)
	cmd.Env = append(append(os.Environ(), Home(t)), env...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	logs := &Log{}
	found := make(chan string, 1)
	read := make(chan struct{})
	go func() {
		defer close(read)
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
		for sc.Scan() {
			logs.Write([]byte(sc.Text() + "\n"))
			if m := listening.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
		}
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-read:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-read
			t.Errorf("agentrt serve did not stop within 30 s of an interrupt; its log:\n%s", logs.String())
		}
		_ = cmd.Wait()
		if !strings.Contains(logs.String(), "agentrt serve: stopped") {
			t.Errorf("agentrt serve did not stop gracefully; its log:\n%s", logs.String())
		}
	})
	select {
	case u := <-found:
		return u, logs
	case <-read:
		t.Fatalf("agentrt serve exited; its log:\n%s", logs.String())
	case <-time.After(2 * time.Minute):
		t.Fatalf("agentrt serve did not report its address; its log:\n%s", logs.String())
	}
	return "", nil
}
