package chatturn_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"iter"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/chatturn"
)

// recorder is a turn's caller side that records what the hooks saw.
type recorder struct {
	mu        sync.Mutex
	persisted []string
	// persistAfter is how many producer lines had been yielded when the
	// text was persisted.
	persistAfter int
	yielded      int
	produced     atomic.Int32
}

func text(s string) chatturn.Line {
	return chatturn.Line{Type: "text", Data: canonjson.ObjectValue([]canonjson.Member{{Name: "delta", Value: canonjson.StringValue(s)}})}
}

// producer yields the given text deltas; the final text is their
// concatenation.
func (r *recorder) producer(deltas ...string) func(context.Context) (chatturn.Production, error) {
	return func(ctx context.Context) (chatturn.Production, error) {
		r.produced.Add(1)
		var all strings.Builder
		return chatturn.Production{
			Events: func(yield func(chatturn.Line, error) bool) {
				for _, d := range deltas {
					all.WriteString(d)
					r.mu.Lock()
					r.yielded++
					r.mu.Unlock()
					if !yield(text(d), nil) {
						return
					}
				}
			},
			FinalText: all.String,
		}, nil
	}
}

func (r *recorder) persist(_ context.Context, _ chatturn.Identity, final string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.persisted = append(r.persisted, final)
	r.persistAfter = r.yielded
	return nil
}

var ident = chatturn.Identity{ProjectID: "p", TenantID: "t", SessionID: "s", UserID: "u", TurnIndex: 3}

func types(lines []chatturn.Line) []string {
	var out []string
	for _, l := range lines {
		out = append(out, l.Type)
	}
	return out
}

func collect(seq iter.Seq[chatturn.Line]) []chatturn.Line {
	var out []chatturn.Line
	for l := range seq {
		out = append(out, l)
	}
	return out
}

// Behaviour 27 (FD-02): the first line is session.run.started, the
// producer's events follow verbatim, the last line is
// session.run.completed; the final text is persisted exactly once, after
// the last producer event.
func TestBehaviour27LinesAndPersistOnce(t *testing.T) {
	rec := &recorder{}
	lines := collect(chatturn.HandleChatTurn(context.Background(), chatturn.Turn{Identity: ident, Hooks: chatturn.Hooks{
		Produce: rec.producer("Hel", "lo"), PersistAssistantMessage: rec.persist,
	}}))
	if diff := cmp.Diff([]string{chatturn.TypeStarted, "text", "text", chatturn.TypeCompleted}, types(lines)); diff != "" {
		t.Fatalf("line types (-want +got):\n%s", diff)
	}
	if got := string(canonjson.Marshal(lines[0].Value())); got != `{"type":"session.run.started","data":{"sessionId":"s","tenantId":"t","turnIndex":3}}` {
		t.Errorf("started line %s", got)
	}
	if !canonjson.Equal(lines[1].Value(), text("Hel").Value()) || !canonjson.Equal(lines[2].Value(), text("lo").Value()) {
		t.Errorf("producer lines not verbatim: %s %s", canonjson.Marshal(lines[1].Value()), canonjson.Marshal(lines[2].Value()))
	}
	if got := string(canonjson.Marshal(lines[3].Value())); got != `{"type":"session.run.completed","data":{"sessionId":"s"}}` {
		t.Errorf("completed line %s", got)
	}
	if diff := cmp.Diff([]string{"Hello"}, rec.persisted); diff != "" || rec.persistAfter != 2 {
		t.Errorf("persisted %v after %d producer lines; want [Hello] once, after 2", rec.persisted, rec.persistAfter)
	}
}

