package journal_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/journal"
)

// childEnv selects a child-process role when the test binary re-executes
// itself; childPath names the journal the child works on.
const (
	childEnv  = "AGENTRT_JOURNAL_CHILD"
	childPath = "AGENTRT_JOURNAL_PATH"
)

func TestMain(m *testing.M) {
	switch os.Getenv(childEnv) {
	case "":
		os.Exit(m.Run())
	case "append":
		appendForever(os.Getenv(childPath))
	case "open":
		tryOpen(os.Getenv(childPath))
	}
	os.Exit(2)
}

// appendForever appends from several goroutines until killed, printing
// "seq g i size" for every record once its Append has returned.
func appendForever(path string) {
	j, err := journal.Open(path, journal.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	var out sync.Mutex
	for g := range 6 {
		go func() {
			for i := 0; ; i += 2 {
				// Two records per batch, one of them large, so that
				// writes span pages and a kill can tear one.
				a, b := childRecord(g, i), childRecord(g, i+1)
				first, err := j.Append(context.Background(), a, b)
				if err != nil {
					fmt.Fprintln(os.Stderr, err)
					os.Exit(1)
				}
				out.Lock()
				fmt.Fprintf(os.Stdout, "%d %d %d\n%d %d %d\n", first, g, i, first+1, g, i+1)
				out.Unlock()
			}
		}()
	}
	select {}
}

func childRecord(g, i int) canonjson.Value {
	return canonjson.ObjectValue([]canonjson.Member{
		{Name: "g", Value: canonjson.NumberValue(float64(g))},
		{Name: "i", Value: canonjson.NumberValue(float64(i))},
		{Name: "pad", Value: canonjson.StringValue(strings.Repeat("x", childPad(g, i)))},
	})
}

func childPad(g, i int) int { return (g*7919 + i*104729) % 40000 }

// tryOpen reports the outcome of opening the journal: "ok" or
// "locked <pid>".
func tryOpen(path string) {
	j, err := journal.Open(path, journal.Options{})
	var le *journal.LockedError
	switch {
	case err == nil:
		j.Close()
		fmt.Println("ok")
	case errors.As(err, &le):
		fmt.Println("locked", le.PID)
	default:
		fmt.Println("error", err)
	}
	os.Exit(0)
}

func child(t *testing.T, role, path string) *exec.Cmd {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), childEnv+"="+role, childPath+"="+path)
	cmd.Stderr = os.Stderr
	return cmd
}

// checkHolder: the holder named is the right process where the system
// can tell (Linux), and never a wrong one.
func checkHolder(t *testing.T, le *journal.LockedError, want int) {
	t.Helper()
	switch {
	case le.PID == want:
	case le.PID == 0 && runtime.GOOS != "linux":
	default:
		t.Errorf("LockedError names process %d, want %d", le.PID, want)
	}
	if !strings.Contains(le.Error(), le.Path) {
		t.Errorf("LockedError %q does not name the path", le.Error())
	}
}

// The lock holds across processes: a child cannot open a journal this
// process holds, and can once it is closed.
func TestLockAcrossProcesses(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.jsonl")
	j, err := journal.Open(path, journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	out, err := child(t, "open", path).Output()
	if err != nil {
		t.Fatal(err)
	}
	want := "locked " + strconv.Itoa(os.Getpid()) + "\n"
	if runtime.GOOS != "linux" {
		want = "locked 0\n"
	}
	if string(out) != want {
		t.Errorf("child while held: %q, want %q", out, want)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	if out, err := child(t, "open", path).Output(); err != nil || string(out) != "ok\n" {
		t.Errorf("child after Close: %q, %v", out, err)
	}
}

// Checklist RES-03 (kill the coordinator mid-run, restart with the same
// run dir): a writer SIGKILLed while appending from several goroutines
// loses nothing it acknowledged. The parent reopens the journal (the lock
// died with the child), the torn tail is repaired, and every acknowledged
// record is present, intact, under its sequence number, with no gaps.
func TestKill9KeepsAcknowledgedRecords(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a child process")
	}
	path := filepath.Join(t.TempDir(), "spawn-journal.jsonl")
	cmd := child(t, "append", path)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	type ack struct{ g, i int }
	acked := map[int64]ack{}
	lines := make(chan string)
	go func() {
		defer close(lines)
		br := bufio.NewReader(stdout)
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				return // a line cut short by the kill was never acknowledged
			}
			lines <- line
		}
	}()
	parse := func(line string) {
		var seq int64
		var a ack
		if _, err := fmt.Sscanf(line, "%d %d %d\n", &seq, &a.g, &a.i); err != nil {
			t.Fatalf("child printed %q: %v", line, err)
		}
		if prev, dup := acked[seq]; dup {
			t.Fatalf("seq %d acknowledged twice: %v and %v", seq, prev, a)
		}
		acked[seq] = a
	}
	timeout := time.After(5 * time.Second)
	for len(acked) < 400 {
		select {
		case line, ok := <-lines:
			if !ok {
				t.Fatalf("child exited after %d acknowledgements", len(acked))
			}
			parse(line)
		case <-timeout:
			t.Fatalf("only %d acknowledgements in 5s", len(acked))
		}
	}
	if err := cmd.Process.Kill(); err != nil { // SIGKILL
		t.Fatal(err)
	}
	for line := range lines {
		parse(line)
	}
	if err := cmd.Wait(); err == nil {
		t.Fatal("child exited cleanly; want killed")
	}

	j := mustOpen(t, path, journal.Options{})
	t.Logf("%d acknowledged; reopened with %+v", len(acked), j.Recovery())
	n := int64(0)
	for e, err := range j.Read(context.Background(), 1) {
		if err != nil {
			t.Fatalf("after kill: %v", err)
		}
		n++
		if e.Seq != n {
			t.Fatalf("seq %d after %d records: gap", e.Seq, n-1)
		}
		a, ok := acked[e.Seq]
		if !ok {
			continue // written but not acknowledged before the kill
		}
		if got, want := canon(t, e.Value), canon(t, childRecord(a.g, a.i)); got != want {
			t.Errorf("seq %d holds %.60s…, acknowledged g=%d i=%d", e.Seq, got, a.g, a.i)
		}
		delete(acked, e.Seq)
	}
	if len(acked) > 0 {
		t.Errorf("%d acknowledged records missing after the kill, e.g. %v", len(acked), acked)
	}
	if got := j.Recovery().Lines; got != n {
		t.Errorf("Recovery().Lines = %d, records read %d", got, n)
	}
}
