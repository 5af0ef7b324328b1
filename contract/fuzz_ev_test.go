package contract_test

import (
	"errors"
	"testing"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/internal/vectors"
	"github.com/agentrt/agentrt/schema"
)

// evFuzzParse fuzzes one Parse function: a refusal must be a *schema.Error
// with issues, and an accepted value (as wire returns it) must validate
// again to exactly what the schema accepted from the input.
func evFuzzParse[T any](f *testing.F, kind string, node schema.Node, parse func([]byte) (*T, error), wire func(*T) any, seedKinds []string, seeds ...string) {
	for _, k := range seedKinds {
		if loaded, err := vectors.Load(k); err == nil {
			for _, c := range loaded.Cases {
				f.Add(c.Raw())
			}
		}
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := parse(data)
		if err != nil {
			var se *schema.Error
			if !errors.As(err, &se) || len(se.Issues) == 0 {
				t.Fatalf("refusal is not a *schema.Error with issues: %v", err)
			}
			return
		}
		again, err := contract.Validate(kind, node, wire(v))
		if err != nil {
			t.Fatalf("an accepted value does not validate again: %v", err)
		}
		decoded, err := canonjson.Decode(data)
		if err != nil {
			t.Fatal(err)
		}
		accepted, err := schema.Run(kind, node, decoded)
		if err != nil {
			t.Fatal(err)
		}
		if !canonjson.Equal(again, accepted) {
			t.Fatalf("the Go value lost or changed members:\n got %s\nwant %s", canonjson.Marshal(again), canonjson.Marshal(accepted))
		}
	})
}

func evSelf[T any](v *T) any { return v }

func evEventSeeds() []string {
	out := make([]string, 0, len(evValidEvents))
	for _, c := range evValidEvents {
		out = append(out, c.json)
	}
	return out
}

func FuzzParseStreamEvent(f *testing.F) {
	evFuzzParse(f, contract.KindCanonicalStreamEvent, contract.CanonicalStreamEventSchema, contract.ParseStreamEvent, evSelf,
		[]string{contract.KindCanonicalStreamEvent}, evEventSeeds()...)
}

func FuzzParseEventEnvelope(f *testing.F) {
	evFuzzParse(f, contract.KindEventEnvelope, contract.EventEnvelopeSchema, contract.ParseEventEnvelope, evSelf,
		[]string{contract.KindEventEnvelope},
		`{"runId":"r","eventId":"e","sequence":0,"receivedAt":"2026-08-01T20:00:00Z","event":{"type":"plan.submitted","plan":{"id":"p","revision":1,"body":"b","submittedAt":"2026-08-01T20:00:00Z"}}}`)
}

func FuzzParsePart(f *testing.F) {
	var parts []string
	for _, c := range evValidEvents {
		if c.typ != contract.EventTypeMessagePartUpdated {
			continue
		}
		e, err := contract.ParseStreamEvent([]byte(c.json))
		if err != nil {
			f.Fatal(err)
		}
		parts = append(parts, pcMarshal(f, e.MessagePartUpdated.Part))
	}
	evFuzzParse(f, contract.KindPart, contract.PartSchema, contract.ParsePart, evSelf, nil, parts...)
}

func FuzzParseChildTaskEvent(f *testing.F) {
	evFuzzParse(f, contract.KindChildTaskEvent, contract.ChildTaskEventSchema, contract.ParseChildTaskEvent,
		func(e *contract.ChildTaskEvent) any {
			return contract.StreamEvent{Type: contract.EventTypeChildTask, ChildTask: e}
		}, []string{contract.KindCanonicalStreamEvent})
}

func FuzzParseNativeSessionObserved(f *testing.F) {
	evFuzzParse(f, contract.KindNativeSessionObservedEvent, contract.NativeSessionObservedEventSchema, contract.ParseNativeSessionObserved,
		func(o *contract.NativeSessionObserved) any { return o.Event() }, nil,
		`{"type":"native.session.observed","provider":"claude-code","nativeSessionId":"provider-conversation"}`,
		`{"type":"native.session.observed","provider":"a","nativeSessionId":"\ud800"}`)
}

func FuzzParseTurnInput(f *testing.F) {
	evFuzzParse(f, contract.KindTurnInput, contract.TurnInputSchema, contract.ParseTurnInput, evSelf,
		[]string{contract.KindTurnInput},
		`{"profile":{"harness":"codex","tools":{"Bash":true}},"prompt":"hi","parts":[{"type":"text","text":"x"}],"timeoutMs":1000,"detach":true,"interactions":{},"context":{"__proto__":1},"providerOptions":{}}`,
		`{"controlRef":{"runId":"r","provider":"p","environmentId":"e"},"sessionId":"s","model":"m","executionId":"x","lastEventId":"l","turnId":"t"}`)
}

func FuzzParseTurnResult(f *testing.F) {
	evFuzzParse(f, contract.KindTurnResult, contract.TurnResultSchema, contract.ParseTurnResult, evSelf,
		[]string{contract.KindTurnResult},
		`{"text":"done","success":false,"error":"x","sessionId":"s","usage":{"inputTokens":1,"outputTokens":2,"cost":0.5},"metadata":{},"events":[{"type":"result","data":{},"id":"e","usageMode":"cumulative","usage":{"inputTokens":1,"outputTokens":2},"normalized":{"type":"status","status":"failed"}}]}`)
}

func FuzzParseEnvironmentEvent(f *testing.F) {
	evFuzzParse(f, contract.KindEnvironmentEvent, contract.EnvironmentEventSchema, contract.ParseEnvironmentEvent, evSelf, nil,
		`{"type":"assistant","data":{"delta":"x"},"id":"e1","usage":{"inputTokens":1,"outputTokens":2},"usageMode":"delta","providerEvent":null}`,
		`{"type":"child","data":{},"normalized":{"type":"child-task","childId":"c","status":"started","time":{"started":1,"updated":1},"sourceEventId":"e"}}`)
}

func FuzzParseNativeContinuationResult(f *testing.F) {
	evFuzzParse(f, contract.KindNativeContinuationResult, contract.NativeContinuationResultSchema, contract.ParseNativeContinuationResult, evSelf,
		[]string{contract.KindNativeContinuationResult})
}
