package anthropic_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"path/filepath"
	"testing"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/internal/transcript"
	"github.com/agentrt/agentrt/providers/anthropic"
)

// bodyTransport answers every request with one body: an event stream
// with status 200 unless status says otherwise (then JSON).
type bodyTransport struct {
	status int
	header http.Header
	body   []byte
}

func (b *bodyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		_, _ = io.Copy(io.Discard, r.Body)
		_ = r.Body.Close()
	}
	status, ctype := 200, "text/event-stream"
	if b.status != 0 {
		status, ctype = b.status, "application/json"
	}
	h := http.Header{"Content-Type": {ctype}}
	for k, vs := range b.header {
		h[k] = vs
	}
	return &http.Response{StatusCode: status, Status: http.StatusText(status), Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:  h,
		Body:    io.NopCloser(bytes.NewReader(b.body)),
		Request: r}, nil
}

// over returns a model whose requests rt answers, with the test's model
// and key unless opts names others.
func over(t testing.TB, rt http.RoundTripper, opts anthropic.Options) *anthropic.Model {
	t.Helper()
	if opts.Model == "" {
		opts.Model = testModel
	}
	opts.APIKey, opts.HTTPClient = testKey, &http.Client{Transport: rt}
	m, err := anthropic.NewModel(opts)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// FuzzStream feeds arbitrary response bytes through the whole decoding
// path (the SDK's event-stream decoder, its event union, this package's
// turn state) and checks that a turn never panics, that it succeeds only
// when the stream reached message_stop, that usage is never negative and
// that a tool call's arguments are an object or absent.
func FuzzStream(f *testing.F) {
	for _, body := range recordedStreams(f) {
		f.Add(body)
	}
	f.Add([]byte("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"))
	f.Add([]byte("data: {\"type\":\"message_start\",\"message\":{\"model\":\"m\",\"usage\":{\"input_tokens\":-1,\"output_tokens\":\"x\"}}}\n\n"))
	tp := &bodyTransport{}
	m := over(f, tp, anthropic.Options{MaxRetries: -1})
	tools := []contract.Tool{weatherTool(f)}
	f.Fuzz(func(t *testing.T, body []byte) {
		tp.body = body
		failed, served := false, 0
		var err error
		for e, e2 := range m.Turn(context.Background(), hello, tools) {
			if e2 != nil {
				err = e2
				break
			}
			if failed {
				t.Fatalf("an event after a ChatFailure: %+v", e)
			}
			switch e.Kind {
			case contract.ChatFailure:
				failed = true
			case contract.ChatUsage:
				u := e.Usage
				if u == nil || u.InputTokens < 0 || u.OutputTokens < 0 || e.UsageMode != contract.UsageCumulative {
					t.Fatalf("bad usage event %+v", e)
				}
			case contract.ChatToolCall:
				if e.ToolCall.ID == "" || e.ToolCall.Name == "" {
					t.Fatalf("a call without id or name: %+v", e.ToolCall)
				}
			case contract.ChatServed:
				if served++; served > 1 || e.Model == "" {
					t.Fatalf("a second or empty served model: %+v", e)
				}
			case contract.ChatText:
			default:
				t.Fatalf("unknown event kind %q", e.Kind)
			}
		}
		if err == nil && !failed && !bytes.Contains(body, []byte("message_stop")) {
			t.Fatalf("a turn succeeded without message_stop in %q", body)
		}
		if err != nil && bytes.Contains([]byte(err.Error()), []byte(testKey)) {
			t.Fatalf("the error carries the key: %v", err)
		}
	})
}

// A Model shared by concurrent callers: every turn gets its own events
// (run with -race).
func TestConcurrentTurns(t *testing.T) {
	tr, err := transcript.Load(filepath.Join("testdata", "thinking_tool.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	m := over(t, &bodyTransport{body: tr.Exchanges[0].ResponseBody}, anthropic.Options{Effort: "medium", MaxTokens: 8192})
	errs := make(chan error, 8)
	for range 8 {
		go func() {
			calls := 0
			for e, err := range m.Turn(context.Background(), hello, nil) {
				if err != nil {
					errs <- err
					return
				}
				if e.Kind == contract.ChatToolCall {
					calls++
				}
			}
			if calls != 1 {
				errs <- io.ErrUnexpectedEOF
				return
			}
			errs <- nil
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

// A caller may stop ranging after any event: the turn then yields nothing
// more (Go panics if it did), for every recorded stream.
func TestStopAfterAnyEvent(t *testing.T) {
	for _, body := range recordedStreams(t) {
		m := over(t, &bodyTransport{body: body}, anthropic.Options{})
		for stopAt := 1; ; stopAt++ {
			n := 0
			for range m.Turn(context.Background(), hello, nil) {
				if n++; n == stopAt {
					break
				}
			}
			if n < stopAt {
				break // the turn had fewer items
			}
		}
	}
}

// recordedStreams returns the bodies of the transcripts' streamed
// responses (status 200).
func recordedStreams(t testing.TB) [][]byte {
	paths, _ := filepath.Glob(filepath.Join("testdata", "*.txtar"))
	var bodies [][]byte
	for _, p := range paths {
		tr, err := transcript.Load(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, ex := range tr.Exchanges {
			if ex.Status == 200 {
				bodies = append(bodies, ex.ResponseBody)
			}
		}
	}
	return bodies
}
