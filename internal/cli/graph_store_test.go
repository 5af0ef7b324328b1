package cli_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/internal/pgtest"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/postgres"
	"github.com/agentrt/agentrt/store/sqlite"
	"github.com/agentrt/agentrt/supervise"
)

// graphStoreBackends are the run stores agentrt graph --journal-in-store
// is tried on: SQLite always, PostgreSQL when AGENTRT_TEST_DATABASE_URL
// names one.
var graphStoreBackends = []struct {
	name  string
	flags func(t *testing.T) []string
	open  func(t *testing.T, flags []string) store.Store
}{
	{"sqlite", func(t *testing.T) []string { return []string{"--db", filepath.Join(t.TempDir(), "runs.db")} },
		func(t *testing.T, flags []string) store.Store {
			s, err := sqlite.Open(context.Background(), flags[1], sqlite.Options{})
			if err != nil {
				t.Fatal(err)
			}
			return s
		}},
	{"postgres", func(t *testing.T) []string { return []string{"--database", pgtest.Schema(t)} },
		func(t *testing.T, flags []string) store.Store {
			s, err := postgres.Open(context.Background(), flags[1], postgres.Options{})
			if err != nil {
				t.Fatal(err)
			}
			return s
		}},
}

// RES-03 across machines for a graph: with --journal-in-store the graph
// run's journal (its spawns, settlements and edge records) lives in the
// run store under a lease, not in the run dir. A process SIGKILLed while
// the reviewer runs, after the coder settled, is resumed by another with
// an empty run dir of its own and the same --run-id: refused while the
// dead process's lease lasts, refused for a graph of another topology,
// then the coder is replayed from the store (its traversal ledgered
// once), the reviewer runs again and the run wins.
func TestGraphJournalInStoreResumesElsewhere(t *testing.T) {
	if testing.Short() {
		t.Skip("runs agentrt in a child process")
	}
	for _, backend := range graphStoreBackends {
		t.Run(backend.name, func(t *testing.T) {
			storeFlags := backend.flags(t)
			graphFile := writeFile(t, "graph.json", twoNodeGraph)
			dirs := writeFile(t, "directives.json", twoNodeDirectives)
			slow := writeFile(t, "slow.json", `{"turns": [
  {"match": "REVIEW", "repeat": true, "steps": [{"text": "reviewing"}, {"delayMs": 600000}]},
  {"match": "CODE", "repeat": true, "steps": [{"text": "patch: test fixed"}]}]}`)
			fast := writeFile(t, "fast.json", `{"turns": [
  {"match": "REVIEW", "repeat": true, "steps": [{"text": "review: the patch is safe"}]},
  {"match": "CODE", "repeat": true, "steps": [{"text": "patch: test fixed"}]}]}`)
			here, elsewhere := t.TempDir(), t.TempDir()
			common := append([]string{"--task", "Make the login test pass.", "--directives", dirs, "--run-id", "login",
				"--expect", "patch", "--journal-in-store", "--lease", "1s"}, storeFlags...)

			child := exec.Command(os.Args[0], append([]string{"graph", graphFile, "--run-dir", here, "--script", slow}, common...)...)
			child.Env = append(os.Environ(), "AGENTRT_CLI_CHILD=1")
			var stderr strings.Builder
			child.Stderr = &stderr
			if err := child.Start(); err != nil {
				t.Fatal(err)
			}
			st := backend.open(t, storeFlags)
			defer st.Close()
			coderSettled := func(recs []supervise.Record) bool {
				coder, reviewerStarted, settled := supervise.NodeID(""), false, false
				for _, r := range recs {
					switch {
					case r.Kind == supervise.KindSpawned && r.Profile == "coder":
						coder = r.Node
					case r.Kind == supervise.KindSpawned && r.Profile == "reviewer":
						reviewerStarted = true
					case r.Kind == supervise.KindSettled && r.Node == coder:
						settled = true
					}
				}
				return settled && reviewerStarted
			}
			awaitStoreJournal(t, st, "login", coderSettled, func() string {
				child.Process.Kill()
				child.Wait()
				return "the child never journaled the coder's settlement; stderr:\n" + stderr.String()
			})
			if err := child.Process.Kill(); err != nil { // SIGKILL
				t.Fatal(err)
			}
			_ = child.Wait()
			if _, err := os.Stat(filepath.Join(here, supervise.SpawnJournalFile)); err == nil {
				t.Error("the run dir holds a spawn journal file; the store holds the journal")
			}

			// Another topology is refused from the store's edge records,
			// before anything runs.
			other := writeFile(t, "other.json", strings.ReplaceAll(twoNodeGraph, `"reviewer"`, `"auditor"`))
			otherArgs := append([]string{"graph", other, "--run-dir", t.TempDir(), "--script", fast, "--resume"}, common...)
			if _, errOut, code := run(t, "", otherArgs...); code != 1 || !strings.Contains(errOut, "run login in the store") || !strings.Contains(errOut, "which this graph does not") {
				t.Errorf("resuming with another graph: exit %d\n%s", code, errOut)
			}

			args := append([]string{"graph", graphFile, "--run-dir", elsewhere, "--script", fast, "--resume", "--json"}, common...)
			// Refused while the killed process's lease lasts (1 s).
			out, errOut, code := resumeOnceLeaseLapsed(t, args...)
			if code != 0 {
				t.Fatalf("resuming elsewhere: exit %d\n%s%s", code, out, errOut)
			}
			res := decode(t, out)
			if !member(res, "resumed").Bool() || member(member(res, "winner"), "text").Str() != "patch: test fixed" {
				t.Errorf("not a resumed winner with the coder's output: %s", out)
			}
			rows := map[string]int{}
			for _, row := range member(res, "ledger").Items() {
				rows[member(row, "edge").Str()]++
			}
			if rows["delegates:driver->coder"] != 1 || rows["delegates:driver->reviewer"] != 2 {
				t.Errorf("ledger rows %v; want the coder's 1 (replayed from the store) and the reviewer's 2 (killed, then again): %s", rows, out)
			}
			var replayedCoder int
			for _, n := range member(res, "workers").Items() {
				if member(n, "profile").Str() == "coder" && member(n, "replayed").Bool() {
					replayedCoder++
				}
			}
			if replayedCoder != 1 {
				t.Errorf("%d replayed coders, want 1: %s", replayedCoder, out)
			}
			if !strings.Contains(errOut, "resuming run login in the store") {
				t.Errorf("stderr does not say the journal was read from the store:\n%s", errOut)
			}
			if _, errOut, code := run(t, "", "graph", graphFile, "--task", "t", "--journal-in-store", "--db", filepath.Join(t.TempDir(), "x.db")); code != 2 || !strings.Contains(errOut, "needs --run-id") {
				t.Errorf("--journal-in-store without --run-id: exit %d\n%s", code, errOut)
			}
		})
	}
}
