package clibridge

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/trace"
)

// Spec runtime §10: a traced turn's trace context reaches the harness
// process as TRACEPARENT, with the legacy TRACE_ID and PARENT_SPAN_ID;
// an untraced turn's process gets none of them.
func TestTraceParentReachesTheHarness(t *testing.T) {
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{0xab}, SpanID: trace.SpanID{0xcd}, TraceFlags: trace.FlagsSampled})
	tests := []struct {
		name string
		ctx  context.Context
		want string
	}{
		{"traced", trace.ContextWithSpanContext(context.Background(), sc),
			"00-ab000000000000000000000000000000-cd00000000000000-01 ab000000000000000000000000000000 cd00000000000000"},
		{"untraced", context.Background(), "unset unset unset"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "traceparent")
			p, _ := fakeProvider(t, `cat >/dev/null
echo "${TRACEPARENT:-unset} ${TRACE_ID:-unset} ${PARENT_SPAN_ID:-unset}" > `+out+`
echo '{"type":"result","subtype":"success","is_error":false,"result":"ok","usage":{"input_tokens":1,"output_tokens":1}}'`)
			collectTurn(t, tc.ctx, p, "hi")
			got, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			if strings.TrimSpace(string(got)) != tc.want {
				t.Errorf("TRACEPARENT TRACE_ID PARENT_SPAN_ID = %q, want %q", got, tc.want)
			}
		})
	}
}
