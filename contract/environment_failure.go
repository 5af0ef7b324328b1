package contract

import (
	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/schema"
)

// KindExecutionFailureReceipt names the receipt of a failed execution (no
// reference vectors).
const KindExecutionFailureReceipt = "AgentExecutionFailureReceipt"

// ExecutionFailureReceipt is what an adapter observed of an execution it
// rejects: the token usage and the timing it saw. It is a lower bound, not
// complete accounting, and never evidence of success. Absent members are
// unknown, never zero: a failure before any inference has the empty
// receipt {}. Hosts keep it when they publish a failed or cancelled
// execution.
type ExecutionFailureReceipt struct {
	TokenUsage *PartialTokenUsage `json:"tokenUsage,omitzero"`
	Timing     *ExecutionTiming   `json:"timing,omitzero"`
}

// PartialTokenUsage is token usage in which every count is optional: a nil
// count was not observed (unknown), never zero.
type PartialTokenUsage struct {
	InputTokens              *int64   `json:"inputTokens,omitzero"`
	OutputTokens             *int64   `json:"outputTokens,omitzero"`
	TotalTokens              *int64   `json:"totalTokens,omitzero"`
	CacheReadInputTokens     *int64   `json:"cacheReadInputTokens,omitzero"`
	CacheCreationInputTokens *int64   `json:"cacheCreationInputTokens,omitzero"`
	ReasoningTokens          *int64   `json:"reasoningTokens,omitzero"`
	Cost                     *float64 `json:"cost,omitzero"`
}

// ExecutionTiming is the observed timing of an execution: start and
// completion (epoch milliseconds) and the duration in milliseconds, all
// finite and non-negative.
type ExecutionTiming struct {
	StartedAt   float64 `json:"startedAt"`
	CompletedAt float64 `json:"completedAt"`
	DurationMs  float64 `json:"durationMs"`
}

var (
	envMillis = schema.Number(schema.NonNegative)

	// PartialTokenUsageSchema is TokenUsageSchema with every member
	// optional.
	PartialTokenUsageSchema = schema.Object(envOptionalFields(TokenUsageSchema)...)

	// ExecutionFailureReceiptSchema is the strict
	// AgentExecutionFailureReceipt shape: non-negative integer token
	// counts, a finite non-negative cost and timing.
	ExecutionFailureReceiptSchema = schema.Object(
		schema.Opt("tokenUsage", PartialTokenUsageSchema),
		schema.Opt("timing", schema.Object(
			schema.Req("startedAt", envMillis),
			schema.Req("completedAt", envMillis),
			schema.Req("durationMs", envMillis),
		)),
	)
)

// envOptionalFields returns o's fields, each made optional.
func envOptionalFields(o *schema.ObjectNode) []schema.Field {
	fields := o.Fields()
	for i := range fields {
		fields[i].Optional = true
	}
	return fields
}

// ParseExecutionFailureReceipt decodes and validates a failure receipt.
func ParseExecutionFailureReceipt(data []byte) (*ExecutionFailureReceipt, error) {
	return Parse[ExecutionFailureReceipt](KindExecutionFailureReceipt, ExecutionFailureReceiptSchema, data)
}

// ExecutionError is an adapter's rejection of an execution that keeps
// what it observed (AgentExecutionError): a message, an immutable receipt
// of the observed usage and timing, and optionally the cause it wraps.
// Match it with errors.As; the cause is reachable with errors.Unwrap.
type ExecutionError struct {
	message string
	receipt canonjson.Value // the validated receipt, never shared
	cause   error
}

// NewExecutionError builds an execution error around a copy of receipt.
// An invalid receipt (a negative or fractional token count, a negative or
// non-finite time) is refused with a *schema.Error: a receipt never
// carries invented or impossible numbers.
func NewExecutionError(message string, receipt ExecutionFailureReceipt, cause error) (*ExecutionError, error) {
	v, err := Validate(KindExecutionFailureReceipt, ExecutionFailureReceiptSchema, receipt)
	if err != nil {
		return nil, err
	}
	return &ExecutionError{message: message, receipt: v, cause: cause}, nil
}

// Error returns the message.
func (e *ExecutionError) Error() string { return e.message }

// Unwrap returns the cause, or nil.
func (e *ExecutionError) Unwrap() error { return e.cause }

// Message returns the message.
func (e *ExecutionError) Message() string { return e.message }

// Receipt returns a fresh copy of the receipt: changing it does not change
// the error.
func (e *ExecutionError) Receipt() ExecutionFailureReceipt {
	var r ExecutionFailureReceipt
	if e.receipt.IsValid() {
		_ = canonjson.FromValue(e.receipt, &r) // validated at construction
	}
	return r
}
