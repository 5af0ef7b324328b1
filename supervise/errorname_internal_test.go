package supervise

import (
	"errors"
	"fmt"
	"testing"

	"github.com/agentrt/agentrt/kernel"
)

// TestErrorNameReadsAsAClassName: a driver-failed result's error.name
// (§3.6 error{name, message}; behaviour 42) names the first exported
// error type along the chain, as a TypeScript class name reads, or
// "Error" for anonymous errors — never a Go runtime type such as
// *errors.joinError, which is what the result carried before.
func TestErrorNameReadsAsAClassName(t *testing.T) {
	t.Parallel()
	stop := &StopRuleError{}
	deep := error(errors.New("root cause"))
	for range 1000 {
		deep = fmt.Errorf("layer: %w", deep)
	}
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"errors.New", errors.New("boom"), "Error"},
		{"fmt.Errorf wrapping a sentinel", fmt.Errorf("x: %w", ErrResolveTools), "Error"},
		{"errors.Join of anonymous errors", errors.Join(errors.New("a"), errors.New("b")), "Error"},
		{"an exported type", stop, "StopRuleError"},
		{"an exported type under fmt.Errorf", fmt.Errorf("wrapped: %w", stop), "StopRuleError"},
		{"an exported type inside errors.Join", errors.Join(errors.New("a"), stop), "StopRuleError"},
		{"a kernel.RunError is looked through", &kernel.RunError{Cause: stop}, "StopRuleError"},
		{"a kernel.RunError over an anonymous cause", &kernel.RunError{Cause: errors.New("x")}, "Error"},
		{"a kernel.RunError without a cause is the error", &kernel.RunError{Reason: "failed"}, "RunError"},
		{"a chain deeper than the walk's bound", deep, "Error"},
		{"a typed-nil kernel.RunError in the chain", fmt.Errorf("x: %w", (*kernel.RunError)(nil)), "RunError"},
		{"an Unwrap that panics", fmt.Errorf("x: %w", panickyUnwrap{}), "Error"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := errorName(tc.err); got != tc.want {
				t.Errorf("errorName(%v) = %q, want %q", tc.err, got, tc.want)
			}
		})
	}
}

// panickyUnwrap is an unexported error whose Unwrap panics, as a typed
// nil's method that dereferences it does.
type panickyUnwrap struct{}

func (panickyUnwrap) Error() string { return "panicky" }
func (panickyUnwrap) Unwrap() error { panic("unwrap") }
