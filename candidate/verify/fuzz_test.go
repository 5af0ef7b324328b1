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
		deterministic(t, verify.Verified, func() (string, string, int, error) {
			r, err := verify.Verify(context.Background(), data, opts)
			if err != nil {
				return "", "", 0, err
			}
			return r.Verdict, r.Digest, len(r.Issues), nil
		})
	})
}

// deterministic runs a verification twice: the errors must agree, and
// so must the verdicts and record digests; the verdict is pass exactly
// when there is no issue.
func deterministic(t *testing.T, pass string, run func() (verdict, digest string, issues int, err error)) {
	t.Helper()
	v1, d1, n1, err1 := run()
	v2, d2, _, err2 := run()
	if (err1 == nil) != (err2 == nil) {
		t.Fatalf("errors differ: %v / %v", err1, err2)
	}
	if err1 != nil {
		return
	}
	if v1 != v2 || d1 != d2 {
		t.Fatalf("records differ: %s %s / %s %s", v1, d1, v2, d2)
	}
	if (v1 == pass) != (n1 == 0) {
		t.Fatalf("verdict %s with %d issues", v1, n1)
	}
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
		deterministic(t, verify.Valid, func() (string, string, int, error) {
			r, err := verify.VerifyReceipt(context.Background(), data, opts)
			if err != nil {
				return "", "", 0, err
			}
			return r.Verdict, r.Digest, len(r.Issues), nil
		})
	})
}
