package kernel_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/internal/clitest"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/providers/clibridge"
	"github.com/agentrt/agentrt/store/memory"
)

// noteAnthropic is a local Anthropic Messages API that answers every
// call with one short note, and keeps the session id claude-code sends
// with each call.
type noteAnthropic struct {
	srv *httptest.Server

	mu       sync.Mutex
	sessions []string
}

func newNoteAnthropic(t *testing.T) *noteAnthropic {
	f := &noteAnthropic{}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *noteAnthropic) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 8<<20))
	if r.Method != http.MethodPost || r.URL.Path != "/v1/messages" {
		w.WriteHeader(http.StatusNotFound)
		return
	}
	var req struct {
		Model string `json:"model"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	f.sessions = append(f.sessions, r.Header.Get("X-Claude-Code-Session-Id"))
	n := len(f.sessions)
	f.mu.Unlock()
	w.Header().Set("Content-Type", "text/event-stream")
	fl, _ := w.(http.Flusher)
	ev := func(name string, data any) {
		b, _ := json.Marshal(data)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, b)
		if fl != nil {
			fl.Flush()
		}
	}
	ev("message_start", map[string]any{"type": "message_start", "message": map[string]any{"id": fmt.Sprintf("msg_%d", n), "type": "message",
		"role": "assistant", "model": req.Model, "content": []any{}, "stop_reason": nil, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": 12, "output_tokens": 1, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0}}})
	ev("content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{"type": "text", "text": ""}})
	ev("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "text_delta", "text": "a note"}})
	ev("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
	ev("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": "end_turn", "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": 3}})
	ev("message_stop", map[string]any{"type": "message_stop"})
}

// NSO-02 with a real CLI: the kernel runs the real claude-code binary
// through providers/clibridge, whose environment is an OwnedStreamer, so
// the kernel binds the private native session observation to its run:
// the run record carries the session id claude-code itself sent the
// model endpoint, the observation never becomes a public event (NSO-03),
// and the API key reaches neither. The test needs the claude binary (see
// internal/clitest; AGENTRT_REQUIRE_CLIS=1 fails rather than skips
// without it).
func TestExecuteBindsTheRealCLIsNativeSessionNSO02(t *testing.T) {
	bin := clitest.Claude(t)
	const key = "sk-ant-fake-native-session-key"
	f := newNoteAnthropic(t)
	prov, err := clibridge.New(clibridge.Options{Binary: bin, BaseURL: f.srv.URL, APIKey: key, WorkRoot: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	st := memory.New(nil)
	prof := mustProfile(t, `{"name":"writer","harness":"claude-code","model":{"default":"claude-e2e-1"}}`)
	res, err := kernel.Execute(ctx, kernel.Request{Profile: prof, Task: "write a note", Provider: prov, Store: st, Check: nonEmpty, RunID: "claude-native"})
	if err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	sent := append([]string(nil), f.sessions...)
	f.mu.Unlock()
	if len(sent) == 0 || sent[0] == "" {
		t.Fatalf("claude-code sent no session id to the model endpoint (%d calls)", len(sent))
	}
	if res.NativeSessionID != sent[0] {
		t.Errorf("the run's native session %q; claude-code's was %q", res.NativeSessionID, sent[0])
	}
	rec, err := kernel.ReadRun(ctx, st, "claude-native")
	if err != nil || rec.Exact == nil {
		t.Fatalf("record %+v (%v)", rec, err)
	}
	if rec.Exact.NativeSessionID != sent[0] {
		t.Errorf("the run record's native session %q; claude-code's was %q", rec.Exact.NativeSessionID, sent[0])
	}
	events, err := st.Events(ctx, "claude-native", "", 0)
	if err != nil || len(events) == 0 {
		t.Fatalf("%d events (%v)", len(events), err)
	}
	for _, e := range events {
		// NSO-03: the observation itself stays private. (claude-code's own
		// stream events name its session too; they establish nothing,
		// NSO-04.)
		if e.Type == contract.EventTypeNativeSessionObserved {
			t.Errorf("the run's public events hold the private observation %s", canonjson.Marshal(e.Body))
		}
		if body := string(canonjson.Marshal(e.Body)); strings.Contains(body, key) {
			t.Errorf("public event %s holds the API key", e.Type)
		}
	}
	if doc := string(canonjson.Marshal(rec.Doc)); strings.Contains(doc, key) {
		t.Error("the run record holds the API key")
	}
}
