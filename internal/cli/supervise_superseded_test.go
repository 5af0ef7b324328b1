package cli_test

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentrt/agentrt/internal/sqlitedb"
)

// A supervisor whose store stops answering it past its --lease loses
// the run: another process takes it over and spawns. The superseded
// process must stop soon after its lease ran out (its brain and workers
// are cut at once; what is left is bounded store calls), and its
// progress must not print the new holder's spawns as its own. Before
// the fix it printed "spawned rel:s2 successor" (the successor's
// worker) among its own lines.
//
// SQLite is frozen by this test holding the file's write lock (the
// process's reads go on, so it sees the successor's records); PostgreSQL
// by holding an exclusive lock on the runs table (nothing answers).
func TestSupersededSupervisorStopsAndKeepsToItsOwnProgress(t *testing.T) {
	if testing.Short() {
		t.Skip("runs agentrt in child processes")
	}
	freezers := map[string]func(t *testing.T, flags []string) (thaw func()){
		"sqlite": func(t *testing.T, flags []string) func() {
			w, _, err := sqlitedb.Open(context.Background(), flags[1], 0)
			if err != nil {
				t.Fatal(err)
			}
			tx, err := w.BeginTx(context.Background(), nil) // _txlock=immediate: the write lock now
			if err != nil {
				t.Fatal(err)
			}
			return func() {
				_ = tx.Rollback()
				_ = w.Close()
			}
		},
		"postgres": func(t *testing.T, flags []string) func() {
			conn, err := pgx.Connect(context.Background(), flags[1])
			if err != nil {
				t.Fatal(err)
			}
			tx, err := conn.Begin(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tx.Exec(context.Background(), "LOCK TABLE runs, events IN ACCESS EXCLUSIVE MODE"); err != nil {
				t.Fatal(err)
			}
			return func() {
				_ = tx.Rollback(context.Background())
				_ = conn.Close(context.Background())
			}
		},
	}
	for _, backend := range graphStoreBackends {
		t.Run(backend.name, func(t *testing.T) {
			storeFlags := backend.flags(t)
			common := append([]string{"--worker", noteWriter, "--run-id", "rel", "--journal-in-store", "--lease", "2s", "--worker-tokens", "1000"}, storeFlags...)
			first := managerScript(t, `{"turns": [`+spawnNote+`, `+awaitOne+`, {"hang": true}]}`)
			a := exec.Command(os.Args[0], append([]string{"supervise", supManager, "--task", "Write release notes.",
				"--manager-script", first, "--run-dir", t.TempDir()}, common...)...)
			a.Env = append(os.Environ(), "AGENTRT_CLI_CHILD=1")
			var aErr strings.Builder
			a.Stderr = &aErr
			if err := a.Start(); err != nil {
				t.Fatal(err)
			}
			var aExit error
			exited := make(chan struct{})
			go func() { aExit = a.Wait(); close(exited) }()
			defer func() {
				_ = a.Process.Kill()
				<-exited
			}()
			st := backend.open(t, storeFlags)
			defer st.Close()
			awaitStoreJournal(t, st, "rel", settledIn, func() string { return "stderr:\n" + aErr.String() })

			// The store stops answering the first process past its lease.
			thaw := freezers[backend.name](t, storeFlags)
			frozen := time.Now()
			time.Sleep(3 * time.Second)
			thaw()

			// Another process takes the run over and spawns a worker of
			// its own (its manager goes on from the journaled
			// conversation: turn three).
			second := managerScript(t, `{"turns": [`+spawnNote+`, `+awaitOne+`, {"calls": [{"verb": "spawn_worker", "args": {"profile": "note-writer", "label": "successor", "task": "Write another note."}}]}, `+awaitOne+`, `+answerDone+`]}`)
			args := append([]string{"supervise", supManager, "--manager-script", second, "--run-dir", t.TempDir(), "--resume", "--json"}, common...)
			out, errOut, code := resumeOnceLeaseLapsed(t, args...)
			if code != 0 {
				t.Fatalf("taking the run over: exit %d\n%s%s", code, out, errOut)
			}
			if !strings.Contains(errOut, "spawned rel:s2 successor") {
				t.Fatalf("the successor's own progress does not show its spawn:\n%s", errOut)
			}

			select {
			case <-exited:
				t.Logf("the superseded process ended %v after its store froze (%v)", time.Since(frozen).Round(time.Millisecond), aExit)
				if aExit == nil {
					t.Errorf("the superseded process exited 0; stderr:\n%s", aErr.String())
				}
			case <-time.After(30 * time.Second):
				t.Fatalf("the superseded process still runs 30 s after the successor ended; stderr:\n%s", aErr.String())
			}
			if strings.Contains(aErr.String(), "successor") {
				t.Errorf("the superseded process printed the successor's spawn as its own progress:\n%s", aErr.String())
			}
			if !strings.Contains(aErr.String(), "spawned rel:s1 note") || !strings.Contains(aErr.String(), "lost the run's spawn journal") {
				t.Errorf("the superseded process's stderr lacks its own spawn or why it stopped:\n%s", aErr.String())
			}
		})
	}
}
