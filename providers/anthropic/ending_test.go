package anthropic_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/contract/providertest"
	"github.com/agentrt/agentrt/providers/anthropic"
	"github.com/agentrt/agentrt/providers/chatprovider/chatprovidertest"
)

// stream is a Messages API event stream: message_start with usage, the
// given content events, message_delta with stopReason (JSON, "null" for
// none) and the output so far, message_stop.
func stream(usage, content, stopReason string) string {
	return "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"model\":\"" + testModel + "\",\"usage\":" + usage + "}}\n\n" +
		content +
		"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":" + stopReason + "},\"usage\":{\"output_tokens\":5}}\n\n" +
		"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
}

const textBlock = "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n" +
	"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Part\"}}\n\n" +
	"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n"

// providerOver streams "Say hello." through the Provider over a transport
// answering body.
func providerOver(t *testing.T, body string) ([]contract.EnvironmentEvent, error) {
	t.Helper()
	p := newProvider(t, "http://anthropic.invalid", &http.Client{Transport: &bodyTransport{body: []byte(body)}})
	env, err := p.Create(t.Context(), profileInput(t, terseProfile))
	if err != nil {
		t.Fatal(err)
	}
	return providertest.Collect(env.Stream(t.Context(), &contract.TurnInput{Prompt: str("Say hello.")}))
}

// Each stop_reason ends the turn as an answer or as a failure, the rule
// Chat Completions' finish_reason follows (RG-03: a turn the model did not
// finish never settles as a success). The usage and text that came before
// the verdict are yielded before it.
func TestStopReasons(t *testing.T) {
	for _, c := range []struct {
		reason  string // JSON
		failure string // "" for an answer
	}{
		{`"end_turn"`, ""},
		{`"stop_sequence"`, ""},
		{`"tool_use"`, ""},
		{`"max_tokens"`, "the response was cut at its token limit (stop_reason max_tokens)"},
		{`"model_context_window_exceeded"`, "the response was cut at the model's context window (stop_reason model_context_window_exceeded)"},
		{`"refusal"`, "refusal: the API stopped the response for policy reasons (stop_reason refusal)"},
		{`"pause_turn"`, "the API paused the turn, which cannot be resumed here: the answer is unfinished (stop_reason pause_turn)"},
		{`null`, "the message ended without a stop_reason"},
		{`"sleepy"`, "the response stopped with an unknown reason (stop_reason sleepy)"},
	} {
		body := stream(`{"input_tokens":9,"output_tokens":1}`, textBlock, c.reason)
		t.Run("model/"+c.reason, func(t *testing.T) {
			want := []string{
				"usage cumulative in=9 out=1 cache_read=? cache_write=? reasoning=?",
				"text Part",
				"usage cumulative in=9 out=5 cache_read=? cache_write=? reasoning=?",
			}
			if c.failure != "" {
				want = append(want, "failure "+c.failure)
			}
			expect(t, over(t, &bodyTransport{body: []byte(body)}, anthropic.Options{}), hello, nil, want)
		})
		t.Run("provider/"+c.reason, func(t *testing.T) {
			evs, err := providerOver(t, body)
			if err != nil {
				t.Fatal(err)
			}
			last, kind := chatprovidertest.Terminal(t, evs)
			switch {
			case c.failure == "" && kind != contract.TerminalCompleted:
				t.Errorf("terminal %s %v, want completed", last.Type, kind)
			case c.failure != "" && (kind != contract.TerminalFailed || last.Data["error"].Str() != c.failure):
				t.Errorf("terminal %s %v %q, want failed with %q", last.Type, kind, last.Data["error"].Str(), c.failure)
			}
		})
	}
}

