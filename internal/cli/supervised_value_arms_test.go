package cli

import (
	"testing"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/supervise"
)

func get(v canonjson.Value, name string) canonjson.Value {
	m, _ := v.Get(name)
	return m
}

// The no-winner arms: tree, downCount and spentTotal on every arm; a
// cancelled run names source, cancellationReason and operationId? at the
// top, as §3.6's cancelled arm does; error only on driver-failed.
func TestSupervisedValueNoWinnerArms(t *testing.T) {
	cancelled := supervise.SupervisedResult{RunID: "r", Status: supervise.StatusNoWinner, Reason: supervise.ReasonCancelled, DownCount: 1,
		Cancellation: &supervise.Cancellation{Source: "operator", Reason: "enough", OperationID: "op1"},
		Spent:        supervise.SpentTotal{Tokens: 10, Iterations: 1, TokensKnown: true, IterationsKnown: true, USDKnown: true}}
	v := supervisedValue(cancelled, "")
	if got := get(v, "kind").Str(); got != "no-winner" {
		t.Errorf("kind %q", got)
	}
	for name, want := range map[string]string{"source": "operator", "cancellationReason": "enough", "operationId": "op1"} {
		if got := get(v, name).Str(); got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
	if got := get(v, "downCount"); got.Kind() != canonjson.Number || got.Float() != 1 {
		t.Errorf("downCount %v, want 1", got)
	}
	if got := get(get(v, "spentTotal"), "usd"); got.Kind() != canonjson.Number || got.Float() != 0 {
		t.Errorf("known zero dollars print %v, want 0", got)
	}
	if got := get(get(v, "tree"), "nodes"); got.Kind() != canonjson.Array || got.Len() != 0 {
		t.Errorf("tree.nodes %v, want []", got)
	}
	if _, has := v.Get("error"); has {
		t.Errorf("a cancelled run carries error")
	}
	failed := supervise.SupervisedResult{RunID: "r", Status: supervise.StatusNoWinner, Reason: supervise.ReasonDriverFailed,
		Error: &supervise.DriverError{Name: "Error", Message: "boom"}}
	if got := get(get(supervisedValue(failed, ""), "error"), "message").Str(); got != "boom" {
		t.Errorf("driver-failed error.message %q", got)
	}
}

// A verdict in --json carries the spec's DefaultVerdict members (§2.2
// {valid, score?, notes?}) beside agentrt's {passed, reason, score}:
// valid = passed, notes = reason when there is one.
func TestSupervisedValueVerdictSpecMembers(t *testing.T) {
	res := supervise.SupervisedResult{RunID: "r", Status: supervise.StatusWinner,
		Winner: &supervise.Winner{Node: "r:s1", Text: "ok", Verdict: &kernel.Verdict{Passed: true, Reason: "the result contains DONE"}},
		Tree:   []supervise.WorkerSummary{{NodeInfo: supervise.NodeInfo{ID: "r:s1"}, Verdict: &kernel.Verdict{Passed: false}}}}
	v := supervisedValue(res, "")
	for _, tc := range []struct{ pointer, want string }{
		{"/winner/verdict", `{"passed":true,"reason":"the result contains DONE","valid":true,"notes":"the result contains DONE"}`},
		{"/verdict", `{"passed":true,"reason":"the result contains DONE","valid":true,"notes":"the result contains DONE"}`},
		{"/workers/0/verdict", `{"passed":false,"valid":false}`},
	} {
		got, ok := canonjson.Resolve(v, tc.pointer)
		if !ok || string(canonjson.Marshal(got)) != tc.want {
			t.Errorf("%s = %s, want %s", tc.pointer, canonjson.Marshal(got), tc.want)
		}
	}
}
