package supervise_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/store/sqlite"
	"github.com/agentrt/agentrt/supervise"
)

// A process paused past its lease (RES-03, behaviour 46, the SQL spawn
// journal's fence): a supervisor keeping its journal in SQLite is
// stopped with SIGSTOP while its second worker runs. Another process, on
// another machine's run dir, is refused while the paused one's lease
// lasts, then takes the run over at the next generation, does not run
// the committed worker again and settles with the uninterrupted run's
// winner. The paused process, continued, finds its lease lost and ends
// with ErrSpawnLogLost without writing into the journal it no longer
// owns: the journal afterwards is exactly the one the winner left.
func TestPausedSupervisorLosesTheJournalBehaviour46(t *testing.T) {
	if testing.Short() {
		t.Skip("re-executes the test binary")
	}
	manager, err := processManager()
	if err != nil {
		t.Fatal(err)
	}
	o, err := processOptions(newCounting(t, workerProvider(t)), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	want, err := supervise.Supervise(context.Background(), manager, "t", o)
	if err != nil || want.Winner == nil {
		t.Fatalf("uninterrupted run: %v %+v", err, want)
	}

	dir, db := t.TempDir(), filepath.Join(t.TempDir(), "runs.db")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=1", childDir+"="+dir, childStore+"="+db, childHonoursCtx+"=1")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	var exitErr error
	go func() { exitErr = cmd.Wait(); close(exited) }()
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGCONT)
		_ = cmd.Process.Kill()
		<-exited
	}()
	deadline := time.Now().Add(120 * time.Second)
	for {
		if _, err := os.Stat(filepath.Join(dir, "slow-started")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the child never started its slow worker; stderr:\n%s", stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()

	st, err := sqlite.Open(context.Background(), db, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	counting := newCounting(t, workerProvider(t))
	o, err = processOptions(counting, t.TempDir()) // another machine's run dir
	if err != nil {
		t.Fatal(err)
	}
	o.SpawnStore, o.SpawnLeaseTTL = st, kernel.MinLeaseTTL
	var got supervise.SupervisedResult
	for {
		got, err = supervise.Supervise(context.Background(), manager, "t", o)
		if !errors.Is(err, supervise.ErrSpawnLogHeld) {
			break // held only while the paused process's lease lasts
		}
		if time.Now().After(deadline) {
			t.Fatalf("still held: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	if counting.count("alpha") != 0 || counting.count("slow") != 1 || counting.count("beta") != 1 {
		t.Errorf("the taking-over process executed alpha %d, slow %d, beta %d times; want 0, 1, 1",
			counting.count("alpha"), counting.count("slow"), counting.count("beta"))
	}
	if got.Winner == nil || got.Winner.OutRef != want.Winner.OutRef || got.Winner.Node != want.Winner.Node {
		t.Fatalf("winner %+v, want %+v", got.Winner, want.Winner)
	}
	t.Logf("taken over and settled %v after SIGSTOP", time.Since(stopped).Round(time.Millisecond))
	before := journalOf(t, st)

	if err := cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	continued := time.Now()
	select {
	case <-exited:
		t.Logf("the continued process ended %v after SIGCONT", time.Since(continued).Round(time.Millisecond))
		if exitErr == nil || !strings.Contains(stderr.String(), supervise.ErrSpawnLogLost.Error()) {
			t.Errorf("the continued process ended with %v, want ErrSpawnLogLost; stderr:\n%s", exitErr, stderr.String())
		}
	case <-time.After(30 * time.Second):
		// Its brain awaits for up to 60 s: a process that ran on until
		// then drove a run that was no longer its own.
		t.Fatalf("the continued process still runs 30 s after its lease was taken over; stderr:\n%s", stderr.String())
	}
	if after := journalOf(t, st); after != before {
		t.Errorf("the paused process wrote into the journal after losing it:\nbefore %s\nafter  %s", before, after)
	}
	run, err := st.GetRun(context.Background(), "run1")
	if err != nil || run.Generation != 2 {
		t.Errorf("the journal's run %+v (%v): want it taken over once (generation 2)", run, err)
	}
}

// journalOf is run1's spawn journal in st: each event's sequence, type
// and body, one per line.
func journalOf(t *testing.T, st *sqlite.Store) string {
	t.Helper()
	var b strings.Builder
	after := ""
	for {
		evs, err := st.Events(context.Background(), "run1", after, 100)
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) == 0 {
			return b.String()
		}
		for _, ev := range evs {
			fmt.Fprintf(&b, "%d %s %s\n", ev.Sequence, ev.Type, canonjson.Marshal(ev.Body))
		}
		after = evs[len(evs)-1].Cursor
	}
}
