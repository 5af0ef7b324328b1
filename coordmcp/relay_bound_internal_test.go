package coordmcp

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentrt/agentrt/supervise"
)

// A supervising process that stalls (SIGSTOPped, overloaded) answers
// nothing; a relayed call waited for it for as long as it stayed
// stalled (a report-only probe saw await_event {timeoutMs: 3000} answered
// after 20.5 s, when the process was continued). Each relayed call is
// now bounded: await_event by its own wait and the margin, any other
// call by the call bound; past it the harness gets a tool result
// {error: run-unresponsive}, and the relay goes on serving.
func TestRelayedCallsOfAStalledRunAreBounded(t *testing.T) {
	// The "live run": an MCP endpoint whose verbs never answer while
	// the test runs. They end when the test does (released before the
	// server closes): the SDK's session close waits for its handlers,
	// and a call the relay gave up on is not always cancelled on the
	// server first, so a handler waiting on its ctx alone held
	// srv.Close for ever (seen once in CI: 23 minutes).
	stalled := mcp.NewServer(&mcp.Implementation{Name: "stalled-run", Version: "1"}, nil)
	release := make(chan struct{})
	for _, verb := range []string{supervise.VerbAwaitEvent, supervise.VerbObserveAgent} {
		stalled.AddTool(&mcp.Tool{Name: supervise.ToolPrefix + verb, InputSchema: map[string]any{"type": "object"}},
			func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				select {
				case <-ctx.Done():
					return nil, ctx.Err()
				case <-release:
					return nil, errors.New("the test ended")
				}
			})
	}
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return stalled }, nil))
	defer srv.Close()
	defer close(release) // before srv.Close: deferred calls run last first
	dir := t.TempDir()
	if _, err := writeEndpoint(dir, Endpoint{SchemaVersion: EndpointSchemaVersion, RunID: "stalled", URL: srv.URL,
		Token: strings.Repeat("t", 40), PID: 1}); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	toRelay, harnessOut := io.Pipe()
	fromRelay, relayOut := io.Pipe()
	relayed := make(chan error, 1)
	go func() {
		relayed <- Relay(ctx, dir, toRelay, relayOut, RelayOptions{CallTimeout: 300 * time.Millisecond, AwaitMargin: 200 * time.Millisecond})
		relayOut.Close()
	}()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "harness", Version: "1"}, nil).
		Connect(ctx, &mcp.IOTransport{Reader: fromRelay, Writer: harnessOut}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		verb      string
		args      map[string]any
		atLeast   time.Duration
		atMostish time.Duration
	}{
		{supervise.VerbObserveAgent, map[string]any{"workerId": "stalled:s1"}, 300 * time.Millisecond, 10 * time.Second},
		{supervise.VerbAwaitEvent, map[string]any{"timeoutMs": 500}, 700 * time.Millisecond, 10 * time.Second},
	} {
		start := time.Now()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: supervise.ToolPrefix + tc.verb, Arguments: tc.args})
		took := time.Since(start)
		if err != nil {
			t.Fatalf("%s: a protocol error %v, want a tool result", tc.verb, err)
		}
		out, _ := res.StructuredContent.(map[string]any)
		if !res.IsError || out["error"] != CodeUnresponsive {
			t.Errorf("%s on a stalled run: %v, want {error: %s}", tc.verb, out, CodeUnresponsive)
		}
		if took < tc.atLeast || took > tc.atMostish {
			t.Errorf("%s answered after %s, want its bound (at least %s)", tc.verb, took, tc.atLeast)
		}
	}
	cs.Close()
	harnessOut.Close()
	if err := <-relayed; err != nil {
		t.Errorf("the relay ended with %v once the harness closed", err)
	}
}

// The await bound follows supervise's reading of timeoutMs: its own
// wait, capped at MaxAwaitTimeout; none the default; 0 or negative the
// longest (§9: ≤0 = unbounded).
func TestAwaitCallBound(t *testing.T) {
	b := RelayOptions{}.bounds()
	await := supervise.ToolPrefix + supervise.VerbAwaitEvent
	for _, tc := range []struct {
		name, args string
		want       time.Duration
	}{
		{await, `{"timeoutMs": 3000}`, 3*time.Second + DefaultAwaitMargin},
		{await, `{}`, supervise.DefaultAwaitTimeout + DefaultAwaitMargin},
		{await, `{"timeoutMs": -1}`, supervise.MaxAwaitTimeout + DefaultAwaitMargin},
		{await, `{"timeoutMs": 0}`, supervise.MaxAwaitTimeout + DefaultAwaitMargin}, // §9: ≤0 = unbounded
		{await, `{"timeoutMs": 1e12}`, supervise.MaxAwaitTimeout + DefaultAwaitMargin},
		{await, `not json`, supervise.DefaultAwaitTimeout + DefaultAwaitMargin},
		{supervise.ToolPrefix + supervise.VerbSpawnWorker, `{"timeoutMs": 99999}`, DefaultCallTimeout},
	} {
		if got := b.of(tc.name, []byte(tc.args)); got != tc.want {
			t.Errorf("bound of %s %s = %s, want %s", tc.name, tc.args, got, tc.want)
		}
	}
}
