package fleet

import (
	"errors"
	"testing"
)

// FuzzParseTraceParent: a recorded traceparent is bytes from the
// database; parsing never panics, refuses with ErrInvalid, and what it
// accepts is exactly the traceparent its span context formats back to.
func FuzzParseTraceParent(f *testing.F) {
	for _, s := range []string{
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00",
		"00-00000000000000000000000000000000-00f067aa0ba902b7-01",
		"ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
		"00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
		"", "00", "\x00\xff",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, tp string) {
		sc, err := parseTraceParent(tp)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("parseTraceParent(%q) = %v, want ErrInvalid", tp, err)
			}
			return
		}
		if got := "00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-" + sc.TraceFlags().String(); got != tp {
			t.Fatalf("parseTraceParent(%q) accepted a span context that formats as %q", tp, got)
		}
	})
}
