package kernel

import (
	"context"
	"fmt"
	"strings"
)

// ExpectCheck is the completion check of a deliverable given as text
// (the CLI's --expect, a fleet job's Spec.Expect): a result passes when
// it contains expect or, with expect empty, when it is not blank. Its
// reason says what it found, passed or not.
func ExpectCheck(expect string) Check {
	return func(_ context.Context, out Outcome) (Verdict, error) {
		if expect == "" {
			if strings.TrimSpace(out.Text) == "" {
				return Verdict{Passed: false, Reason: "the result is empty"}, nil
			}
			return Verdict{Passed: true, Reason: "the result is not empty"}, nil
		}
		if !strings.Contains(out.Text, expect) {
			return Verdict{Passed: false, Reason: fmt.Sprintf("the result does not contain %q", expect)}, nil
		}
		return Verdict{Passed: true, Reason: fmt.Sprintf("the result contains %q", expect)}, nil
	}
}
