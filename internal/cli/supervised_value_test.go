package cli

import (
	"testing"

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
