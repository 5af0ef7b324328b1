package kernel_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/kernel"
)

// An --expect verdict says what it found: a result that
// fails the check is not described as passing it.
func TestExpectCheckReasonIsTruthful(t *testing.T) {
	for _, tc := range []struct {
		name, expect, text string
		want               kernel.Verdict
	}{
		{"contains", "PASS", "note PASS", kernel.Verdict{Passed: true, Reason: `the result contains "PASS"`}},
		{"lacks", "PASS", "note", kernel.Verdict{Passed: false, Reason: `the result does not contain "PASS"`}},
		{"not empty", "", "note", kernel.Verdict{Passed: true, Reason: "the result is not empty"}},
		{"empty", "", " \n", kernel.Verdict{Passed: false, Reason: "the result is empty"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := kernel.ExpectCheck(tc.expect)(context.Background(), kernel.Outcome{Text: tc.text})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("verdict (-want +got):\n%s", diff)
			}
		})
	}
}
