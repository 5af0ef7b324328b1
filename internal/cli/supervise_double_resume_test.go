package cli_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt/supervise"
)

// Two `agentrt supervise --resume` processes started at the same instant
// on one killed run — its run dir (the file journal's supervise.lock) or
// its store journal (the lease) — must not both drive it: exactly one
// resumes the run to its end, the other refuses at once, non-zero, saying
// who holds the run and what to do. §9 (one supervisor per run), behaviour
// 46; RES-03.
func TestTwoSimultaneousResumesOneProceeds(t *testing.T) {
	if testing.Short() {
		t.Skip("runs agentrt in child processes")
	}
	for _, tt := range []struct {
		name    string
		inStore bool
		backend int
		ownDirs bool     // each resume has a run dir of its own (another machine)
		refusal []string // what the refused process must say
	}{
		{"file journal", false, 0, false, []string{"is held by supervisor pid", "wait for it to end or stop it"}},
		{"sqlite journal in store, one run dir", true, 0, false, []string{"is held by supervisor pid", "wait for it to end or stop it"}},
		{"postgres journal in store, one run dir", true, 1, false, []string{"is held by supervisor pid", "wait for it to end or stop it"}},
		{"sqlite journal in store, own run dirs", true, 0, true, []string{"holds the run's spawn journal"}},
		{"postgres journal in store, own run dirs", true, 1, true, []string{"holds the run's spawn journal"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			backend := graphStoreBackends[tt.backend]
			storeFlags := backend.flags(t)
			st := backend.open(t, storeFlags)
			defer st.Close()
			slow := writeFile(t, "slow.json", `{"turns": [{"match": "note", "repeat": true, "steps": [{"delayMs": 1500}, {"text": "Done: the note."}]}]}`)
			// The resumed manager finds its first worker in doubt and
			// spawns another, which takes 1.5 s: the two resumes overlap.
			script := managerScript(t, `{"turns": [`+spawnNote+`, `+awaitOne+`, `+spawnNote+`, `+awaitOne+`, `+answerDone+`]}`)
			dir := t.TempDir()
			args := append([]string{"supervise", supManager, "--task", "Write release notes.", "--worker", noteWriter,
				"--manager-script", script, "--script", slow, "--run-id", "twice", "--run-dir", dir,
				"--worker-tokens", "1000", "--expect", "Done"}, storeFlags...)
			if tt.inStore {
				args = append(args, "--journal-in-store", "--lease", "1s")
			}
			records := func() []supervise.Record {
				if tt.inStore {
					return storeRecords(st, "twice")
				}
				recs, _, _ := supervise.ReadRunDir(context.Background(), dir)
				return recs
			}
			first := exec.Command(os.Args[0], args...)
			first.Env = append(os.Environ(), "AGENTRT_CLI_CHILD=1")
			var firstErr strings.Builder
			first.Stderr = &firstErr
			if err := first.Start(); err != nil {
				t.Fatal(err)
			}
			for deadline := time.Now().Add(time.Minute); !slicesContainsKind(records(), supervise.KindExecutionBound); time.Sleep(20 * time.Millisecond) {
				if time.Now().After(deadline) {
					_ = first.Process.Kill()
					_ = first.Wait()
					t.Fatalf("the first process never bound its worker; stderr:\n%s", firstErr.String())
				}
			}
			_ = first.Process.Kill() // SIGKILL
			_ = first.Wait()
			if tt.inStore {
				for deadline := time.Now().Add(time.Minute); leaseHeld(st, "twice"); time.Sleep(50 * time.Millisecond) {
					if time.Now().After(deadline) {
						t.Fatal("the killed process's lease never lapsed")
					}
				}
			}

			type ended struct {
				code           int
				stdout, stderr string
				took           time.Duration
			}
			start := make(chan struct{})
			results := make(chan ended, 2)
			for range 2 {
				a := append(slices.Clone(args), "--resume", "--json")
				if tt.ownDirs {
					a = append(a, "--run-dir", t.TempDir())
				}
				c := exec.Command(os.Args[0], a...)
				c.Env = append(os.Environ(), "AGENTRT_CLI_CHILD=1")
				var o, e strings.Builder
				c.Stdout, c.Stderr = &o, &e
				go func() {
					<-start
					began := time.Now()
					err := c.Run()
					code := 0
					var ee *exec.ExitError
					if errors.As(err, &ee) {
						code = ee.ExitCode()
					} else if err != nil {
						code = -1
						e.WriteString(err.Error())
					}
					results <- ended{code, o.String(), e.String(), time.Since(began)}
				}()
			}
			close(start)
			var got []ended
			for range 2 {
				select {
				case r := <-results:
					got = append(got, r)
				case <-time.After(2 * time.Minute):
					t.Fatal("a resume did not end within 2 minutes")
				}
			}
			var proceeded, refused []ended
			for _, r := range got {
				if strings.Contains(r.stdout, `"kind"`) {
					proceeded = append(proceeded, r)
				} else {
					refused = append(refused, r)
				}
			}
			if len(proceeded) != 1 || len(refused) != 1 {
				t.Fatalf("%d resumes proceeded and %d refused, want one each:\n%+v", len(proceeded), len(refused), got)
			}
			p, r := proceeded[0], refused[0]
			if kind := member(decode(t, p.stdout), "kind").Str(); p.code != 0 || kind != "winner" {
				t.Errorf("the resume that proceeded: exit %d, kind %q\n%s", p.code, kind, p.stderr)
			}
			if r.code == 0 {
				t.Errorf("the refused resume exited 0:\n%s", r.stderr)
			}
			for _, part := range tt.refusal {
				if !strings.Contains(r.stderr, part) {
					t.Errorf("the refusal does not say %q:\n%s", part, r.stderr)
				}
			}
			if r.took > 20*time.Second {
				t.Errorf("the refusal took %v; it must not wait for the holder", r.took)
			}
			// The journal holds one spawn per node and one settlement.
			checkOneSpawnEach(t, "", records())
			t.Logf("proceeded (exit %d, %v); refused (exit %d, %v):\n%s", p.code, p.took, r.code, r.took, r.stderr)
		})
	}
}

// slicesContainsKind reports whether recs hold a record of kind.
func slicesContainsKind(recs []supervise.Record, kind string) bool {
	for _, r := range recs {
		if r.Kind == kind {
			return true
		}
	}
	return false
}
