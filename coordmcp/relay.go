package coordmcp

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentrt/agentrt/mcpserver"
	"github.com/agentrt/agentrt/supervise"
)

// DefaultConnectTimeout bounds the relay's connection to the live run.
const DefaultConnectTimeout = 10 * time.Second

// Relayed call bounds: a supervising process that stalls (paused, or
// its machine overloaded) leaves no relayed call waiting past them.
const (
	// DefaultCallTimeout bounds a relayed call other than await_event.
	DefaultCallTimeout = 2 * time.Minute
	// DefaultAwaitMargin is how long past its own wait (its timeoutMs,
	// as supervise bounds it) a relayed await_event may take.
	DefaultAwaitMargin = 30 * time.Second
)

// CodeUnresponsive is the error code of a relayed call the live run did
// not answer within its bound (see DefaultCallTimeout).
const CodeUnresponsive = "run-unresponsive"

// CodeNotLive is the error code of a relayed call the live run could not
// answer because it is no longer live.
const CodeNotLive = "run-not-live"

// ErrUnresponsive matches the error of a relay whose run did not answer
// its connection within the connect bound: something listens on the
// run's endpoint (the run is live) but does not answer — its
// supervising process may be paused (SIGSTOP) or overloaded.
var ErrUnresponsive = errors.New("coordmcp: the run did not answer")

// UnresponsiveError is Relay's error when the live run's endpoint did
// not answer within After; it matches ErrUnresponsive, never ErrNotLive.
type UnresponsiveError struct {
	RunID, RunDir string
	// PID is the supervising process the endpoint file names.
	PID   int
	After time.Duration
	Err   error
}

func (e *UnresponsiveError) Error() string {
	return fmt.Sprintf("coordmcp: run %s in %s did not answer within %s: its supervising process (pid %d) may be paused or overloaded; try again once it runs",
		e.RunID, e.RunDir, e.After, e.PID)
}

// Is matches ErrUnresponsive.
func (e *UnresponsiveError) Is(target error) bool { return target == ErrUnresponsive }

// Unwrap returns what the connection failed with.
func (e *UnresponsiveError) Unwrap() error { return e.Err }

// RelayOptions adjust Relay.
type RelayOptions struct {
	// Logger receives the relay's operational log (never arguments,
	// results or the token); nil discards it.
	Logger *slog.Logger
	// Version is announced to the client ("dev" when empty).
	Version string
	// ConnectTimeout bounds reading the endpoint, connecting and listing
	// the run's tools (DefaultConnectTimeout when 0).
	ConnectTimeout time.Duration
	// CallTimeout bounds each relayed call other than await_event
	// (DefaultCallTimeout when 0); AwaitMargin is how long past its own
	// wait an await_event may take (DefaultAwaitMargin when 0). A call
	// past its bound is a tool result {error: "run-unresponsive"}.
	CallTimeout time.Duration
	AwaitMargin time.Duration
}

// Relay serves, on the MCP stdio transport over in and out, the
// coordination verbs of the live run in runDir: it reads the run's
// EndpointFile, connects to its streamable HTTP endpoint with the run's
// token, lists the verbs it serves and forwards every call to it. A
// verb's refusal stays the tool result the run gave; a call the run can
// no longer answer (it ended) is a tool result with isError and
// {error: "run-not-live", reason}, never a protocol error.
//
// It returns an error matching ErrNotLive, before serving anything, when
// the run is not live (no endpoint file, nothing listening, or the token
// refused), and an *UnresponsiveError (ErrUnresponsive) when the run's
// endpoint took the connection but did not answer within the connect
// bound (its process paused or overloaded); otherwise it returns when the client closes in (nil) or ctx
// ends.
func Relay(ctx context.Context, runDir string, in io.Reader, out io.Writer, o RelayOptions) error {
	logger := o.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	timeout := o.ConnectTimeout
	if timeout <= 0 {
		timeout = DefaultConnectTimeout
	}
	ep, err := ReadEndpoint(runDir)
	if err != nil {
		return err
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	up, tools, err := dial(cctx, ep, o.Version)
	if err != nil && ctx.Err() == nil && errors.Is(cctx.Err(), context.DeadlineExceeded) {
		// Something took the connection and did not answer: stalled,
		// not gone (nothing listening fails at once).
		return &UnresponsiveError{RunID: ep.RunID, RunDir: runDir, PID: ep.PID, After: timeout, Err: err}
	}
	if err != nil {
		return fmt.Errorf("%w: run %s in %s: %w", ErrNotLive, ep.RunID, runDir, err)
	}
	defer up.Close()

	srv := mcp.NewServer(&mcp.Implementation{Name: ServerName, Version: version(o.Version)}, &mcp.ServerOptions{
		Logger:       logger,
		Instructions: "The coordination verbs of supervised run " + ep.RunID + ", relayed to its supervising process.",
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}},
	})
	for _, t := range tools {
		srv.AddTool(t, forward(up, t.Name, o.bounds()))
	}
	ss, err := srv.Connect(ctx, mcpserver.Stdio(in, out), nil)
	if err != nil {
		return fmt.Errorf("coordmcp: stdio: %w", err)
	}
	ended := make(chan error, 1)
	go func() { ended <- ss.Wait() }()
	select {
	case err = <-ended:
	case <-ctx.Done():
		ss.Close()
		return ctx.Err()
	}
	if err == nil || errors.Is(err, io.EOF) || errors.Is(err, mcp.ErrConnectionClosed) {
		return nil
	}
	return fmt.Errorf("coordmcp: stdio: %w", err)
}

