package anthropic

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/harness"
)

// APIVersion is the anthropic-version every request names: the one
// anthropic-sdk-go v2.15.0 was generated for, pinned here so that a
// dependency update cannot change the wire version unseen.
const APIVersion = "2026-10-21"

// Model is a contract.ChatModel over the Anthropic Messages API, one
// streamed request per turn. It is safe for concurrent use. It keeps no
// transcript; the only state it holds is the thinking blocks of its own
// recent tool-calling turns, which the API needs back (see doc.go).
type Model struct {
	o       Options
	client  sdk.Client
	budget  int64  // thinking budget_tokens; 0 sends no thinking parameter
	applied string // the native effort token applied, "" when none

	thoughts thoughts
}

var _ contract.ChatModel = (*Model)(nil)

// NewModel returns a model configured by opts. Invalid options match
// ErrInvalidOptions; an effort the model cannot honour is an
// *EffortError. Nothing is sent.
func NewModel(opts Options) (*Model, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	m := &Model{o: o}
	m.budget, m.applied = ThinkingBudget(o.Effort)
	copts := []option.RequestOption{
		option.WithoutEnvironmentDefaults(),
		option.WithBaseURL(o.BaseURL),
		option.WithHTTPClient(o.HTTPClient),
		option.WithMaxRetries(0), // Turn retries, and only before any event
		option.WithHeader("anthropic-version", APIVersion),
	}
	if o.APIKey != "" {
		// The API's own header, not the SDK's bearer form.
		copts = append(copts, option.WithHeader("x-api-key", o.APIKey))
	}
	m.client = sdk.NewClient(copts...)
	return m, nil
}

// RequestedModel returns the model every request names.
func (m *Model) RequestedModel() string { return m.o.Model }

// AppliedEffort returns the effort asked for and the native effort token
// the thinking budget was taken from (what a receipt records as applied),
// with false when no thinking parameter is sent.
func (m *Model) AppliedEffort() (harness.ReasoningEffort, string, bool) {
	return m.o.Effort, m.applied, m.budget > 0
}

// Turn implements contract.ChatModel: it sends one streaming Messages API
// request built from messages and tools and yields the text, tool calls
// and cumulative usage of the response as they arrive.
//
// The request is built when Turn is called; messages and tools are not
// read afterwards. A refusal with a retryable status before any event is
// retried up to Options.MaxRetries times (honouring retry-after within
// Options.MaxRetryWait); the last refusal is the sequence's *APIError. An
// in-band error event ends the turn with a ChatFailure event. A response
// that ends before message_stop yields an error matching ErrStreamBroken;
// ctx ending an error wrapping ctx's error. The served model is reported
// (a ChatServed event first), never judged.
func (m *Model) Turn(ctx context.Context, messages []contract.ChatMessage, tools []contract.Tool) iter.Seq2[contract.ChatEvent, error] {
	params := m.params(messages, tools)
	return func(yield func(contract.ChatEvent, error) bool) {
		if err := m.turn(ctx, params, yield); err != nil {
			yield(contract.ChatEvent{}, err)
		}
	}
}

// turn runs the attempts of one turn; a returned error is the sequence's
// last item.
func (m *Model) turn(ctx context.Context, params sdk.MessageNewParams, yield func(contract.ChatEvent, error) bool) error {
	for attempt := 1; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return cancelled(ctx)
		}
		retry, err := m.attempt(ctx, params, attempt, yield)
		if retry == 0 {
			return err
		}
		r := contract.ModelRetry{Attempt: attempt + 1, Delay: retry}
		if e, ok := errors.AsType[*APIError](err); ok {
			r.Status, r.Reason = e.StatusCode, e.summary()
		}
		// The refusal is shown, not returned: the turn goes on.
		if !yield(contract.RetryEvent(r), nil) {
			return nil
		}
		t := time.NewTimer(retry)
		select {
		case <-ctx.Done():
			t.Stop()
			return cancelled(ctx)
		case <-t.C:
		}
	}
}

