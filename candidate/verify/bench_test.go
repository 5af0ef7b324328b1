package verify_test

import (
	"context"
	"testing"

	"github.com/agentrt/agentrt/candidate/verify"
	"github.com/agentrt/agentrt/internal/receipttest"
)

// BenchmarkVerifyReceipt verifies a whole CandidateExecutionEvidence
// against its bundle and task: strict parse and schema, every digest,
// every artifact read from a local content-addressed directory and
// checked, the workspace archives decoded, the limits and publication
// rules, and the self-digested record.
func BenchmarkVerifyReceipt(b *testing.B) {
	c := receipttest.New(b)
	data := receipttest.Bytes(b, c.Evidence)
	opts := verify.ReceiptOptions{Artifacts: verify.Dir(c.Dir), Bundle: c.Bundle, Task: c.Task}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		rec, err := verify.VerifyReceipt(context.Background(), data, opts)
		if err != nil || rec.Verdict != verify.Valid {
			b.Fatalf("%v %v", err, rec)
		}
	}
}

// BenchmarkVerifyBundle verifies A2 (disabled code: no git) end to end.
func BenchmarkVerifyBundle(b *testing.B) {
	data := seal(b, a2())
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		rec, err := verify.Verify(context.Background(), data, verify.Options{})
		if err != nil || rec.Verdict != verify.Verified {
			b.Fatalf("%v %v", err, rec)
		}
	}
}
