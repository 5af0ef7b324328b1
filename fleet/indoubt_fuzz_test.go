package fleet

import (
	"testing"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/store"
)

// FuzzDecodeRunInDoubt: a fleet run's document as the store holds it
// (any JSON, whoever wrote it) decodes to a run or to an error, never a
// panic; a run reads as settled only when its recovery says so and its
// outcome names a terminal status.
func FuzzDecodeRunInDoubt(f *testing.F) {
	for _, seed := range []string{
		`{}`,
		`{"inDoubt":{"attempt":"r.g1","environmentId":"env-1"},"outcome":{"status":"interrupted","runId":"r.g1","delivered":false}}`,
		`{"inDoubt":{"attempt":"r.g1","environmentId":"env-1"},"recovery":{"state":"settled","environmentId":"env-1","attempt":"r.g2","detail":"d","at":"t"},"outcome":{"status":"completed","runId":"r.g2","delivered":true}}`,
		`{"recovery":{"state":"settled","environmentId":"e","detail":"d","at":"t"}}`,
		`{"recovery":{"state":"settled","environmentId":"e","detail":"d","at":"t"},"outcome":{"status":"running","runId":"x","delivered":false}}`,
		`{"recovery":{"state":"lost","environmentId":"e","detail":"d","at":"t","extra":1}}`,
		`{"inDoubt":"env-1"}`,
		`{"recovery":[1,2]}`,
		`{"recovery":{"state":"bogus","environmentId":"e","detail":"d","at":"t"}}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		doc, err := canonjson.Decode(raw)
		if err != nil {
			return
		}
		r, err := DecodeRun(store.Run{ID: "r", Kind: Kind, Status: store.StatusInterrupted, Doc: doc})
		if err != nil {
			return
		}
		if rc := r.Recovery; rc != nil && rc.State != RecoverySettled && rc.State != RecoveryRunning && rc.State != RecoveryLost {
			t.Fatalf("decoded an unknown recovery state %q", rc.State)
		}
		if r.Status != store.StatusInterrupted {
			if r.Recovery == nil || r.Recovery.State != RecoverySettled || r.Outcome == nil || !r.Status.Terminal() || string(r.Status) != r.Outcome.Status {
				t.Fatalf("reads %s without a settled recovery and a terminal outcome: %+v %+v", r.Status, r.Recovery, r.Outcome)
			}
		}
	})
}
