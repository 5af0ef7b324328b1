package openai

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	sdk "github.com/openai/openai-go/v3"
)

// ErrStreamBroken is matched (errors.Is) by the error of a turn whose
// event stream ended before the endpoint said it was done (Chat
// Completions: no "data: [DONE]"; Responses: no response.completed,
// response.incomplete, response.failed or error event): a dropped
// connection, a truncated body. Such a turn never settles as a success,
// even when text arrived.
var ErrStreamBroken = errors.New("openai: the event stream ended before the endpoint said it was done")

// ErrMalformed is matched by the error of a turn whose stream carried
// something that is not a chat completion chunk or Responses event.
var ErrMalformed = errors.New("openai: malformed stream chunk")

// APIError is an HTTP error the endpoint answered a request with (401,
// 429, 5xx, …), after the bounded retries were spent. Retryability is
// data: callers decide with errors.As, never by parsing text. It never
// carries the API key, and for authentication failures (401, 403) not
// even the endpoint's message, which may echo part of the key.
type APIError struct {
	// StatusCode is the HTTP status.
	StatusCode int
	// Type and Code are the error object's type and code, when sent.
	Type, Code string
	// Message is the endpoint's message ("" for 401 and 403).
	Message string
	// Retryable reports whether the same request may succeed later: a
	// rate limit (429), a timeout (408), a conflict (409) or a server
	// error (5xx).
	Retryable bool
	// RetryAfter is how long the endpoint asked the caller to wait
	// (Retry-After-Ms or Retry-After); 0 when it did not say.
	RetryAfter time.Duration
}

// HTTPStatus is the status the endpoint answered with: what a caller
// reporting a transport failure names (taskstream's backend_error).
func (e *APIError) HTTPStatus() int { return e.StatusCode }

func (e *APIError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "openai: HTTP %d", e.StatusCode)
	if t := http.StatusText(e.StatusCode); t != "" {
		b.WriteString(" " + t)
	}
	if e.Code != "" {
		b.WriteString(" (" + e.Code + ")")
	}
	if e.Message != "" {
		b.WriteString(": " + e.Message)
	}
	if e.RetryAfter > 0 {
		fmt.Fprintf(&b, "; retry after %v", e.RetryAfter)
	}
	return b.String()
}

// summary is the error in a few words, without the endpoint's message:
// the status and the error object's code or type.
func (e *APIError) summary() string {
	s := fmt.Sprintf("HTTP %d", e.StatusCode)
	if t := http.StatusText(e.StatusCode); t != "" {
		s += " " + t
	}
	switch {
	case e.Code != "":
		s += " (" + e.Code + ")"
	case e.Type != "":
		s += " (" + e.Type + ")"
	}
	return s
}

// retryableStatus is the one rule of which statuses may succeed on retry
// (the set the SDK's own retries used); an X-Should-Retry header
// overrides it.
func retryableStatus(code int) bool {
	return code == http.StatusRequestTimeout || code == http.StatusConflict ||
		code == http.StatusTooManyRequests || code >= http.StatusInternalServerError
}

// apiError converts the SDK's error, scrubbing secret out of everything it
// keeps.
func apiError(e *sdk.Error, secret string) *APIError {
	out := &APIError{StatusCode: e.StatusCode, Type: scrub(e.Type, secret), Code: scrub(e.Code, secret),
		Retryable: retryableStatus(e.StatusCode)}
	if e.StatusCode != http.StatusUnauthorized && e.StatusCode != http.StatusForbidden {
		out.Message = scrub(e.Message, secret)
	}
	if e.Response != nil {
		out.RetryAfter = retryAfter(e.Response.Header)
		// The endpoint may say outright whether a retry can help.
		switch e.Response.Header.Get("X-Should-Retry") {
		case "true":
			out.Retryable = true
		case "false":
			out.Retryable = false
		}
	}
	return out
}

// retryAfter reads Retry-After-Ms, then Retry-After (seconds or an HTTP
// date); 0 when neither says.
func retryAfter(h http.Header) time.Duration {
	if ms, err := strconv.ParseFloat(h.Get("Retry-After-Ms"), 64); err == nil && ms > 0 {
		return time.Duration(ms * float64(time.Millisecond))
	}
	v := h.Get("Retry-After")
	if s, err := strconv.ParseFloat(v, 64); err == nil && s > 0 {
		return time.Duration(s * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0)
	}
	return 0
}

// scrub removes secret from s.
func scrub(s, secret string) string {
	if secret == "" || !strings.Contains(s, secret) {
		return s
	}
	return strings.ReplaceAll(s, secret, "[redacted]")
}

// scrubbedError is an error whose text had the secret removed; it still
// unwraps to the original so errors.Is (context.Canceled, …) works.
type scrubbedError struct {
	msg string
	err error
}

func (e *scrubbedError) Error() string { return e.msg }
func (e *scrubbedError) Unwrap() error { return e.err }

// transportError wraps a transport failure for the caller: the text never
// holds the secret.
func transportError(err error, secret string) error {
	msg := "openai: " + err.Error()
	return &scrubbedError{msg: scrub(msg, secret), err: err}
}
