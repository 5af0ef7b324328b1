package cli_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/harness"
	"github.com/agentrt/agentrt/internal/clitest"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/providers/remote"
)

const (
	servedAnswer  = "served through clibridge"
	hangMarker    = "hang-until-cancelled"
	servedFakeKey = "sk-ant-fake-serve-clibridge"
)

// hangingClaudeAPI is a local Anthropic Messages API for claude-code: a
// request whose body carries hangMarker gets its message start and then
// nothing until the client goes away (a turn to cancel); any other is
// answered servedAnswer. hung counts the hanging requests.
func hangingClaudeAPI(t *testing.T) (url string, hung *atomic.Int64) {
	hung = new(atomic.Int64)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 8<<20))
		if r.Method != http.MethodPost || r.URL.Path != "/v1/messages" {
			http.NotFound(w, r)
			return
		}
		var req struct {
			Model string `json:"model"`
		}
		_ = json.Unmarshal(body, &req)
		w.Header().Set("Content-Type", "text/event-stream")
		ev := func(name string, data any) {
			b, _ := json.Marshal(data)
			fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, b)
			w.(http.Flusher).Flush()
		}
		ev("message_start", map[string]any{"type": "message_start", "message": map[string]any{"id": "msg_served", "type": "message",
			"role": "assistant", "model": req.Model, "content": []any{}, "stop_reason": nil, "stop_sequence": nil,
			"usage": map[string]any{"input_tokens": 20, "output_tokens": 1}}})
		if strings.Contains(string(body), hangMarker) {
			hung.Add(1)
			select {
			case <-r.Context().Done():
			case <-time.After(3 * time.Minute):
			}
			return
		}
		ev("content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{"type": "text", "text": ""}})
		ev("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "text_delta", "text": servedAnswer}})
		ev("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
		ev("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": "end_turn", "stop_sequence": nil}, "usage": map[string]any{"output_tokens": 5}})
		ev("message_stop", map[string]any{"type": "message_stop"})
	}))
	t.Cleanup(srv.Close)
	return srv.URL, hung
}

// Issue 14 (serve gaps, item 4): `agentrt serve --provider claude-code`
// drives the real claude CLI (its model a local fake endpoint) for
// providers/remote: a turn runs and its events stream to the client
// ending completed with the model's answer; a turn hanging on the model
// is cancelled by id and the cancel acknowledged (accepted,
// cancel_requested; a re-send replayed), the turn ending cancelled;
// destroy works and the key never reaches the server's log. Without the
// claude binary it skips, unless AGENTRT_REQUIRE_CLIS=1.
func TestServeClaudeCodeThroughRemote(t *testing.T) {
	claude := clitest.Claude(t)
	api, hung := hangingClaudeAPI(t)
	url, _ := startServeWithEnv(t, []string{"ANTHROPIC_API_KEY=" + servedFakeKey,
		"PATH=" + filepath.Dir(claude) + string(os.PathListSeparator) + os.Getenv("PATH")},
		"--provider", "claude-code", "--base-url", api)
	checkServedCLI(t, url, &profile.Profile{Name: profile.Ptr("served"), Harness: harness.ClaudeCode,
		Model: &profile.ModelHints{Default: profile.Ptr("claude-e2e-1")}}, hung)
}

// checkServedCLI drives the harness CLI served at url through
// providers/remote with profile pr (issue 14, item 4): a turn streams
// its progress and ends completed carrying servedAnswer; a turn whose
// prompt is hangMarker (hung counts the model calls it reached) is
// cancelled by id — accepted, cancel_requested, a re-send replayed — and
// ends cancelled; destroy works and a turn after it never completes.
func checkServedCLI(t *testing.T, url string, pr *profile.Profile, hung *atomic.Int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	p, err := remote.New(remote.Options{BaseURL: url, Token: serveToken})
	if err != nil {
		t.Fatal(err)
	}
	env, err := p.Create(ctx, &contract.CreateInput{Profile: profile.Ref{Inline: pr}})
	if err != nil {
		t.Fatal(err)
	}

	var events []contract.EnvironmentEvent
	for ev, err := range env.Stream(ctx, &contract.TurnInput{Prompt: profile.Ptr("say something")}) {
		if err != nil {
			t.Fatalf("turn: %v", err)
		}
		events = append(events, ev)
	}
	if len(events) < 2 {
		t.Fatalf("the turn streamed %d events, want its progress and its end", len(events))
	}
	if kind, ok := contract.EnvironmentEventTerminal(events[len(events)-1]); !ok || kind != contract.TerminalCompleted {
		t.Fatalf("the turn ended %q (terminal %v), want completed", kind, ok)
	}
	if all := eventsText(t, events); !strings.Contains(all, servedAnswer) {
		t.Errorf("the turn's events do not carry the model's answer %q:\n%s", servedAnswer, all)
	}

	// A turn hanging on the model is cancelled by id.
	turnID := "served-hang"
	ended := make(chan []contract.EnvironmentEvent, 1)
	go func() {
		var evs []contract.EnvironmentEvent
		for ev, err := range env.Stream(ctx, &contract.TurnInput{TurnID: &turnID, Prompt: profile.Ptr(hangMarker)}) {
			if err != nil {
				break
			}
			evs = append(evs, ev)
		}
		ended <- evs
	}()
	for hung.Load() == 0 {
		select {
		case <-ctx.Done():
			t.Fatal("the hanging turn never reached the model")
		case <-time.After(50 * time.Millisecond):
		}
	}
	ack, err := p.CancelTurn(ctx, env.ID(), turnID, "cancel-served-hang")
	if err != nil {
		t.Fatalf("cancel: %v", err)
	}
	if ack.Status != contract.StatusAccepted || ack.Effect != contract.EffectCancelRequested || ack.TurnID != turnID {
		t.Fatalf("cancel acknowledged %+v, want accepted cancel_requested for %s", ack, turnID)
	}
	if again, err := p.CancelTurn(ctx, env.ID(), turnID, "cancel-served-hang"); err != nil || again.Status != contract.StatusReplayed {
		t.Fatalf("a re-sent cancel: %+v, %v; want replayed", again, err)
	}
	select {
	case evs := <-ended:
		if len(evs) == 0 {
			t.Fatal("the cancelled turn streamed nothing")
		}
		if kind, _ := contract.EnvironmentEventTerminal(evs[len(evs)-1]); kind != contract.TerminalCancelled {
			t.Fatalf("the cancelled turn ended %q, want cancelled", kind)
		}
	case <-ctx.Done():
		t.Fatal("the cancelled turn never ended")
	}

	if err := env.Destroy(ctx); err != nil {
		t.Fatalf("destroy: %v", err)
	}
	// The server no longer runs turns in it: it is gone, or a fresh
	// handle's turn fails.
	got, err := p.Get(ctx, env.ID())
	if err != nil {
		t.Fatalf("get after destroy: %v", err)
	}
	if got != nil {
		for ev, err := range got.Stream(ctx, &contract.TurnInput{Prompt: profile.Ptr("after destroy")}) {
			if err != nil {
				break
			}
			if kind, ok := contract.EnvironmentEventTerminal(ev); ok && kind == contract.TerminalCompleted {
				t.Fatal("a destroyed environment completed a turn")
			}
		}
	}
}

// eventsText is the events as JSON lines, for a search and a report.
func eventsText(t *testing.T, events []contract.EnvironmentEvent) string {
	t.Helper()
	var b strings.Builder
	for _, ev := range events {
		v, err := canonjson.ToValue(ev)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(canonjson.Marshal(v))
		b.WriteByte('\n')
	}
	return b.String()
}
