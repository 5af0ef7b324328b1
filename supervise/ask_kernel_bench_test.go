package supervise

import (
	"context"
	"testing"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
)

// BenchmarkAskObserverEvent is what watching for questions adds to each
// event of a worker's turn that is not one.
func BenchmarkAskObserverEvent(b *testing.B) {
	a := newAskWorker(context.Background(), Work{Node: "run:s1"}, nil)
	defer a.close()
	o := a.observer(nil)
	e := contract.EnvironmentEvent{Type: contract.EventTypeMessagePartUpdated, Data: map[string]canonjson.Value{"delta": canonjson.StringValue("x")}}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		_ = o.Event(ctx, e)
	}
}

// BenchmarkResponseOf maps a decision to a select question's response,
// validation included.
func BenchmarkResponseOf(b *testing.B) {
	req, err := questionRequest(b, "Which colour?", nil, contract.InteractionField{Type: contract.InteractionFieldTypeSelect, Name: "colour",
		Label: "Colour", Required: yes(), Options: []contract.InteractionFieldOption{{Value: "red", Label: "Red"}, {Value: "blue", Label: "Blue"}}})
	if err != nil {
		b.Fatal(err)
	}
	d := Decision{Kind: "answer", Answer: "Blue"}
	b.ReportAllocs()
	for b.Loop() {
		_ = responseOf(req, d)
	}
}
