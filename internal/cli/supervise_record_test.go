package cli_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/canonjson"
)

// Issue 13: the store's runs reconcile with a supervised run's result.
// After `agentrt supervise` on a real HTTP endpoint that reports usage,
// `agentrt runs show RUN-ID` finds the supervised run (its own record,
// or its store journal's run with --journal-in-store) with the result's
// outcome and spend; each worker's kernel run names the run as the judge
// of its delivery instead of claiming "not delivered, no check was
// given"; and the workers' runs' tokens plus the manager's add up to the
// run's spent tokens, which equal what the endpoint reported.
func TestSupervisedRunRecordReconcilesWithTheStore(t *testing.T) {
	for _, tc := range []struct {
		name, kind string
		extra      []string
	}{
		{"file journal", "supervise", nil},
		{"journal in store", "supervise-journal", []string{"--journal-in-store"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := filepath.Join(t.TempDir(), "runs.db")
			e := newCostEndpoint(t, "alpha", "beta")
			res, out, code := superviseOverHTTP(t, e, db, tc.extra...)
			if code != 0 {
				t.Fatalf("exit %d, want 0:\n%s", code, out)
			}
			e.mu.Lock()
			total, mgrTokens := e.reportedIn+e.reportedOut, e.managerIn+e.managerOut
			e.mu.Unlock()

			shown, errOut, code := run(t, "", "runs", "show", "costs", "--db", db, "--json")
			if code != 0 {
				t.Fatalf("runs show costs: exit %d\n%s%s", code, shown, errOut)
			}
			recorded := decode(t, shown)
			if got := member(recorded, "kind").Str(); got != tc.kind {
				t.Errorf("kind %q, want %q", got, tc.kind)
			}
			rec := member(recorded, "record")
			if tc.kind == "supervise-journal" {
				rec = member(rec, "record")
			} else if got := member(recorded, "status").Str(); got != "completed" {
				t.Errorf("status %q, want completed (a winner)", got)
			}
			outcome := member(rec, "outcome")
			if got := member(outcome, "status").Str(); got != "winner" {
				t.Errorf("recorded status %q, want winner: %s", got, shown)
			}
			if got := int64(member(member(outcome, "spent"), "tokens").Float()); got != total || got != int64(member(member(res, "spent"), "tokens").Float()) {
				t.Errorf("recorded spent tokens %d, want the %d reported and the result's: %s", got, total, shown)
			}
			if got := int64(member(member(outcome, "driverInference"), "tokens").Float()); got != mgrTokens {
				t.Errorf("recorded manager tokens %d, want %d", got, mgrTokens)
			}

			workers := member(rec, "workers").Items()
			if len(workers) != 2 {
				t.Fatalf("%d recorded workers, want 2: %s", len(workers), shown)
			}
			sum := mgrTokens
			for _, w := range workers {
				id, execution := member(w, "id").Str(), member(w, "execution").Str()
				if !member(w, "delivered").Bool() || execution == "" {
					t.Errorf("worker %s: delivered %v, execution %q: %s", id, member(w, "delivered").Bool(), execution, shown)
					continue
				}
				wout, werr, code := run(t, "", "runs", "show", execution, "--db", db, "--json")
				if code != 0 {
					t.Fatalf("runs show %s: exit %d\n%s%s", execution, code, wout, werr)
				}
				wrun := decode(t, wout)
				wrec := member(wrun, "record")
				if got, want := member(wrec, "judgedBy").Str(), fmt.Sprintf("supervise run costs, node %s", id); got != want {
					t.Errorf("worker run %s judgedBy %q, want %q", execution, got, want)
				}
				for _, absent := range []string{"delivered", "checkError"} {
					if _, ok := wrec.Get(absent); ok {
						t.Errorf("worker run %s records %q, but its delivery is the supervised run's to decide: %s", execution, absent, wout)
					}
				}
				spend := member(wrun, "spend")
				in, outT := member(spend, "inputTokens"), member(spend, "outputTokens")
				if in.Kind() != canonjson.Number || outT.Kind() != canonjson.Number {
					t.Errorf("worker run %s spend %s: tokens not known", execution, wout)
					continue
				}
				sum += int64(in.Float() + outT.Float())
			}
			if sum != total {
				t.Errorf("the workers' runs and the manager add up to %d tokens, the run spent %d", sum, total)
			}

			human, _, code := run(t, "", "runs", "show", "costs", "--db", db)
			if code != 0 {
				t.Fatalf("runs show costs: exit %d\n%s", code, human)
			}
			for _, want := range []string{"supervised run costs  winner", "runs of   costs:s1:", "manager   manager"} {
				if !strings.Contains(human, want) {
					t.Errorf("runs show lacks %q:\n%s", want, human)
				}
			}
			list, _, _ := run(t, "", "runs", "list", "--db", db)
			if !strings.Contains(list, "2 worker(s), winner costs:s") {
				t.Errorf("runs list does not describe the supervised run:\n%s", list)
			}
		})
	}
}
