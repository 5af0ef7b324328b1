package taskstream

import (
	"errors"
	"fmt"
	"time"

	"github.com/agentrt/agentrt/canonjson"
)

// Event types of the task stream (spec runtime §2.4).
const (
	EventTaskStart        = "task_start"
	EventReadinessStart   = "readiness_start"
	EventReadinessEnd     = "readiness_end"
	EventQuestionsStart   = "questions_start"
	EventQuestionsEnd     = "questions_end"
	EventAcquisitionStart = "acquisition_start"
	EventAcquisitionEnd   = "acquisition_end"
	EventSessionCreated   = "session_created"
	EventSessionResumed   = "session_resumed"
	EventBackendStart     = "backend_start"
	EventTextDelta        = "text_delta"
	EventReasoningDelta   = "reasoning_delta"
	EventToolCall         = "tool_call"
	EventToolResult       = "tool_result"
	EventLLMCall          = "llm_call"
	EventBackendError     = "backend_error"
	EventBackendEnd       = "backend_end"
	EventTaskEnd          = "task_end"
	EventFinal            = "final"
)

// Status is how a task ended.
type Status string

// Task statuses.
const (
	StatusCompleted Status = "completed"
	StatusBlocked   Status = "blocked"
	StatusFailed    Status = "failed"
	StatusAborted   Status = "aborted"
)

// Event is one event of the task stream. Type says which members are
// set; the JSON form omits the others.
type Event struct {
	Type      string    `json:"type"`
	Timestamp time.Time `json:"timestamp"`
	TaskID    string    `json:"taskId,omitzero"`
	Session   *Session  `json:"session,omitzero"`
	// Backend names the backend (backend_start, backend_end,
	// backend_error).
	Backend string `json:"backend,omitzero"`

	// readiness_end
	Knowledge *Readiness `json:"knowledge,omitzero"`
	Decision  *Decision  `json:"decision,omitzero"`
	// questions_*, acquisition_*
	Questions           []Question        `json:"questions,omitzero"`
	UserAnswers         map[string]string `json:"userAnswers,omitzero"`
	AcquisitionPlans    []AcquisitionPlan `json:"acquisitionPlans,omitzero"`
	AcquiredEvidenceIDs []string          `json:"acquiredEvidenceIds,omitzero"`

	// Text is the delta of a text_delta or reasoning_delta event, and
	// the turn's accumulated text on final.
	Text string `json:"text,omitzero"`
	// tool_call, tool_result
	ToolName   string          `json:"toolName,omitzero"`
	ToolCallID string          `json:"toolCallId,omitzero"`
	Args       canonjson.Value `json:"args,omitzero"`
	Result     canonjson.Value `json:"result,omitzero"`
	// llm_call
	LLMCall *LLMCall `json:"llmCall,omitzero"`

	// backend_error
	Message     string              `json:"message,omitzero"`
	Recoverable *bool               `json:"recoverable,omitzero"`
	Error       *BackendErrorDetail `json:"error,omitzero"`

	// task_end, final
	Status Status `json:"status,omitzero"`
	Reason string `json:"reason,omitzero"`
}

// LLMCall is one model call a backend reports. Unknown counts are nil,
// never zero; TokensKnown and USDKnown say whether the reported numbers
// are complete.
type LLMCall struct {
	Model        string   `json:"model"`
	TokensIn     *int64   `json:"tokensIn,omitzero"`
	TokensOut    *int64   `json:"tokensOut,omitzero"`
	CostUSD      *float64 `json:"costUsd,omitzero"`
	LatencyMs    *int64   `json:"latencyMs,omitzero"`
	FinishReason string   `json:"finishReason,omitzero"`
	TokensKnown  bool     `json:"tokensKnown"`
	USDKnown     bool     `json:"usdKnown"`
}

// Kinds of a backend error.
const (
	ErrorKindTransport = "transport"
	ErrorKindBackend   = "backend"
)

// MaxErrorBody bounds the response body a transport error keeps (it is
// diagnostic only).
const MaxErrorBody = 2 << 10

// BackendErrorDetail is what a backend failure was: a transport failure
// with the HTTP status (0 when the connection failed or was aborted) and
// at most MaxErrorBody bytes of the body, or a backend failure.
type BackendErrorDetail struct {
	Kind    string `json:"kind"`
	Message string `json:"message"`
	Status  *int   `json:"status,omitzero"`
	Body    string `json:"body,omitzero"`
}

// TransportError is a backend failure at the transport: the HTTP status
// (0 for a connection that failed or was aborted) and the response body.
// A backend returns it (wrapped or not) so the stream can report it
// typed.
type TransportError struct {
	Status int
	Body   string
	Err    error
}

func (e *TransportError) Error() string {
	msg := fmt.Sprintf("transport error (status %d)", e.Status)
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Unwrap returns the underlying error.
func (e *TransportError) Unwrap() error { return e.Err }

// detailOf is the typed detail of a backend failure whose message is
// msg.
func detailOf(err error, msg string) *BackendErrorDetail {
	if te, ok := errors.AsType[*TransportError](err); ok {
		status := te.Status
		return &BackendErrorDetail{Kind: ErrorKindTransport, Message: msg, Status: &status, Body: truncateUTF8(te.Body, MaxErrorBody)}
	}
	return &BackendErrorDetail{Kind: ErrorKindBackend, Message: msg}
}

// truncateUTF8 cuts s to at most n bytes without splitting a UTF-8
// sequence.
func truncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && n < len(s) && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}

// SessionMismatchError is a resume of a session recorded under another
// backend kind.
type SessionMismatchError struct {
	SessionID       string
	RecordedBackend string
	Backend         string
}

func (e *SessionMismatchError) Error() string {
	return fmt.Sprintf("taskstream: session %s was recorded under backend %q, not %q", e.SessionID, e.RecordedBackend, e.Backend)
}
