package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/canonjson"
)

// RG-07, RG-08, RG-11 through agentrt supervise --seats: the worker
// profile has seats, its first subscription refuses for quota, and the
// worker goes on at its next stage as the same node, delivering the
// second stage's note. A --seats file that cannot serve some stage of
// some worker is refused before anything runs (PRF-07), naming both.
func TestSuperviseWorkerSeats(t *testing.T) {
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

	out, errOut, code := run(t, "", "supervise", supManager, "--task", "write a note", "--worker", worker, "--seats", seats,
		"--expect", "release note", "--run-id", "seated", "--workspace", dir, "--db", db, "--json")
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	v := decode(t, out)
	if got := member(member(v, "winner"), "text").Str(); got != "a release note" {
		t.Errorf("winner %q; want the second stage's note: %s", got, out)
	}
	if workers := member(v, "workers").Items(); len(workers) != 1 || member(workers[0], "state").Str() != "done" {
		t.Errorf("workers %s; want the one worker, done, the quota refusal did not multiply", canonjson.Marshal(member(v, "workers")))
	}

	gap := write("gap.json", `{"accounts":{"acct-alpha":{"provider":"scripted","script":"alpha.json"}}}`)
	_, errOut, code = run(t, "", "supervise", supManager, "--task", "write a note", "--worker", worker, "--seats", gap,
		"--run-id", "gap", "--workspace", dir, "--db", db)
	if code != 2 || !strings.Contains(errOut, `worker "writer", stage 1`) {
		t.Errorf("a seats file without stage 1: exit %d, stderr %q; want 2 naming the worker and stage", code, errOut)
	}
}
