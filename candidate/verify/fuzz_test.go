package verify_test

import (
	"context"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/candidate/verify"
	"github.com/agentrt/agentrt/internal/receipttest"
)

// FuzzVerify: Verify never panics on arbitrary bytes, and a second run
// over the same bytes gives the same record (verdict and digest) or the
// same operational error.
func FuzzVerify(f *testing.F) {
	f.Add(seal(f, a2()))
	a3 := a2()
	a3["code"] = obj{"kind": "disabled", "reason": "control"}
	a3["lineage"] = obj{"source": "human"}
	f.Add(seal(f, a3))
	f.Add(seal(f, a4(f, []byte("diff --git a/x b/x\n"), strings.Repeat("a", 40))))
	f.Add(seal(f, memorySeed(s3Loc, []byte("seed"))))
	f.Add([]byte(`{"kind":"a","kind":"b"}`))
	f.Add([]byte("\xef\xbb\xbf{}"))
	opts := verify.Options{Artifacts: verify.Dir(f.TempDir())}
	f.Fuzz(func(t *testing.T, data []byte) {
		r1, err1 := verify.Verify(context.Background(), data, opts)
		r2, err2 := verify.Verify(context.Background(), data, opts)
		if (err1 == nil) != (err2 == nil) {
			t.Fatalf("errors differ: %v / %v", err1, err2)
		}
		if err1 != nil {
			return
		}
		if r1.Verdict != r2.Verdict || r1.Digest != r2.Digest {
			t.Fatalf("records differ: %s %s / %s %s", r1.Verdict, r1.Digest, r2.Verdict, r2.Digest)
		}
		if (r1.Verdict == verify.Verified) != (len(r1.Issues) == 0) {
			t.Fatalf("verdict %s with %d issues", r1.Verdict, len(r1.Issues))
		}
	})
}

// FuzzVerifyReceipt: VerifyReceipt never panics on arbitrary bytes
// (seeded with a sealed chain's three documents), is deterministic, and
// its verdict agrees with its issues: valid exactly when there are none.
func FuzzVerifyReceipt(f *testing.F) {
	c := receipttest.New(f)
	for _, doc := range []any{c.Evidence, &c.Evidence.Receipt, &c.Evidence.MaterializationReceipt} {
		f.Add(receipttest.Bytes(f, doc))
	}
	f.Add([]byte(`{"kind":"agent-candidate-run"}`))
	f.Add([]byte(`{"kind":"agent-candidate-execution-evidence","receipt":{},"materializationReceipt":[]}`))
	opts := verify.ReceiptOptions{Artifacts: verify.Dir(c.Dir), Bundle: c.Bundle, Task: c.Task, Materialization: &c.Evidence.MaterializationReceipt}
	f.Fuzz(func(t *testing.T, data []byte) {
		r1, err1 := verify.VerifyReceipt(context.Background(), data, opts)
		r2, err2 := verify.VerifyReceipt(context.Background(), data, opts)
		if (err1 == nil) != (err2 == nil) {
			t.Fatalf("errors differ: %v / %v", err1, err2)
		}
		if err1 != nil {
			return
		}
		if r1.Verdict != r2.Verdict || r1.Digest != r2.Digest {
			t.Fatalf("records differ: %s %s / %s %s", r1.Verdict, r1.Digest, r2.Verdict, r2.Digest)
		}
		if (r1.Verdict == verify.Valid) != (len(r1.Issues) == 0) {
			t.Fatalf("verdict %s with %d issues", r1.Verdict, len(r1.Issues))
		}
	})
}
