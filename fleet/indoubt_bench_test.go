package fleet

import (
	"testing"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/store"
)

// BenchmarkDecodeRunRecovered is the price of reading a fleet run that
// was kept in doubt and settled by Recover (two attempts, the in-doubt
// environment and the recovery): what every Get, list summary and
// executor poll of such a run pays.
func BenchmarkDecodeRunRecovered(b *testing.B) {
	attempts, err := canonjson.ToValue([]Attempt{
		{Generation: 1, RunID: "run-1.g1", Worker: "host/1/abcd", StartedAt: "2026-12-02T08:00:00Z", Status: "failed", Note: "environment in doubt"},
		{Generation: 2, RunID: "run-1.g2", Worker: "host/2/efgh", StartedAt: "2026-12-02T08:01:00Z", Status: "completed", Note: "recovery: re-attached"},
	})
	if err != nil {
		b.Fatal(err)
	}
	doubt, _ := canonjson.ToValue(InDoubt{Attempt: "run-1.g1", EnvironmentID: "env-1"})
	rc, _ := canonjson.ToValue(Recovery{State: RecoverySettled, EnvironmentID: "env-1", Attempt: "run-1.g2", Detail: "the turn had ended completed", At: "2026-12-02T08:01:05Z"})
	oc, _ := canonjson.ToValue(Outcome{Status: "completed", RunID: "run-1.g2", Delivered: true, Text: "note written"})
	doc := canonjson.ObjectValue(nil).With(docAttempts, attempts).With(docInDoubt, doubt).With(docRecovery, rc).With(docOutcome, oc)
	r := store.Run{ID: "run-1", Kind: Kind, Status: store.StatusInterrupted, Generation: 2, Doc: doc}
	b.ReportAllocs()
	for b.Loop() {
		got, err := DecodeRun(r)
		if err != nil || got.Status != store.StatusCompleted {
			b.Fatalf("%+v, %v", got, err)
		}
	}
}
