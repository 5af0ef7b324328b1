package scripted

import (
	"context"
	"testing"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
)

// FuzzParseScript: the script decoder never panics; a script it accepts
// yields a valid capability document, binds every interaction step to a
// run, and survives a round trip through its canonical JSON.
func FuzzParseScript(f *testing.F) {
	for _, seed := range []string{
		`{"turns":[]}`,
		`{"servedModel":"m","turns":[{"match":"/a+/","repeat":true,"end":"failed","error":"x","steps":[{"text":"t"},{"usage":{"inputTokens":1,"outputTokens":2},"mode":"delta"},{"delayMs":1}]}]}`,
		`{"turns":[{"steps":[{"interaction":{"request":{"id":"q","kind":"question","title":"Q","answerSpec":{"fields":[{"type":"text","name":"a","label":"A"}]}}}}]}]}`,
		`{"turns":[{"steps":[{"interaction":{"unreachable":true,"request":{"id":"p","kind":"permission","title":"P","timeoutMs":5,"onTimeout":"fail","answerSpec":{"fields":[{"type":"select","name":"grant","label":"G","options":[{"value":"allow_once","label":"O"}]}]}}}}]}]}`,
		`{"turns":[{"steps":[{"interaction":{"request":{"id":"v","kind":"acme.review","title":"V","answerSpec":{"fields":[]},"binding":{}}}}]}]}`,
		`{"turns":[{"steps":[{"toolCall":{"id":"c","name":"n","arguments":{}}},{"result":{"k":[1,2]}}]}],"exec":[{"match":"/^ls/","exitCode":3,"stdout":"o","stderr":"e"}]}`,
		`{"turns":[],"exec":[{"match":""}]}`,
		`{"turns":[{"steps":[{"interaction":{"request":{"id":"d","kind":"question","title":"D","answerSpec":{"fields":[]}}}},{"interaction":{"request":{"id":"d","kind":"question","title":"D","answerSpec":{"fields":[]}}}}]}]}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ParseScript(data)
		if err != nil {
			return
		}
		p := New(s, Options{})
		caps, _ := p.Capabilities(context.Background())
		if err := caps.Validate(); err != nil {
			t.Fatalf("an accepted script yields an invalid capability document: %v", err)
		}
		run := contract.InteractionExecutionBinding{RunID: "r", Provider: "scripted", EnvironmentID: "e", SessionID: "s", ExecutionID: "x"}
		for _, turn := range s.Turns {
			for _, step := range turn.Steps {
				if step.Interaction == nil {
					continue
				}
				if _, err := bindInteraction(step.Interaction.Request, run); err != nil {
					t.Fatalf("an accepted interaction step does not bind: %v", err)
				}
			}
		}
		v, err := canonjson.ToValue(s)
		if err != nil {
			t.Fatal(err)
		}
		b, err := canonjson.Canonical(v)
		if err != nil {
			t.Fatal(err)
		}
		again, err := ParseScript(b)
		if err != nil {
			t.Fatalf("the canonical form of an accepted script is refused: %v\n%s", err, b)
		}
		d1, _ := contract.DigestOf(s)
		d2, _ := contract.DigestOf(again)
		if d1 != d2 {
			t.Fatalf("a round trip changed the script:\n%s", b)
		}
	})
}
