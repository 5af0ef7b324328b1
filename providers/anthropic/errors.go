package anthropic

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/agentrt/agentrt/harness"
)

// ErrInvalidOptions matches the error of NewModel when its Options are
// invalid; no model was made.
var ErrInvalidOptions = errors.New("anthropic: invalid options")

// ErrStreamBroken matches the stream error of a turn whose response ended
// before the API's message_stop event: a dropped connection, a body cut
// short, or an event stream that could not be decoded. Such a turn is
// never a success, whatever it yielded before.
var ErrStreamBroken = errors.New("anthropic: the response stream broke before message_stop")

// APIError is the stream error of a turn the Messages API refused with an
// HTTP error status before streaming began (401, 429, 529, 5xx, …). It is
// data: Retryable says whether the same request may succeed later, and
// RetryAfter is how long the server asked to wait (0 when it did not say).
// Turn already retried a retryable error as far as Options allowed;
// Attempts says how many requests were made.
type APIError struct {
	// StatusCode is the HTTP status of the refusal.
	StatusCode int
	// Type is the body's error.type ("authentication_error",
	// "rate_limit_error", "overloaded_error", "api_error", …), "" when the
	// body had none.
	Type string
	// Message is the body's error.message (with the API key, should a
	// server echo it, redacted).
	Message string
	// RequestID is the response's request-id header, "" when absent.
	RequestID string
	// Retryable is what the response's x-should-retry header says, and
	// without it true for 408, 409, 429 and every 5xx status (529 is
	// Anthropic's "overloaded").
	Retryable bool
	// RetryAfter is the wait the server asked for (retry-after-ms or
	// retry-after), 0 when it asked for none.
	RetryAfter time.Duration
	// Attempts is how many requests the turn made, this one included.
	Attempts int
}

// HTTPStatus is the status the endpoint answered with: what a caller
// reporting a transport failure names (taskstream's backend_error).
func (e *APIError) HTTPStatus() int { return e.StatusCode }

func (e *APIError) Error() string {
	var b strings.Builder
	b.WriteString("anthropic: HTTP ")
	b.WriteString(strconv.Itoa(e.StatusCode))
	if e.Type != "" {
		b.WriteString(" ")
		b.WriteString(e.Type)
	}
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	if e.RequestID != "" {
		b.WriteString(" (request ")
		b.WriteString(e.RequestID)
		b.WriteString(")")
	}
	if e.Attempts > 1 {
		fmt.Fprintf(&b, " after %d attempts", e.Attempts)
	}
	return b.String()
}

// summary is the refusal in a few words, without the body's message:
// the status and the error type.
func (e *APIError) summary() string {
	s := "HTTP " + strconv.Itoa(e.StatusCode)
	if t := http.StatusText(e.StatusCode); t != "" {
		s += " " + t
	}
	if e.Type != "" {
		s += " (" + e.Type + ")"
	}
	return s
}

// retryableStatus reports whether a request refused with status may
// succeed when sent again.
func retryableStatus(status int) bool {
	return status == 408 || status == 409 || status == 429 || status >= 500
}

// EffortError is the error of NewModel when the requested reasoning
// effort cannot be honoured by the model: the effort is not on the
// Anthropic ladder, the model does not reason, the effort is above the
// model's ceiling, or its thinking budget does not fit under MaxTokens.
// Nothing was sent.
type EffortError struct {
	// Effort is the effort asked for.
	Effort harness.ReasoningEffort
	// Allowed are the efforts this model honours.
	Allowed []harness.ReasoningEffort
	// Reason says why Effort was refused.
	Reason string
}

func (e *EffortError) Error() string {
	names := make([]string, len(e.Allowed))
	for i, a := range e.Allowed {
		names[i] = string(a)
	}
	return fmt.Sprintf("anthropic: reasoning effort %q refused: %s (honoured: %s)", e.Effort, e.Reason, strings.Join(names, ", "))
}