// Spec runtime §2.1: InputTokens is the whole prompt on every provider.
// The API's input_tokens excludes the cache, so the cache reads and
// writes are added in and stay broken out beside it; a cache counter the
// endpoint did not send (absent or null) stays unknown and adds nothing.
func TestInputTokensIncludeTheCache(t *testing.T) {
	for _, c := range []struct {
		name, usage, want string
	}{
		{"both counters", `{"input_tokens":10,"cache_read_input_tokens":300,"cache_creation_input_tokens":40,"output_tokens":1}`,
			"usage cumulative in=350 out=1 cache_read=300 cache_write=40 reasoning=?"},
		{"zero counters", `{"input_tokens":10,"cache_read_input_tokens":0,"cache_creation_input_tokens":0,"output_tokens":1}`,
			"usage cumulative in=10 out=1 cache_read=0 cache_write=0 reasoning=?"},
		{"only a read", `{"input_tokens":10,"cache_read_input_tokens":300,"output_tokens":1}`,
			"usage cumulative in=310 out=1 cache_read=300 cache_write=? reasoning=?"},
		{"null counters", `{"input_tokens":10,"cache_read_input_tokens":null,"cache_creation_input_tokens":null,"output_tokens":1}`,
			"usage cumulative in=10 out=1 cache_read=? cache_write=? reasoning=?"},
		{"no counters", `{"input_tokens":10,"output_tokens":1}`,
			"usage cumulative in=10 out=1 cache_read=? cache_write=? reasoning=?"},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := over(t, &bodyTransport{body: []byte(stream(c.usage, "", `"end_turn"`))}, anthropic.Options{})
			got, err := drain(t.Context(), m, hello, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 2 || got[0] != c.want {
				t.Fatalf("events %q, want %q first", got, c.want)
			}
			// message_delta's output report keeps the input side.
			if want := strings.Replace(c.want, "out=1", "out=5", 1); got[1] != want {
				t.Errorf("second report %q, want %q", got[1], want)
			}
		})
	}
}

// endTurn runs one turn of hello over transcript name, ending it as how
// says: "" lets it run, "timeout" gives it a 100ms deadline, "cancel"
// cancels it at its first text. It returns every event, served model
// included, and the error as a last "error" line.
func endTurn(t *testing.T, name, how string) ([]string, error) {
	t.Helper()
	m, _ := serve(t, name, anthropic.Options{})
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if how == "timeout" {
		ctx, cancel = context.WithTimeout(ctx, 100*time.Millisecond)
		defer cancel()
	}
	var got []string
	for e, err := range m.Turn(ctx, hello, nil) {
		if err != nil {
			return append(got, "error"), err
		}
		got = append(got, show(e))
		if how == "cancel" && e.Kind == contract.ChatText {
			cancel()
		}
	}
	return got, nil
}

// ERR-04, RG-02: a turn that ends early (cut, timed out, cancelled, or
// failed in-band after message_start) has handed over, before its error
// or failure, the served model and the usage message_start reported (a
// cumulative running total: the kernel records it as a floor) and the
// text so far.
func TestEarlyEndingKeepsWhatWasKnown(t *testing.T) {
	const start = "usage cumulative in=25 out=1 cache_read=? cache_write=? reasoning=?"
	for _, c := range []struct {
		name, transcript, how string
		want                  []string
		err                   error
	}{
		{"cut", "dropped", "", []string{"served " + testModel, start, "text Hello", "error"}, anthropic.ErrStreamBroken},
		{"timeout", "hang", "timeout", []string{"served " + testModel, start, "text Thinking about it", "error"}, context.DeadlineExceeded},
		{"cancelled", "hang", "cancel", []string{"served " + testModel, start, "text Thinking about it", "error"}, context.Canceled},
		{"in-band error", "inband_error", "", []string{"served " + testModel, start, "text Hel", "failure overloaded_error: Overloaded"}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := endTurn(t, c.transcript, c.how)
			if !errors.Is(err, c.err) || (c.err == nil) != (err == nil) {
				t.Fatalf("err %v, want %v", err, c.err)
			}
			check(t, got, c.want)
		})
	}
}

// A tool_use stop whose call names a tool that was not offered still
// yields the call (the model does not judge it); the kernel's tool loop
// records it as ignored — neither run nor dropped (examples/
// anthropic-messages shows that over this transcript: providers do not
// import the kernel).
func TestUnofferedToolCallLeavesATrace(t *testing.T) {
	t.Run("model", func(t *testing.T) {
		got, err := endTurn(t, "tool_unoffered", "")
		if err != nil {
			t.Fatal(err)
		}
		check(t, got, []string{
			"served " + testModel,
			"usage cumulative in=25 out=1 cache_read=0 cache_write=0 reasoning=?",
			"text Let me greet.",
			`call toolu_01Ghost send_greeting {"to":"world"}`,
			"usage cumulative in=25 out=31 cache_read=0 cache_write=0 reasoning=?",
		})
	})
}
