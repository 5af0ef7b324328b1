package storetest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentrt/agentrt/workspace"
)

// The document the contention checks increment.
const (
	ContentionTenant = "contention"
	ContentionPath   = "/memories/workspace/counter"
)

// ContentionResult counts what a group of writers achieved.
type ContentionResult struct {
	// Writers and Attempts (per writer) describe the load.
	Writers  int `json:"writers"`
	Attempts int `json:"attempts"`
	// Succeeded writes were accepted; Conflicted ones were refused with a
	// *workspace.ConflictError. Nothing else is allowed to happen.
	Succeeded  int `json:"succeeded"`
	Conflicted int `json:"conflicted"`
	// PID is the process the writers ran in.
	PID int `json:"pid"`
	// Elapsed is the wall time of the whole group.
	Elapsed time.Duration `json:"elapsed"`
}

// Increment makes attempts compare-and-set increments of the decimal
// counter at path: read it, then write value+1 at the revision read. A
// refused write counts as a conflict; any error other than a
// *workspace.ConflictError ends the run with that error.
func Increment(ctx context.Context, s workspace.Store, tenant, path, by string, attempts int) (succeeded, conflicted int, err error) {
	for range attempts {
		d, err := s.Get(ctx, tenant, path)
		if err != nil {
			return succeeded, conflicted, fmt.Errorf("read: %w", err)
		}
		n, err := strconv.ParseInt(string(d.Body), 10, 64)
		if err != nil {
			return succeeded, conflicted, fmt.Errorf("counter %q: %w", d.Body, err)
		}
		_, err = s.Put(ctx, tenant, path, []byte(strconv.FormatInt(n+1, 10)), workspace.ExpectRevision(d.Revision), by)
		var ce *workspace.ConflictError
		switch {
		case err == nil:
			succeeded++
		case errors.As(err, &ce):
			if ce.Actual == d.Revision {
				return succeeded, conflicted, fmt.Errorf("a conflict reports the revision it expected as actual: %w", err)
			}
			conflicted++
		default:
			return succeeded, conflicted, fmt.Errorf("write: %w", err)
		}
	}
	return succeeded, conflicted, nil
}

// Contend runs writers goroutines, each making attempts increments of the
// counter at ContentionPath in ContentionTenant (which must exist).
func Contend(ctx context.Context, s workspace.Store, writers, attempts int) (ContentionResult, error) {
	res := ContentionResult{Writers: writers, Attempts: attempts, PID: os.Getpid()}
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	start := time.Now()
	for w := range writers {
		wg.Go(func() {
			ok, conflicts, err := Increment(ctx, s, ContentionTenant, ContentionPath, fmt.Sprintf("p%d-w%d", res.PID, w), attempts)
			mu.Lock()
			defer mu.Unlock()
			res.Succeeded += ok
			res.Conflicted += conflicts
			if err != nil {
				errs = append(errs, fmt.Errorf("writer %d: %w", w, err))
			}
		})
	}
	wg.Wait()
	res.Elapsed = time.Since(start)
	return res, errors.Join(errs...)
}

func createCounter(t *testing.T, s workspace.Store) {
	t.Helper()
	if _, err := s.Put(context.Background(), ContentionTenant, ContentionPath, []byte("0"), workspace.ExpectAbsent(), "setup"); err != nil {
		t.Fatal(err)
	}
}

// checkCounter verifies that the counter equals the number of accepted
// writes and that its revision counts them too (zero lost updates).
func checkCounter(t *testing.T, s workspace.Store, succeeded int) {
	t.Helper()
	d, err := s.Get(context.Background(), ContentionTenant, ContentionPath)
	if err != nil {
		t.Fatal(err)
	}
	if string(d.Body) != strconv.Itoa(succeeded) || d.Revision != int64(succeeded)+1 {
		t.Errorf("lost updates: counter %s at revision %d after %d accepted writes (want %d at revision %d)",
			d.Body, d.Revision, succeeded, succeeded, succeeded+1)
	}
}

// CheckContention creates the counter in s and runs writers × attempts
// compare-and-set increments on it concurrently. The final value must
// equal the number of accepted writes, every refused write must be a
// *workspace.ConflictError, and at least one write must succeed.
func CheckContention(t *testing.T, s workspace.Store, writers, attempts int) ContentionResult {
	t.Helper()
	createCounter(t, s)
	res, err := Contend(context.Background(), s, writers, attempts)
	if err != nil {
		t.Fatal(err)
	}
	if res.Succeeded+res.Conflicted != writers*attempts || res.Succeeded == 0 {
		t.Errorf("result %+v does not account for %d attempts", res, writers*attempts)
	}
	checkCounter(t, s, res.Succeeded)
	t.Logf("%d writers × %d attempts: %d accepted, %d conflicts, %v (%.0f accepted writes/s)",
		writers, attempts, res.Succeeded, res.Conflicted, res.Elapsed.Round(time.Millisecond), float64(res.Succeeded)/res.Elapsed.Seconds())
	return res
}

