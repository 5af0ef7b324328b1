package supervise_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentrt/agentrt/canonjson"
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
	manager, want := uninterruptedRun(t)
	dir, db := t.TempDir(), filepath.Join(t.TempDir(), "runs.db")
	cmd, stderr := startSlowChild(t, childEnv+"=1", childDir+"="+dir, childStore+"="+db, childHonoursCtx+"=1")
	exited := make(chan struct{})
	var exitErr error
	go func() { exitErr = cmd.Wait(); close(exited) }()
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGCONT)
		_ = cmd.Process.Kill()
		<-exited
	}()
	if err := cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()

	st, err := sqlite.Open(context.Background(), db, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	takeOverFromStore(t, manager, st, t.TempDir(), want) // another machine's run dir
	t.Logf("taken over and settled %v after SIGSTOP", time.Since(stopped).Round(time.Millisecond))
	before := journalOf(t, st)
	// The run's document too (its lease, its run record): the continued
	// process must not release, renew or record into the run it lost.
	runBefore, err := st.GetRun(context.Background(), "run1")
	if err != nil {
		t.Fatal(err)
	}

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
	if err == nil && (run.Owner != runBefore.Owner || !canonjson.Equal(run.Doc, runBefore.Doc) || run.Status != runBefore.Status) {
		t.Errorf("the paused process changed the run it lost:\nbefore %s %s %s\nafter  %s %s %s",
			runBefore.Owner, runBefore.Status, canonjson.Marshal(runBefore.Doc), run.Owner, run.Status, canonjson.Marshal(run.Doc))
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