// attempt sends the request once and streams its response. It returns a
// wait before the next attempt when the request should be sent again,
// with the refusal that makes it (an *APIError), else 0 and the turn's
// error (nil for a turn that ended normally or in a ChatFailure).
func (m *Model) attempt(ctx context.Context, params sdk.MessageNewParams, attempt int, yield func(contract.ChatEvent, error) bool) (time.Duration, error) {
	stream := m.client.Messages.NewStreaming(ctx, params)
	defer stream.Close()
	st := turnState{m: m}
	emit := func(e contract.ChatEvent) bool { return yield(e, nil) }
	for stream.Next() {
		ev := stream.Current()
		more, err := st.event(&ev, emit)
		if err != nil {
			return 0, err
		}
		if !more || st.stopped {
			// The caller stopped ranging, or the message is complete:
			// nothing after message_stop is read.
			return 0, nil
		}
	}
	err := stream.Err()
	if err == nil {
		if !st.stopped {
			return 0, fmt.Errorf("%w: the response ended after %s", ErrStreamBroken, progress(&st))
		}
		return 0, nil
	}
	if ctx.Err() != nil {
		return 0, cancelled(ctx)
	}
	var aerr *sdk.Error
	if !errors.As(err, &aerr) {
		if !st.started {
			return 0, m.wrap(errors.New("anthropic: the request failed"), err)
		}
		return 0, m.wrap(ErrStreamBroken, err)
	}
	if aerr.StatusCode >= 200 && aerr.StatusCode < 300 {
		// An error event inside a successful response: the API reports
		// that the turn failed.
		msg := string(aerr.Type())
		if aerr.Message != "" {
			msg += ": " + aerr.Message
		}
		if msg == "" {
			msg = "the API sent an error event"
		}
		yield(contract.ChatEvent{Kind: contract.ChatFailure, Failure: m.redact(msg)}, nil)
		return 0, nil
	}
	e := &APIError{
		StatusCode: aerr.StatusCode,
		Type:       string(aerr.Type()),
		Message:    m.redact(aerr.Message),
		RequestID:  aerr.RequestID,
		Retryable:  retryableStatus(aerr.StatusCode),
		Attempts:   attempt,
	}
	if aerr.Response != nil {
		h := aerr.Response.Header
		e.RetryAfter = retryAfter(h, time.Now())
		// The API may say outright whether a retry can help.
		switch h.Get("x-should-retry") {
		case "true":
			e.Retryable = true
		case "false":
			e.Retryable = false
		}
	}
	if !e.Retryable || attempt > m.o.MaxRetries {
		return 0, e
	}
	wait := e.RetryAfter
	if wait == 0 {
		// Doubling stops at MaxRetryWait, before the shift could
		// overflow into a negative wait.
		wait = m.o.RetryBackoff
		for n := 1; n < attempt && wait < m.o.MaxRetryWait; n++ {
			wait *= 2
		}
		wait = min(wait, m.o.MaxRetryWait)
	}
	if wait > m.o.MaxRetryWait {
		return 0, e
	}
	return max(wait, time.Nanosecond), e
}

// progress says how far a broken response got.
func progress(st *turnState) string {
	switch {
	case !st.started:
		return "no events"
	case len(st.blocks) > 0:
		return "an open content block"
	}
	return "message_start, without message_stop"
}

// cancelled is the error of a turn ctx ended.
func cancelled(ctx context.Context) error {
	return fmt.Errorf("anthropic: the turn was cut short: %w", ctx.Err())
}

// redact removes the API key from text that came from elsewhere (an error
// a server or transport wrote), should it appear there.
func (m *Model) redact(s string) string {
	if m.o.APIKey == "" {
		return s
	}
	return strings.ReplaceAll(s, m.o.APIKey, "[redacted]")
}

// wrap returns "outer: cause" matching both, unless cause's text carries
// the API key: then the cause is replaced by its redacted text.
func (m *Model) wrap(outer, cause error) error {
	text := cause.Error()
	if red := m.redact(text); red != text {
		return fmt.Errorf("%w: %s", outer, red)
	}
	return fmt.Errorf("%w: %w", outer, cause)
}

// retryAfter reads the wait a refusal asks for: retry-after-ms
// (milliseconds), else retry-after (seconds, or an HTTP date); 0 when
// neither says.
func retryAfter(h http.Header, now time.Time) time.Duration {
	if v := h.Get("retry-after-ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 && ms < math.MaxInt64/float64(time.Millisecond) {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := h.Get("retry-after")
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s > 0 && s < math.MaxInt64/float64(time.Second) {
			return time.Duration(s * float64(time.Second))
		}
		return 0
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}
