package cli_test

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/supervise"
)

// A supervisor SIGKILLed while a worker's kernel run is in flight
// leaves that run leased by a dead process. Once its lease lapsed,
// runs list and runs show say so (a lapsed lease with no end recorded,
// leaseLapsed in --json), not a plain status; and the resumed
// supervised run, settling that node in doubt, records the run's end as
// its judge: interrupted, reason abandoned, naming the supervised run
// and node, its usage unknown, never delivered — after which it no
// longer reads as a lapsed lease. With the journal in the run dir on
// SQLite, and in a PostgreSQL store.
func TestKilledWorkersKernelRunIsClosedByItsResumedJudge(t *testing.T) {
	if testing.Short() {
		t.Skip("runs agentrt in a child process")
	}
	for _, v := range []struct {
		name    string
		inStore bool
		backend int
	}{{"file journal sqlite", false, 0}, {"postgres journal in store", true, 1}} {
		t.Run(v.name, func(t *testing.T) {
			backend := graphStoreBackends[v.backend]
			storeFlags := backend.flags(t)
			st := backend.open(t, storeFlags)
			defer st.Close()

			var killed atomic.Bool
			var hung atomic.Int64
			e := newCostEndpoint(t, "alpha", "beta")
			e.reply = func(w http.ResponseWriter, r *http.Request, worker string, _ int) bool {
				if worker == "beta" && !killed.Load() {
					hung.Add(1)
					hang(w, r)
					return true
				}
				return false
			}
			t.Setenv("OPENAI_API_KEY", "sk-test-cost-7f2")
			e.Start()
			mgr := writeFile(t, "manager.json", `{"name": "manager", "harness": "cli-base", "model": {"default": "gpt-manager"},
		"tools": {"agent_runtime_coordination_spawn_worker": true, "agent_runtime_coordination_await_event": true}}`)
			wrk := writeFile(t, "writer.json", `{"name": "writer", "harness": "cli-base", "model": {"default": "gpt-writer"}}`)
			dir := t.TempDir()
			args := append([]string{"supervise", mgr, "--worker", wrk, "--task", "write the notes", "--provider", "openai",
				"--base-url", e.URL + "/v1/", "--expect", "DONE", "--run-id", "aband", "--workspace", t.TempDir(), "--run-dir", dir,
				"--budget-tokens", "5000", "--worker-tokens", "1000", "--iterations", "4"}, storeFlags...)
			if v.inStore {
				args = append(args, "--journal-in-store", "--lease", "1s")
			}
			child := exec.Command(os.Args[0], args...)
			child.Env = append(os.Environ(), "AGENTRT_CLI_CHILD=1")
			var stderr strings.Builder
			child.Stderr = &stderr
			if err := child.Start(); err != nil {
				t.Fatal(err)
			}
			records := func() []supervise.Record {
				if v.inStore {
					return storeRecords(st, "aband")
				}
				recs, _, _ := supervise.ReadRunDir(context.Background(), dir)
				return recs
			}
			// beta's execution: bound, its request hanging at the endpoint.
			var beta string
			for deadline := time.Now().Add(2 * time.Minute); beta == ""; time.Sleep(20 * time.Millisecond) {
				settled, bound := 0, map[supervise.NodeID]string{}
				for _, r := range records() {
					switch r.Kind {
					case supervise.KindSettled:
						settled++
					case supervise.KindExecutionBound:
						bound[r.Node] = r.Execution
					}
				}
				if settled == 1 && len(bound) == 2 && hung.Load() > 0 {
					beta = bound["aband:s2"]
				}
				if time.Now().After(deadline) {
					child.Process.Kill()
					child.Wait()
					t.Fatalf("the child never settled alpha with beta in flight; stderr:\n%s", stderr.String())
				}
			}
			if err := child.Process.Kill(); err != nil { // SIGKILL
				t.Fatal(err)
			}
			_ = child.Wait()
			killed.Store(true)

			// The store reads beta's run interrupted once its lease lapsed
			// (kernel.DefaultLeaseTTL): wait for that, as a reader would.
			for deadline := time.Now().Add(kernel.DefaultLeaseTTL + time.Minute); ; time.Sleep(200 * time.Millisecond) {
				r, err := st.GetRun(context.Background(), beta)
				if err != nil {
					t.Fatal(err)
				}
				if r.Status.Terminal() {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("beta's run %s is still %s, its lease until %s", beta, r.Status, r.LeaseUntil)
				}
			}
			shown, _, _ := run(t, "", append([]string{"runs", "show", beta, "--json"}, storeFlags...)...)
			lapsed := member(decode(t, shown), "leaseLapsed")
			if member(lapsed, "at").Str() == "" || member(lapsed, "owner").Str() == "" {
				t.Errorf("runs show --json of the killed worker's run says no lapsed lease:\n%s", shown)
			}
			human, _, _ := run(t, "", append([]string{"runs", "show", beta}, storeFlags...)...)
			list, _, _ := run(t, "", append([]string{"runs", "list"}, storeFlags...)...)
			if !strings.Contains(human, "lapsed at") || !strings.Contains(list, "lapsed") {
				t.Errorf("runs show / runs list do not say the lease lapsed:\n%s\n%s", human, list)
			}

			out, errOut, code := resumeOnceLeaseLapsed(t, append(args, "--resume", "--json")...)
			if strings.TrimSpace(out) == "" {
				t.Fatalf("resume: no result, exit %d\n%s", code, errOut)
			}
			shown, showErr, scode := run(t, "", append([]string{"runs", "show", beta, "--json"}, storeFlags...)...)
			if scode != 0 {
				t.Fatalf("runs show %s: exit %d\n%s%s", beta, scode, shown, showErr)
			}
			got := decode(t, shown)
			term := member(member(got, "record"), "terminal")
			human, _, _ = run(t, "", append([]string{"runs", "show", beta}, storeFlags...)...)
			t.Logf("after the resume, runs show %s:\n%s", beta, human)
			if member(got, "status").Str() != "interrupted" || member(term, "reason").Str() != kernel.ReasonAbandoned ||
				!strings.Contains(member(term, "detail").Str(), "supervise run aband") || !strings.Contains(member(term, "detail").Str(), "aband:s2") {
				t.Errorf("the resumed judge did not record the killed worker's run abandoned: status %s, terminal %s",
					member(got, "status").Str(), shown)
			}
			if _, ok := got.Get("leaseLapsed"); ok {
				t.Errorf("a run whose end is recorded still says its lease lapsed:\n%s", shown)
			}
			if d, ok := member(got, "record").Get("delivered"); ok {
				t.Errorf("the abandoned run says delivered %s", canonjson.Marshal(d))
			}
		})
	}
}