func version(v string) string {
	if v == "" {
		return "dev"
	}
	return v
}

// dial connects to the live run's endpoint with its token and lists its
// tools.
func dial(ctx context.Context, ep Endpoint, v string) (*mcp.ClientSession, []*mcp.Tool, error) {
	hc := &http.Client{Transport: bearer{token: ep.Token, next: http.DefaultTransport}}
	cl := mcp.NewClient(&mcp.Implementation{Name: "agentrt-coordination-relay", Version: version(v)}, nil)
	cs, err := cl.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: ep.URL, HTTPClient: hc, MaxRetries: -1,
		DisableStandaloneSSE: true}, nil)
	if err != nil {
		return nil, nil, err
	}
	var tools []*mcp.Tool
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			cs.Close()
			return nil, nil, err
		}
		tools = append(tools, t)
	}
	return cs, tools, nil
}

// bearer adds the run's token to every request to the live run (and to
// no other host: the client only talks to the endpoint).
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// callBounds are RelayOptions' call bounds, defaults applied.
type callBounds struct{ call, awaitMargin time.Duration }

func (o RelayOptions) bounds() callBounds {
	return callBounds{call: cmp.Or(o.CallTimeout, DefaultCallTimeout), awaitMargin: cmp.Or(o.AwaitMargin, DefaultAwaitMargin)}
}

// of is how long a relayed call of tool name with args may take: an
// await_event its own wait (supervise.AwaitWait of its timeoutMs) and the
// margin, any other call the call bound.
func (b callBounds) of(name string, args json.RawMessage) time.Duration {
	if name != supervise.ToolPrefix+supervise.VerbAwaitEvent {
		return b.call
	}
	var a struct {
		TimeoutMS *float64 `json:"timeoutMs"`
	}
	if json.Unmarshal(args, &a) != nil {
		a.TimeoutMS = nil // the run refuses it: its default bounds the call
	}
	return supervise.AwaitWait(a.TimeoutMS) + b.awaitMargin
}

// forward relays one tool's calls to the live run, each within its
// bound.
func forward(up *mcp.ClientSession, name string, b callBounds) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var args json.RawMessage
		if req != nil && req.Params != nil && len(req.Params.Arguments) > 0 {
			args = req.Params.Arguments
		}
		p := &mcp.CallToolParams{Name: name}
		if args != nil {
			p.Arguments = args
		}
		bound := b.of(name, args)
		cctx, cancel := context.WithTimeout(ctx, bound)
		defer cancel()
		res, err := up.CallTool(cctx, p)
		if err != nil && ctx.Err() == nil && errors.Is(cctx.Err(), context.DeadlineExceeded) {
			// The run did not answer in time: stalled, not gone.
			why := fmt.Sprintf("the supervised run did not answer within %s (its supervising process may be paused or overloaded); try the call again", bound)
			return &mcp.CallToolResult{
				Content:           []mcp.Content{&mcp.TextContent{Text: why}},
				StructuredContent: mcpserver.Outcome{Error: CodeUnresponsive, Reason: why},
				IsError:           true,
			}, nil
		}
		if err != nil {
			// The run cannot answer: a result the model reads, not a
			// protocol error.
			return &mcp.CallToolResult{
				Content:           []mcp.Content{&mcp.TextContent{Text: "the supervised run is no longer live: " + err.Error()}},
				StructuredContent: mcpserver.Outcome{Error: CodeNotLive, Reason: "the supervised run is no longer live: " + err.Error()},
				IsError:           true,
			}, nil
		}
		return res, nil
	}
}
