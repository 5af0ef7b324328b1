package cli_test

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentrt/agentrt/supervise"
)

// A worker steered while its first turn runs (agentrt steer from
// another process) runs a second turn as kernel run "<execution>.1":
// the store holds both turns' runs, each judged by the supervised run,
// their ledgers add up to the worker's recorded spend, and `agentrt runs
// show` of the supervised run names every run a worker ran as, not
// only its first.
func TestSteeredWorkerRunsReconcileWithTheRecord(t *testing.T) {
	if testing.Short() {
		t.Skip("runs agentrt in a child process")
	}
	db := filepath.Join(t.TempDir(), "runs.db")
	arrived, gate := make(chan struct{}), make(chan struct{})
	var once sync.Once
	e := newCostEndpoint(t, "alpha", "beta")
	e.reply = func(w http.ResponseWriter, r *http.Request, worker string, _ int) bool {
		if worker != "beta" {
			return false
		}
		first := false
		once.Do(func() { first = true; close(arrived) })
		if first {
			select {
			case <-gate:
			case <-r.Context().Done():
			}
		}
		return false
	}
	t.Setenv("OPENAI_API_KEY", "sk-test-cost-7f2")
	e.Start()
	mgr := writeFile(t, "manager.json", `{"name": "manager", "harness": "cli-base", "model": {"default": "gpt-manager"},
		"tools": {"agent_runtime_coordination_spawn_worker": true, "agent_runtime_coordination_await_event": true}}`)
	wrk := writeFile(t, "writer.json", `{"name": "writer", "harness": "cli-base", "model": {"default": "gpt-writer"}}`)
	dir := t.TempDir()
	child := exec.Command(os.Args[0], "supervise", mgr, "--worker", wrk, "--task", "write the notes", "--provider", "openai",
		"--base-url", e.URL+"/v1/", "--expect", "DONE", "--run-id", "costs", "--workspace", t.TempDir(), "--run-dir", dir,
		"--budget-tokens", "5000", "--worker-tokens", "1000", "--iterations", "4", "--db", db, "--json")
	child.Env = append(os.Environ(), "AGENTRT_CLI_CHILD=1")
	var stdout, stderr strings.Builder
	child.Stdout, child.Stderr = &stdout, &stderr
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-arrived:
	case <-time.After(2 * time.Minute):
		child.Process.Kill()
		child.Wait()
		t.Fatalf("beta never called the endpoint; stderr:\n%s", stderr.String())
	}
	// The worker takes the steer when its turn ends: the turn is let go
	// once the request is journaled.
	type steered struct {
		out, errOut string
		code        int
	}
	steerDone := make(chan steered, 1)
	go func() {
		out, errOut, code := run(t, "", "steer", dir, "beta", "also add a summary line", "--wait", "60s")
		steerDone <- steered{out, errOut, code}
	}()
	requested := func() bool {
		recs, _, _ := supervise.ReadRunDir(context.Background(), dir)
		for _, r := range recs {
			if r.Kind == supervise.KindSteerRequested {
				return true
			}
		}
		return false
	}
	for deadline := time.Now().Add(time.Minute); !requested() && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
	}
	close(gate)
	if s := <-steerDone; s.code != 0 {
		t.Errorf("steer: exit %d\n%s%s", s.code, s.out, s.errOut)
	}
	done := make(chan error, 1)
	go func() { done <- child.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("supervise: %v\n%s%s", err, stdout.String(), stderr.String())
		}
	case <-time.After(2 * time.Minute):
		child.Process.Kill()
		<-done
		t.Fatalf("supervise never ended; stderr:\n%s", stderr.String())
	}

	shown, showErr, code := run(t, "", "runs", "show", "costs", "--db", db, "--json")
	if code != 0 {
		t.Fatalf("runs show costs: exit %d\n%s%s", code, shown, showErr)
	}
	human, _, _ := run(t, "", "runs", "show", "costs", "--db", db)
	for _, w := range member(member(decode(t, shown), "record"), "workers").Items() {
		id, execution := member(w, "id").Str(), member(w, "execution").Str()
		recorded, known := tokensOf(member(w, "spent"))
		if !known {
			t.Errorf("worker %s's tokens unknown: %s", id, shown)
			continue
		}
		var sum int64
		var turns []string
		for n := 0; n < 10; n++ {
			rid := execution
			if n > 0 {
				rid = execution + "." + string(rune('0'+n))
			}
			wout, _, code := run(t, "", "runs", "show", rid, "--db", db, "--json")
			if code != 0 {
				break
			}
			turns = append(turns, rid)
			wrun := decode(t, wout)
			if got, want := member(member(wrun, "record"), "judgedBy").Str(), "supervise run costs, node "+id; got != want {
				t.Errorf("run %s judgedBy %q, want %q", rid, got, want)
			}
			spend := member(wrun, "spend")
			sum += int64(member(spend, "inputTokens").Float() + member(spend, "outputTokens").Float())
			if !strings.Contains(human, rid) {
				t.Errorf("runs show costs does not name worker %s's run %s:\n%s", id, rid, human)
			}
		}
		t.Logf("worker %s: runs %v, ledgers %d tokens, recorded %d", id, turns, sum, recorded)
		if sum != recorded {
			t.Errorf("worker %s's runs %v ledger %d tokens, the record says %d", id, turns, sum, recorded)
		}
		if member(w, "label").Str() == "beta" && len(turns) != 2 {
			t.Errorf("beta ran as %v, want its first turn and its steered one", turns)
		}
	}
}
