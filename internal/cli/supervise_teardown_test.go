package cli

import (
	"strings"
	"testing"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/supervise"
)

// agentrt supervise names every worker whose teardown is unconfirmed
// (§3.6 teardownUnconfirmed{id, label, runtime, status}, behaviour 51):
// a line for people, and an always-present array under --json.
func TestSupervisedResultNamesUnconfirmedTeardowns(t *testing.T) {
	res := supervise.SupervisedResult{RunID: "sup-1", Status: supervise.StatusNoWinner, Reason: supervise.ReasonAllChildrenDown,
		TeardownUnconfirmed: []supervise.UnconfirmedTeardown{{ID: "sup-1:s1", Label: "builder", Runtime: supervise.RuntimeProvider,
			Status: supervise.StateDone, Detail: "the box did not answer the destroy"}}}
	var text strings.Builder
	printSupervised(&text, res, "/runs/sup-1")
	if want := "  teardown  sup-1:s1 builder (done) NOT confirmed, its slot stays charged: the box did not answer the destroy\n"; !strings.Contains(text.String(), want) {
		t.Errorf("text output lacks %q:\n%s", want, text.String())
	}
	v := supervisedValue(res, "/runs/sup-1")
	got, _ := v.Get("teardownUnconfirmed")
	want, err := canonjson.Decode([]byte(`[{"id":"sup-1:s1","label":"builder","runtime":"provider","status":"done","detail":"the box did not answer the destroy"}]`))
	if err != nil {
		t.Fatal(err)
	}
	if !canonjson.Equal(want, got) {
		t.Errorf("--json teardownUnconfirmed = %v, want %v", got, want)
	}
	none, _ := supervisedValue(supervise.SupervisedResult{RunID: "sup-2", Status: supervise.StatusNoWinner}, "").Get("teardownUnconfirmed")
	if none.Kind() != canonjson.Array || none.Len() != 0 {
		t.Errorf("no unconfirmed teardown: %v", none)
	}
}
