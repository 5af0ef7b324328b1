package cli

import (
	"testing"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/supervise"
)

// A run cancelled through its context (Ctrl-C) has no operation id: the
// --json result leaves operationId out (spec §3.6 cancelled{source,
// cancellationReason, operationId?}) rather than print "". One
// cancelled by an operation names it.
func TestSupervisedValueCancellationOperationIDOptional(t *testing.T) {
	for _, tc := range []struct {
		op     string
		wantOp bool
	}{{"", false}, {"stop-all", true}} {
		res := supervise.SupervisedResult{RunID: "r", Status: supervise.StatusNoWinner, Reason: supervise.ReasonCancelled,
			Cancellation: &supervise.Cancellation{Source: "context", Reason: "interrupted", OperationID: tc.op}}
		c, ok := supervisedValue(res, "").Get("cancellation")
		if !ok {
			t.Fatalf("no cancellation member")
		}
		got, has := c.Get("operationId")
		if has != tc.wantOp || (has && got.Str() != tc.op) {
			t.Errorf("operation %q: operationId %v present %v, want present %v", tc.op, got, has, tc.wantOp)
		}
	}
}

// The --json result carries what §3.6 names and a TypeScript peer reads:
// the winner's verdict?, a spend gap's label?, and a cancellation's
// reason as cancellationReason.
func TestSupervisedValueSpecMembers(t *testing.T) {
	score := 0.75
	res := supervise.SupervisedResult{RunID: "r", Status: supervise.StatusWinner,
		Winner:    &supervise.Winner{Node: "r:s1", Text: "ok", OutRef: "sha256:00", Verdict: &kernel.Verdict{Passed: true, Score: &score}},
		SpendGaps: []supervise.SpendGap{{ID: "r:s2", Label: "critic", Kind: supervise.GapNeverSettled, Channels: []string{"tokens"}}}}
	cancelled := supervise.SupervisedResult{RunID: "r", Status: supervise.StatusNoWinner, Reason: supervise.ReasonCancelled,
		Cancellation: &supervise.Cancellation{Source: "operator", Reason: "enough", OperationID: "op1"}}
	for _, tc := range []struct {
		name    string
		res     supervise.SupervisedResult
		pointer string
		want    string
	}{
		{"winner verdict", res, "/winner/verdict", `{"passed":true,"score":0.75,"valid":true}`},
		{"gap label", res, "/spendGaps/0/label", `"critic"`},
		{"cancellation reason", cancelled, "/cancellation/cancellationReason", `"enough"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, ok := canonjson.Resolve(supervisedValue(tc.res, ""), tc.pointer)
			if !ok {
				t.Fatalf("no %s in %s", tc.pointer, canonjson.Marshal(supervisedValue(tc.res, "")))
			}
			if got := string(canonjson.Marshal(v)); got != tc.want {
				t.Errorf("%s = %s, want %s", tc.pointer, got, tc.want)
			}
		})
	}
}
