package cli_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/ledger"
)

// One run says one thing about a stage refused at create (issue 15):
// agentrt run --seats --json, whose first stage's account refuses the
// create for quota before admitting anything, prints as the run's usage
// the sum of what its stages' records say; agentrt runs show of the
// refused stage's run says it spent zero, known (nothing was dispatched
// under it), not unknown. Before, the summary counted the stage as zero
// while its record said unknown.
func TestRunSeatsUsageOfAStageRefusedAtCreate(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("alpha.json", `{"turns":[{"repeat":true,"steps":[{"text":"never"}]}],"accounts":{"acct-alpha":{"exhausted":true}}}`)
	write("bravo.json", `{"turns":[{"repeat":true,"steps":[{"text":"a release note"},{"usage":{"inputTokens":5,"outputTokens":3},"mode":"delta"}]}],"accounts":{"acct-bravo":{}}}`)
	seats := write("seats.json", `{"accounts":{"acct-alpha":{"provider":"scripted","script":"alpha.json"}},
		"stages":{"1":{"provider":"scripted","script":"bravo.json"}}}`)
	prof := write("writer.json", seatedProfile)
	db := filepath.Join(dir, "runs.db")

	out, errOut, code := runWithin(t, time.Minute, "run", prof, "--seats", seats, "--task", "write a note", "--db", db, "--json", "--quiet")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	v := decode(t, out)
	stages := member(v, "stages").Items()
	if len(stages) != 2 || member(stages[0], "outcome").Str() != kernel.StageQuotaRefused || member(stages[0], "continuity").Str() != "" {
		t.Fatalf("stages %s; want a refusal at create, then the second stage", canonjson.Marshal(member(v, "stages")))
	}
	spend := func(stage canonjson.Value) ledger.Usage {
		t.Helper()
		out, errOut, code := runWithin(t, time.Minute, "runs", "show", member(stage, "runId").Str(), "--db", db, "--json")
		if code != 0 {
			t.Fatalf("runs show: exit %d\n%s\n%s", code, out, errOut)
		}
		shown := decode(t, out)
		u, err := kernel.ParseUsage(member(shown, "spend"))
		if err != nil {
			t.Fatal(err)
		}
		recorded, err := kernel.ParseUsage(member(member(shown, "record"), "usage"))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(u, recorded); diff != "" {
			t.Errorf("run %s: its spend and its record's usage differ (-spend +record):\n%s", member(stage, "runId").Str(), diff)
		}
		return u
	}
	refused, ran := spend(stages[0]), spend(stages[1])
	if diff := cmp.Diff(ledger.NoUsage(), refused); diff != "" {
		t.Errorf("runs show of the stage refused at create (-want +got):\n%s", diff)
	}
	total, err := kernel.ParseUsage(member(v, "usage"))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(refused.Plus(ran), total); diff != "" {
		t.Errorf("the run's usage is not the sum of its stages' records (-want +got):\n%s", diff)
	}
	if !total.InputTokens.Known() || total.InputTokens.Value != 5 {
		t.Errorf("the run's input %s; want exactly the second stage's 5", total.InputTokens)
	}
}
