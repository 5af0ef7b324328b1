package sqlite_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/sqlite"
)

// bodyOf is the body of event id of run: both the appender and the
// checker derive it, so the checker knows what each acknowledged event
// must hold.
func bodyOf(run, id string) canonjson.Value {
	v, err := canonjson.Decode(fmt.Appendf(nil, `{"run":%q,"id":%q,"text":"durable or not at all"}`, run, id))
	if err != nil {
		panic(err)
	}
	return v
}

// appendUntil appends to each run from its own goroutines until ctx
// ends, reporting every acknowledged event to ack.
func appendUntil(ctx context.Context, s store.Store, runs []string, perRun int, ack func(store.Event)) error {
	var wg sync.WaitGroup
	errs := make(chan error, len(runs)*perRun)
	for _, run := range runs {
		for w := range perRun {
			wg.Go(func() {
				for i := 0; ctx.Err() == nil; i++ {
					n := 1 + i%3
					batch := make([]store.NewEvent, n)
					for j := range batch {
						id := fmt.Sprintf("w%d-%d-%d", w, i, j)
						batch[j] = store.NewEvent{ID: id, Type: "message.delta", Time: time.Unix(1_800_000_000, int64(i)), Body: bodyOf(run, id)}
					}
					got, err := s.AppendEvents(ctx, store.Fence{RunID: run, Generation: 1}, batch)
					if err != nil {
						if ctx.Err() == nil {
							errs <- err
						}
						return
					}
					for _, e := range got {
						ack(e)
					}
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	return <-errs
}

const (
	killedEnv = "AGENTRT_TEST_SQLITE_KILLED_APPENDER"
	killRuns  = 16
)

func killRunIDs() []string {
	ids := make([]string, killRuns)
	for i := range ids {
		ids[i] = fmt.Sprint("run-", i)
	}
	return ids
}

// The appender half of TestAcknowledgedAppendsSurviveKill: it appends
// from many goroutines to the database named by killedEnv and prints
// "ack <run> <seq> <id>" for each event once AppendEvents returned it,
// until it is killed (or, should its parent be gone, for 20 seconds).
func killedAppender(path string) {
	s, err := sqlite.Open(context.Background(), path, sqlite.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var mu sync.Mutex
	out := bufio.NewWriter(os.Stdout)
	err = appendUntil(ctx, s, killRunIDs(), 3, func(e store.Event) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(out, "ack %s %d %s\n", e.RunID, e.Sequence, e.ID)
		out.Flush() // before the next append: an ack never waits in a buffer
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	os.Exit(0)
}

// Every append acknowledged before a SIGKILL is in the file afterwards,
// with its sequence and body: a process appending from 48 goroutines
// (16 runs) is killed mid-flight, and its parent reopens the database
// and looks up each event the child reported as acknowledged. The kill
// lands after 3000 acknowledged events (or 5 seconds), while appends are
// in flight.
func TestAcknowledgedAppendsSurviveKill(t *testing.T) {
	if path := os.Getenv(killedEnv); path != "" {
		killedAppender(path)
		return
	}
	if testing.Short() {
		t.Skip("starts and kills a process")
	}
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "agentrt.db")
	s, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range killRunIDs() {
		if _, err := s.CreateRun(ctx, store.Run{ID: id, Kind: "execute", Status: store.StatusRunning}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	cmd := exec.Command(os.Args[0], "-test.run=^TestAcknowledgedAppendsSurviveKill$", "-test.count=1")
	cmd.Env = append(os.Environ(), killedEnv+"="+path)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Kill once enough appends were acknowledged, or after a bound: a
	// generous one, since every acknowledgement is an fsync and a loaded
	// machine under the race detector managed only 578 in 5 s.
	const killAfterAcks = 3000
	watchdog := time.AfterFunc(2*time.Minute, func() { cmd.Process.Kill() })
	defer watchdog.Stop()
	type key struct {
		run string
		seq int64
	}
	acked := map[key]string{}
	r := bufio.NewReader(stdout)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			// A line cut short by the kill was never fully reported.
			if !errors.Is(err, io.EOF) && !errors.Is(err, os.ErrClosed) {
				t.Fatal(err)
			}
			break
		}
		f := strings.Fields(line)
		if len(f) != 4 || f[0] != "ack" {
			t.Fatalf("child printed %q", line)
		}
		seq, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil {
			t.Fatalf("child printed %q", line)
		}
		acked[key{f[1], seq}] = f[3]
		if len(acked) == killAfterAcks {
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
		}
	}
	err = cmd.Wait()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("the appender was not killed mid-flight: %v\n%s", err, stderr.String())
	}
	if len(acked) < killAfterAcks {
		t.Fatalf("only %d appends acknowledged before the watchdog killed the appender\n%s", len(acked), stderr.String())
	}

	s, err = sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	stored := map[key]store.Event{}
	total := 0
	for _, run := range killRunIDs() {
		evs, err := s.Events(ctx, run, "", 0)
		if err != nil {
			t.Fatal(err)
		}
		for i, e := range evs {
			if e.Sequence != int64(i+1) {
				t.Fatalf("%s: sequence gap at %d: %d", run, i, e.Sequence)
			}
			stored[key{run, e.Sequence}] = e
		}
		total += len(evs)
	}
	lost := 0
	for k, id := range acked {
		e, ok := stored[k]
		if !ok || e.ID != id || !canonjson.Equal(e.Body, bodyOf(k.run, id)) {
			lost++
			if lost <= 5 {
				t.Errorf("acknowledged event %s of %s (seq %d) is missing or differs after the kill: %+v", id, k.run, k.seq, e)
			}
		}
	}
	if lost > 0 {
		t.Fatalf("%d of %d acknowledged events lost", lost, len(acked))
	}
	t.Logf("%d events acknowledged before the kill, %d stored", len(acked), total)
}

// Close lets appends already queued commit, refuses the rest with
// store.ErrClosed, and leaves no goroutine behind; whatever was
// acknowledged is in the file when it is reopened.
func TestCloseWhileAppending(t *testing.T) {
	ctx := context.Background()
	before := runtime.NumGoroutine()
	path := filepath.Join(t.TempDir(), "agentrt.db")
	s, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	runs := killRunIDs()[:4]
	for _, id := range runs {
		if _, err := s.CreateRun(ctx, store.Run{ID: id, Kind: "execute", Status: store.StatusRunning}); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	var acked []store.Event
	done := make(chan error, 1)
	go func() {
		done <- appendUntil(ctx, s, runs, 4, func(e store.Event) {
			mu.Lock()
			acked = append(acked, e)
			mu.Unlock()
		})
	}()
	deadline := time.Now().Add(5 * time.Second)
	for {
		mu.Lock()
		n := len(acked)
		mu.Unlock()
		if n >= 50 || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, store.ErrClosed) {
			t.Fatalf("appending during Close: %v, want store.ErrClosed", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("appenders still running after Close")
	}
	if _, err := s.AppendEvents(ctx, store.Fence{RunID: runs[0], Generation: 1}, []store.NewEvent{{ID: "late", Type: "t", Body: bodyOf("r", "late")}}); !errors.Is(err, store.ErrClosed) {
		t.Errorf("append after Close: %v, want store.ErrClosed", err)
	}
	deadline = time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("%d goroutines after Close, %d before:\n%s", runtime.NumGoroutine(), before, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(5 * time.Millisecond)
	}

	s, err = sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	mu.Lock()
	defer mu.Unlock()
	if len(acked) == 0 {
		t.Fatal("nothing was appended before Close")
	}
	for _, a := range acked {
		got, err := s.Events(ctx, a.RunID, store.CursorFor(a.Sequence-1), 1)
		if err != nil || len(got) != 1 || got[0].ID != a.ID {
			t.Fatalf("acknowledged %s of %s (seq %d) missing after Close: %v %v", a.ID, a.RunID, a.Sequence, got, err)
		}
	}
}
