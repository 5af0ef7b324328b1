package openai_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/providers/openai"
)

// lines writes a turn's events one to a line, the error last.
func lines(evs []contract.ChatEvent, err error) string {
	var out []string
	for _, e := range evs {
		switch e.Kind {
		case contract.ChatText:
			out = append(out, "text "+e.Text)
		case contract.ChatToolCall:
			out = append(out, "call "+e.ToolCall.ID+" "+e.ToolCall.Name)
		case contract.ChatUsage:
			out = append(out, fmt.Sprintf("usage %s in=%d out=%d", e.UsageMode, e.Usage.InputTokens, e.Usage.OutputTokens))
		case contract.ChatServed:
			out = append(out, "served "+e.Model)
		case contract.ChatFailure:
			out = append(out, "failure")
		}
	}
	if err != nil {
		out = append(out, "error")
	}
	return strings.Join(out, " | ")
}

// endTurn runs one turn of hello() over transcript name, ending it as
// how says: "" lets it run, "timeout" gives it a 100ms deadline, "cancel"
// cancels it at its first text.
func endTurn(t *testing.T, name string, api openai.API, how string) ([]contract.ChatEvent, error) {
	t.Helper()
	_, m := replay(t, name, openai.Options{API: api})
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if how == "timeout" {
		ctx, cancel = context.WithTimeout(ctx, 100*time.Millisecond)
		defer cancel()
	}
	var evs []contract.ChatEvent
	for e, err := range m.Turn(ctx, hello(), nil) {
		if err != nil {
			return evs, err
		}
		evs = append(evs, e)
		if how == "cancel" && e.Kind == contract.ChatText {
			cancel()
		}
	}
	return evs, nil
}

// ERR-04, RG-02: a turn that ends early (cut, timed out, cancelled, or
// failed in-band) has handed over, before its error or failure, the
// served model the first chunk (Responses: response.created) named and
// the text so far. Neither API sends usage before the end in these
// transcripts (Chat Completions only in its last chunk, Responses on its
// terminal response), so no usage is reported: unknown, never 0.
func TestEarlyEndingKeepsWhatWasKnown(t *testing.T) {
	for _, api := range []struct {
		api    openai.API
		prefix string
	}{{openai.APIChatCompletions, ""}, {openai.APIResponses, "responses/"}} {
		for _, c := range []struct {
			name, transcript, how, want string
			err                         error
		}{
			{"cut", "dropped", "", "served gpt-5.2 | text Hel | text lo | error", openai.ErrStreamBroken},
			{"timeout", "hang", "timeout", "served gpt-5.2 | text Thinking | error", context.DeadlineExceeded},
			{"cancelled", "hang", "cancel", "served gpt-5.2 | text Thinking | error", context.Canceled},
			{"in-band error", "inband_error", "", "served gpt-5.2 | text Hel | failure", nil},
		} {
			t.Run(string(api.api)+"/"+c.name, func(t *testing.T) {
				evs, err := endTurn(t, api.prefix+c.transcript, api.api, c.how)
				if !errors.Is(err, c.err) || (c.err == nil) != (err == nil) {
					t.Fatalf("err %v, want %v", err, c.err)
				}
				if got := lines(evs, err); got != c.want {
					t.Errorf("events %s, want %s", got, c.want)
				}
			})
		}
	}
}

// A call of a tool that was not offered is still yielded (it is not the
// model's to judge); the kernel's tool loop records it as ignored rather
// than running it or dropping it (examples/openai-compatible shows that
// over these transcripts: providers do not import the kernel).
func TestUnofferedToolCallLeavesATrace(t *testing.T) {
	for _, api := range []struct {
		api        openai.API
		transcript string
		want       string
	}{
		{openai.APIChatCompletions, "tool_unoffered", "served gpt-5.2 | call call_Gh01 send_greeting | usage cumulative in=19 out=12"},
		{openai.APIResponses, "responses/tool_unoffered", "served gpt-5.2 | call call_Gh01 send_greeting | usage cumulative in=19 out=12"},
	} {
		t.Run(string(api.api)+"/model", func(t *testing.T) {
			evs, err := endTurn(t, api.transcript, api.api, "")
			if got := lines(evs, err); got != api.want {
				t.Errorf("events %s, want %s", got, api.want)
			}
		})
	}
}
