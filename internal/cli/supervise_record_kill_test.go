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
	"github.com/agentrt/agentrt/supervise"
)

// tokensOf is the tokens member of a spend or total, and whether it is
// known (a number, not null or absent).
func tokensOf(v canonjson.Value) (int64, bool) {
	tk := member(v, "tokens")
	if tk.Kind() != canonjson.Number {
		return 0, false
	}
	return int64(tk.Float()), true
}

// A supervised run SIGKILLed while its second worker's request hangs at
// the endpoint (its first worker settled) and resumed to its end: the
// store's record reconciles with the resumed result — its outcome is
// the result's, its known workers' spend plus the manager's adds up to
// outcome.spent, every named execution is a kernel run in the store
// whose ledger holds that worker's spend, and the killed worker's
// kernel run does not stay "running" for ever. Tried with the journal
// in the run dir and in the store (SQLite and PostgreSQL).
func TestSupervisedRunRecordReconcilesAfterSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("runs agentrt in a child process")
	}
	type variant struct {
		name    string
		inStore bool
		backend int
	}
	for _, v := range []variant{{"file journal", false, 0}, {"sqlite journal in store", true, 0}, {"postgres journal in store", true, 1}} {
		t.Run(v.name, func(t *testing.T) {
			backend := graphStoreBackends[v.backend]
			storeFlags := backend.flags(t)
			st := backend.open(t, storeFlags)
			defer st.Close()

			var killed atomic.Bool
			e := newCostEndpoint(t, "alpha", "beta")
			e.reply = func(w http.ResponseWriter, r *http.Request, worker string, _ int) bool {
				if worker == "beta" && !killed.Load() {
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
				"--base-url", e.URL + "/v1/", "--expect", "DONE", "--run-id", "costs", "--workspace", t.TempDir(), "--run-dir", dir,
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
					return storeRecords(st, "costs")
				}
				recs, _, _ := supervise.ReadRunDir(context.Background(), dir)
				return recs
			}
			ready := func() bool {
				var settled, bound int
				for _, r := range records() {
					switch r.Kind {
					case supervise.KindSettled:
						settled++
					case supervise.KindExecutionBound:
						bound++
					}
				}
				return settled == 1 && bound == 2
			}
			for deadline := time.Now().Add(2 * time.Minute); !ready(); time.Sleep(20 * time.Millisecond) {
				if time.Now().After(deadline) {
					child.Process.Kill()
					child.Wait()
					t.Fatalf("the child never settled alpha with beta bound; stderr:\n%s", stderr.String())
				}
			}
			// beta's request is at the endpoint, hanging.
			time.Sleep(200 * time.Millisecond)
			if err := child.Process.Kill(); err != nil { // SIGKILL
				t.Fatal(err)
			}
			_ = child.Wait()
			killed.Store(true)

			out, errOut, code := resumeOnceLeaseLapsed(t, append(args, "--resume", "--json")...)
			if strings.TrimSpace(out) == "" {
				t.Fatalf("resume: no result, exit %d\n%s", code, errOut)
			}
			res := decode(t, out)
			_ = code

			shown, showErr, scode := run(t, "", append([]string{"runs", "show", "costs", "--json"}, storeFlags...)...)
			if scode != 0 {
				t.Fatalf("runs show costs: exit %d\n%s%s", scode, shown, showErr)
			}
			stored := decode(t, shown)
			rec := member(stored, "record")
			if v.inStore {
				rec = member(rec, "record")
			}
			outcome := member(rec, "outcome")
			e.mu.Lock()
			reported, mgrReported := e.reportedIn+e.reportedOut, e.managerIn+e.managerOut
			e.mu.Unlock()
			// A journal total carries what was charged, tokensKnown says
			// whether it is all reported.
			charged := func(v canonjson.Value) int64 { return int64(member(v, "tokens").Float()) }
			if got := charged(member(outcome, "spent")); got != int64(member(member(member(res, "spent"), "charged"), "tokens").Float()) {
				t.Errorf("recorded spent %d tokens, the result charged %s", got, canonjson.Marshal(member(res, "spent")))
			}
			if got := charged(member(outcome, "driverInference")); got != mgrReported {
				t.Errorf("recorded manager tokens %d, the endpoint reported %d for the manager", got, mgrReported)
			}
			sum, ceilings := charged(member(outcome, "driverInference")), int64(0)
			for _, w := range member(rec, "workers").Items() {
				id, execution := member(w, "id").Str(), member(w, "execution").Str()
				wt, known := tokensOf(member(w, "spent"))
				if known {
					sum += wt
				} else {
					ceilings += 1000 // --worker-tokens
				}
				if execution == "" {
					t.Errorf("worker %s names no execution: %s", id, shown)
					continue
				}
				wout, werr, code := run(t, "", append([]string{"runs", "show", execution, "--json"}, storeFlags...)...)
				if code != 0 {
					t.Errorf("worker %s's execution %s: exit %d\n%s%s", id, execution, code, wout, werr)
					continue
				}
				wrun := decode(t, wout)
				human, _, _ := run(t, "", append([]string{"runs", "show", execution}, storeFlags...)...)
				t.Logf("worker %s (%s, spent %s): run %s status %s spend %s\n%s", id, member(w, "state").Str(),
					canonjson.Marshal(member(w, "spent")), execution, member(wrun, "status").Str(), canonjson.Marshal(member(wrun, "spend")), human)
				if got, want := member(member(wrun, "record"), "judgedBy").Str(), "supervise run costs, node "+id; got != want {
					t.Errorf("worker %s's run %s (%s) judgedBy %q, want %q", id, execution, member(wrun, "status").Str(), got, want)
				}
				if known {
					spend := member(wrun, "spend")
					in, o := member(spend, "inputTokens"), member(spend, "outputTokens")
					if in.Kind() != canonjson.Number || o.Kind() != canonjson.Number || int64(in.Float()+o.Float()) != wt {
						t.Errorf("worker %s's run %s ledgers %s, the record says it spent %d tokens", id, execution, canonjson.Marshal(spend), wt)
					}
				}
			}
			if sum != reported {
				t.Errorf("the record's settled workers and manager add up to %d tokens, the endpoint reported %d", sum, reported)
			}
			if got := charged(member(outcome, "spent")); got != sum+ceilings {
				t.Errorf("the record's outcome charged %d tokens, its workers and manager %d + ceilings %d", got, sum, ceilings)
			}
			list, _, _ := run(t, "", append([]string{"runs", "list"}, storeFlags...)...)
			human, _, _ := run(t, "", append([]string{"runs", "show", "costs"}, storeFlags...)...)
			t.Logf("runs list:\n%s\nruns show costs:\n%s", list, human)
			for line := range strings.Lines(list) {
				if f := strings.Fields(line); len(f) > 1 && f[0] == "costs" && f[1] != "completed" {
					t.Errorf("runs list says the ended run (a winner) is %q:\n%s", f[1], list)
				}
			}
			if strings.Contains(list+human, "unreadable") {
				t.Errorf("the run's record is unreadable:\n%s\n%s", list, human)
			}
		})
	}
}