// ContenderEnv marks the child process of ContendAcrossProcesses.
const ContenderEnv = "AGENTRT_WORKSPACE_CONTENDER"

// ProcessOptions configures ContendAcrossProcesses.
type ProcessOptions struct {
	// Open opens the shared store; both processes call it. It must reach
	// the same database in the child, which gets Env.
	Open func(t *testing.T) workspace.Store
	// Env is added to the child's environment (typically where the
	// shared database is).
	Env []string
	// Writers and Attempts are per process.
	Writers, Attempts int
}

const (
	lineReady  = "workspace-contender: ready"
	lineResult = "workspace-contender: result "
)

// ContendAcrossProcesses runs the contention check across two OS
// processes sharing one store: this test process and a second one, the
// test binary itself re-run on the calling test (os.Args[0]
// -test.run=^Name$) with ContenderEnv set. Both start their writers
// together; the counter must equal the accepted writes of both.
//
// The calling test must be a top-level test that calls this function and
// nothing else that depends on being the parent: in the child the same
// test runs again and this function plays the child's part.
func ContendAcrossProcesses(t *testing.T, o ProcessOptions) {
	if os.Getenv(ContenderEnv) != "" {
		contenderChild(t, o)
		return
	}
	s := o.Open(t)
	createCounter(t, s)

	cmd := exec.Command(os.Args[0], "-test.run=^"+regexp.QuoteMeta(t.Name())+"$", "-test.count=1", "-test.timeout=20m")
	cmd.Env = append(append(os.Environ(), ContenderEnv+"=1"), o.Env...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	lines := make(chan string)
	var output strings.Builder
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	await := func(prefix string) string {
		timeout := time.After(15 * time.Minute)
		for {
			select {
			case line, ok := <-lines:
				if !ok {
					cmd.Wait()
					t.Fatalf("the child process ended before %q:\n%s\n%s", prefix, output.String(), stderr.String())
				}
				output.WriteString(line + "\n")
				if strings.HasPrefix(line, prefix) {
					return strings.TrimPrefix(line, prefix)
				}
			case <-timeout:
				t.Fatalf("no %q from the child process:\n%s\n%s", prefix, output.String(), stderr.String())
			}
		}
	}
	await(lineReady)
	if _, err := io.WriteString(stdin, "go\n"); err != nil {
		t.Fatal(err)
	}
	mine, err := Contend(context.Background(), s, o.Writers, o.Attempts)
	if err != nil {
		t.Fatalf("this process: %v", err)
	}
	var theirs ContentionResult
	if err := json.Unmarshal([]byte(await(lineResult)), &theirs); err != nil {
		t.Fatal(err)
	}
	go func() {
		for range lines {
		}
	}()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("child process: %v\n%s\n%s", err, output.String(), stderr.String())
	}
	if theirs.PID == mine.PID || theirs.PID == 0 {
		t.Fatalf("the contender ran in process %d, this test in %d: not two processes", theirs.PID, mine.PID)
	}
	for _, r := range []ContentionResult{mine, theirs} {
		if r.Succeeded+r.Conflicted != o.Writers*o.Attempts {
			t.Errorf("process %d: %+v does not account for %d attempts", r.PID, r, o.Writers*o.Attempts)
		}
	}
	if mine.Succeeded == 0 || theirs.Succeeded == 0 {
		t.Errorf("one process never won a write (this %d, other %d): no real contention", mine.Succeeded, theirs.Succeeded)
	}
	checkCounter(t, s, mine.Succeeded+theirs.Succeeded)
	t.Logf("two processes (%d, %d), %d writers × %d attempts each: accepted %d + %d = %d, conflicts %d + %d; %v and %v",
		mine.PID, theirs.PID, o.Writers, o.Attempts, mine.Succeeded, theirs.Succeeded, mine.Succeeded+theirs.Succeeded,
		mine.Conflicted, theirs.Conflicted, mine.Elapsed.Round(time.Millisecond), theirs.Elapsed.Round(time.Millisecond))
}

func contenderChild(t *testing.T, o ProcessOptions) {
	s := o.Open(t)
	fmt.Println(lineReady)
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		t.Fatalf("waiting for the start signal: %v", err)
	}
	res, err := Contend(context.Background(), s, o.Writers, o.Attempts)
	if err != nil {
		t.Fatalf("child process: %v", err)
	}
	b, _ := json.Marshal(res)
	fmt.Println(lineResult + string(b))
}