// Behaviour 28: a producer that fails — returning an error, yielding
// one, or panicking — gives an error line then session.run.failed, and
// nothing escapes to the HTTP handler.
func TestBehaviour28ProducerFailure(t *testing.T) {
	boom := errors.New("model unavailable")
	cases := map[string]func(context.Context) (chatturn.Production, error){
		"returns an error": func(context.Context) (chatturn.Production, error) { return chatturn.Production{}, boom },
		"yields an error": func(context.Context) (chatturn.Production, error) {
			return chatturn.Production{Events: func(yield func(chatturn.Line, error) bool) {
				if yield(text("partial"), nil) {
					yield(chatturn.Line{}, boom)
				}
			}}, nil
		},
		"panics": func(context.Context) (chatturn.Production, error) { panic("model unavailable") },
	}
	for name, produce := range cases {
		t.Run(name, func(t *testing.T) {
			rec := &recorder{}
			h := &chatturn.Handler{Turn: func(*http.Request) (*chatturn.Turn, error) {
				return &chatturn.Turn{Identity: ident, Hooks: chatturn.Hooks{Produce: produce, PersistAssistantMessage: rec.persist}}, nil
			}}
			srv := httptest.NewServer(h)
			defer srv.Close()
			lines, resp := post(t, srv.URL, nil)
			if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != chatturn.ContentTypeNDJSON {
				t.Fatalf("status %d, content type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
			}
			got := types(lines)
			if got[0] != chatturn.TypeStarted || len(got) < 3 || got[len(got)-2] != chatturn.TypeError || got[len(got)-1] != chatturn.TypeFailed {
				t.Fatalf("lines %v; want started … error, session.run.failed", got)
			}
			msg, _ := lines[len(lines)-1].Data.Get("message")
			if !strings.Contains(msg.Str(), "model unavailable") {
				t.Errorf("failed line %s does not say why", canonjson.Marshal(lines[len(lines)-1].Value()))
			}
			if len(rec.persisted) != 0 {
				t.Errorf("a failed turn persisted %v", rec.persisted)
			}
		})
	}
}

// A persist that fails fails the turn (the current semantics, not the
// older engine's swallowing).
func TestPersistFailureFailsTheTurn(t *testing.T) {
	rec := &recorder{}
	lines := collect(chatturn.Stream(context.Background(), chatturn.Turn{Identity: ident, Hooks: chatturn.Hooks{
		Produce:                 rec.producer("x"),
		PersistAssistantMessage: func(context.Context, chatturn.Identity, string) error { return errors.New("disk full") },
	}}))
	if diff := cmp.Diff([]string{chatturn.TypeStarted, "text", chatturn.TypeError, chatturn.TypeFailed}, types(lines)); diff != "" {
		t.Errorf("line types (-want +got):\n%s", diff)
	}
}

// Behaviour 29: TransformFinalText changes what is persisted, never a
// streamed line; OnTurnComplete and OnEvent failing (or panicking)
// change no line.
func TestBehaviour29HooksDoNotChangeLines(t *testing.T) {
	run := func(h chatturn.Hooks) ([]chatturn.Line, *recorder) {
		rec := &recorder{}
		h.Produce, h.PersistAssistantMessage = rec.producer("a", "b"), rec.persist
		return collect(chatturn.Stream(context.Background(), chatturn.Turn{Identity: ident, Hooks: h})), rec
	}
	plain, _ := run(chatturn.Hooks{})
	var seen []string
	hooked, rec := run(chatturn.Hooks{
		TransformFinalText: strings.ToUpper,
		OnTurnComplete:     func(context.Context, chatturn.Identity, string) error { panic("complete hook") },
		OnEvent: func(l chatturn.Line) error {
			seen = append(seen, l.Type)
			if l.Type == "text" {
				return errors.New("event hook")
			}
			return nil
		},
	})
	eq := cmp.Comparer(func(a, b canonjson.Value) bool { return canonjson.Equal(a, b) })
	if diff := cmp.Diff(plain, hooked, eq); diff != "" {
		t.Errorf("hooks changed the lines (-plain +hooked):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"AB"}, rec.persisted); diff != "" {
		t.Errorf("persisted (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(types(plain), seen); diff != "" {
		t.Errorf("OnEvent saw (-want +got):\n%s", diff)
	}
}

// Behaviour 30: TraceFlush is handed to WaitUntil when there is one;
// otherwise it is awaited before the stream ends.
func TestBehaviour30TraceFlush(t *testing.T) {
	t.Run("awaited", func(t *testing.T) {
		rec := &recorder{}
		var flushed atomic.Bool
		var flushedBeforeEnd bool
		for l := range chatturn.Stream(context.Background(), chatturn.Turn{Identity: ident, Hooks: chatturn.Hooks{
			Produce: rec.producer("x"), PersistAssistantMessage: rec.persist,
			TraceFlush: func(context.Context) error { flushed.Store(true); return errors.New("collector down") },
		}}) {
			_ = l
		}
		flushedBeforeEnd = flushed.Load()
		if !flushedBeforeEnd {
			t.Error("TraceFlush had not run when the stream ended")
		}
	})
	t.Run("handed to WaitUntil", func(t *testing.T) {
		rec := &recorder{}
		var handed []func(context.Context)
		var flushed atomic.Bool
		lines := collect(chatturn.Stream(context.Background(), chatturn.Turn{Identity: ident, Hooks: chatturn.Hooks{
			Produce: rec.producer("x"), PersistAssistantMessage: rec.persist,
			TraceFlush: func(context.Context) error { flushed.Store(true); return nil },
			WaitUntil:  func(f func(context.Context)) { handed = append(handed, f) },
		}}))
		if len(lines) != 3 || len(handed) != 1 || flushed.Load() {
			t.Fatalf("%d lines, %d handed to WaitUntil, flushed %v; want the flush handed over, not run", len(lines), len(handed), flushed.Load())
		}
		handed[0](context.Background())
		if !flushed.Load() {
			t.Error("the handed-over function does not flush")
		}
	})
}

// Behaviour 31.
func TestBehaviour31DeriveExecutionID(t *testing.T) {
	if got := chatturn.DeriveExecutionID("p", "s", 3); got != "p:s:3" {
		t.Errorf("DeriveExecutionID = %q", got)
	}
	if chatturn.DeriveExecutionID("p", "s", 3) != ident.ExecutionID() {
		t.Error("not stable")
	}
}

// A turn missing a required hook or identity is refused with 400 before
// anything runs.
func TestHandlerRefusesIncompleteTurn(t *testing.T) {
	h := &chatturn.Handler{Turn: func(*http.Request) (*chatturn.Turn, error) {
		return &chatturn.Turn{Identity: chatturn.Identity{SessionID: "s"}}, nil
	}}
	srv := httptest.NewServer(h)
	defer srv.Close()
	resp, err := http.Post(srv.URL, "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("status %d; want 400", resp.StatusCode)
	}
}

// post sends a turn request and reads every NDJSON line of the answer.
func post(t *testing.T, url string, header http.Header) ([]chatturn.Line, *http.Response) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, resp
	}
	var lines []chatturn.Line
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		lines = append(lines, decodeLine(t, sc.Bytes()))
	}
	return lines, resp
}

func decodeLine(t *testing.T, b []byte) chatturn.Line {
	t.Helper()
	var raw struct {
		Type string          `json:"type"`
		Data json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatalf("line %q: %v", b, err)
	}
	l := chatturn.Line{Type: raw.Type}
	if raw.Data != nil {
		v, err := canonjson.Decode(raw.Data)
		if err != nil {
			t.Fatal(err)
		}
		l.Data = v
	}
	return l
}
