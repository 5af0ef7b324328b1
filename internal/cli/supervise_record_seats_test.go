package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/canonjson"
)

// A seated worker (--seats) whose first stage is refused for quota and
// whose second delivers: the record names its execution, the seated
// run, and runs show of it leads to every stage's kernel run, each
// judged by the supervised run; the stages' ledgers add up to the
// worker's recorded spend.
func TestSeatedWorkerRunsReconcileWithTheRecord(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("alpha.json", `{"turns":[{"repeat":true,"steps":[{"text":"never"}]}],"accounts":{"acct-alpha":{"exhausted":true}}}`)
	write("bravo.json", `{"turns":[{"repeat":true,"steps":[{"text":"a release note"},{"usage":{"inputTokens":4,"outputTokens":2,"cost":0.001},"mode":"delta"}]}],"accounts":{"acct-bravo":{}}}`)
	seats := write("seats.json", `{"accounts":{"acct-alpha":{"provider":"scripted","script":"alpha.json"}},
		"stages":{"1":{"provider":"scripted","script":"bravo.json"}}}`)
	worker := write("writer.json", seatedProfile)
	db := filepath.Join(dir, "runs.db")
	if out, errOut, code := run(t, "", "supervise", supManager, "--task", "write a note", "--worker", worker, "--seats", seats,
		"--expect", "release note", "--run-id", "seated", "--workspace", dir, "--db", db, "--json"); code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	shown, showErr, code := run(t, "", "runs", "show", "seated", "--db", db, "--json")
	if code != 0 {
		t.Fatalf("runs show seated: exit %d\n%s%s", code, shown, showErr)
	}
	workers := member(member(decode(t, shown), "record"), "workers").Items()
	if len(workers) != 1 {
		t.Fatalf("%d recorded workers, want 1: %s", len(workers), shown)
	}
	w := workers[0]
	id, execution := member(w, "id").Str(), member(w, "execution").Str()
	xout, xerr, code := run(t, "", "runs", "show", execution, "--db", db, "--json")
	if code != 0 {
		t.Fatalf("the worker's execution %q: exit %d\n%s%s", execution, code, xout, xerr)
	}
	xrun := decode(t, xout)
	human, _, _ := run(t, "", "runs", "show", execution, "--db", db)
	t.Logf("execution %s: %s\n%s", execution, xout, human)
	stages := member(member(xrun, "record"), "stages").Items()
	if len(stages) != 2 {
		t.Fatalf("the seated run names %d stages, want 2: %s", len(stages), xout)
	}
	var sum int64
	for _, s := range stages {
		rid := member(s, "runId").Str()
		sout, serr, code := run(t, "", "runs", "show", rid, "--db", db, "--json")
		if code != 0 {
			t.Errorf("stage run %q: exit %d\n%s%s", rid, code, sout, serr)
			continue
		}
		srun := decode(t, sout)
		if got, want := member(member(srun, "record"), "judgedBy").Str(), "supervise run seated, node "+id; got != want {
			t.Errorf("stage run %s judgedBy %q, want %q: %s", rid, got, want, sout)
		}
		spend := member(srun, "spend")
		if in := member(spend, "inputTokens"); in.Kind() == canonjson.Number {
			sum += int64(in.Float() + member(spend, "outputTokens").Float())
		}
	}
	if got, known := tokensOf(member(w, "spent")); !known || got != sum {
		t.Errorf("the worker's recorded spend %s, its stages ledger %d tokens", canonjson.Marshal(member(w, "spent")), sum)
	}
	if !strings.Contains(human, "stage") {
		t.Errorf("runs show %s does not name its stages:\n%s", execution, human)
	}
}
