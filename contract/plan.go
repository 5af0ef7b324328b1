package contract

import (
	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/schema"
)

// Kind names of plans and execution outcomes.
const (
	KindPlanProviderState     = "PlanProviderState"
	KindDurablePlan           = "DurablePlan"
	KindPlanSubmission        = "PlanSubmission"
	KindPlanDecision          = "PlanDecision"
	KindPlanContinuation      = "PlanContinuation"
	KindAgentExecutionOutcome = "AgentExecutionOutcome"
)

// PlanProviderKind names a harness with an enforceable durable-plan
// continuation contract.
type PlanProviderKind string

// Plan providers. The set is closed: plan support for another harness
// needs its own explicit resume contract.
const (
	PlanProviderClaudeCode PlanProviderKind = "claude-code"
	PlanProviderCodex      PlanProviderKind = "codex"
	PlanProviderOpencode   PlanProviderKind = "opencode"
)

// PlanProviderState is the credential-free provider correlation committed
// with a plan, enough to resume the deferred turn: Version is 1;
// claude-code carries NativeSessionID, codex carries ThreadID, opencode
// carries nothing more.
type PlanProviderState struct {
	Kind            PlanProviderKind `json:"kind"`
	Version         int              `json:"version"`
	NativeSessionID *string          `json:"nativeSessionId,omitzero"`
	ThreadID        *string          `json:"threadId,omitzero"`
}

// DurablePlan is a plan the runtime committed before the planning turn was
// allowed to end. The full body is part of the contract, so consumers
// never reconstruct it from rendered chat text. Title and Body are
// trimmed; SubmittedAt is an ISO 8601 timestamp that may carry an offset.
type DurablePlan struct {
	ID          string  `json:"id"`
	Revision    int64   `json:"revision"`
	Title       *string `json:"title,omitzero"`
	Body        string  `json:"body"`
	SubmittedAt string  `json:"submittedAt"`
}

// PlanSubmission is the provider-originated data that commits a plan
// exactly once: SourceToolCallID is the stable provider tool-call identity
// a retry after a lost acknowledgement reuses.
type PlanSubmission struct {
	Title            *string           `json:"title,omitzero"`
	Body             string            `json:"body"`
	SourceToolCallID string            `json:"sourceToolCallId"`
	ProviderState    PlanProviderState `json:"providerState"`
}

// Plan decision outcomes.
const (
	PlanApproved = "approved"
	PlanRejected = "rejected"
)

// PlanDecision is the human verdict that starts the next turn: approved,
// or rejected with (trimmed, non-empty) Feedback.
type PlanDecision struct {
	Outcome  string  `json:"outcome"`
	Feedback *string `json:"feedback,omitzero"`
}

// PlanContinuation is the typed, server-originated continuation of a
// planned turn (Version 1). Adapters consume it instead of inferring
// approval from a free-form user message; ProviderState is exactly what
// was committed with the submission.
type PlanContinuation struct {
	Version          int               `json:"version"`
	Plan             DurablePlan       `json:"plan"`
	SourceToolCallID string            `json:"sourceToolCallId"`
	Decision         PlanDecision      `json:"decision"`
	ProviderState    PlanProviderState `json:"providerState"`
}

// Execution outcome types.
const (
	ExecutionOutcomeCompleted            = "completed"
	ExecutionOutcomeAwaitingPlanDecision = "awaiting_plan_decision"
)

// AgentExecutionOutcome is the terminal meaning of a successfully
// completed adapter invocation: completed, or awaiting a decision on Plan.
type AgentExecutionOutcome struct {
	Type string       `json:"type"`
	Plan *DurablePlan `json:"plan,omitzero"`
}

var (
	intNonEmpty = schema.String(schema.MinLen(1))

	// intTrimmedText accepts a string and yields it trimmed of JavaScript
	// whitespace; the trimmed string must not be empty.
	intTrimmedText schema.Node = schema.NodeFunc(func(c *schema.Context, v canonjson.Value) canonjson.Value {
		if v.Kind() != canonjson.String {
			return schema.String().Check(c, v)
		}
		t := canonjson.TrimJS(v.Str())
		if t == "" {
			c.Check(schema.CodeTooSmall, "must not be empty or blank")
		}
		if t == v.Str() {
			return v
		}
		return canonjson.StringValue(t)
	})

	// PlanProviderStateSchema is the PlanProviderState shape.
	PlanProviderStateSchema = schema.Discriminated("kind", map[string]schema.Node{
		string(PlanProviderClaudeCode): intPlanState(PlanProviderClaudeCode, schema.Req("nativeSessionId", intNonEmpty)),
		string(PlanProviderCodex):      intPlanState(PlanProviderCodex, schema.Req("threadId", intNonEmpty)),
		string(PlanProviderOpencode):   intPlanState(PlanProviderOpencode),
	})

	// DurablePlanSchema is the DurablePlan shape (the plan.submitted
	// event's plan).
	DurablePlanSchema = schema.Object(
		schema.Req("id", intNonEmpty),
		schema.Req("revision", intInteger(schema.Positive)),
		schema.Opt("title", intTrimmedText),
		schema.Req("body", intTrimmedText),
		schema.Req("submittedAt", schema.String(schema.Matches("must be an ISO 8601 timestamp with Z or a ±hh:mm offset", IsOffsetDateTime))),
	)

	// PlanSubmissionSchema is the PlanSubmission shape.
	PlanSubmissionSchema = schema.Object(
		schema.Opt("title", intTrimmedText),
		schema.Req("body", intTrimmedText),
		schema.Req("sourceToolCallId", intNonEmpty),
		schema.Req("providerState", PlanProviderStateSchema),
	)

	// PlanDecisionSchema is the PlanDecision shape.
	PlanDecisionSchema = schema.Discriminated("outcome", map[string]schema.Node{
		PlanApproved: schema.Object(schema.Req("outcome", schema.LiteralString(PlanApproved))),
		PlanRejected: schema.Object(schema.Req("outcome", schema.LiteralString(PlanRejected)), schema.Req("feedback", intTrimmedText)),
	})

	// PlanContinuationSchema is the PlanContinuation shape.
	PlanContinuationSchema = schema.Object(
		schema.Req("version", schema.Literal(canonjson.NumberValue(1))),
		schema.Req("plan", DurablePlanSchema),
		schema.Req("sourceToolCallId", intNonEmpty),
		schema.Req("decision", PlanDecisionSchema),
		schema.Req("providerState", PlanProviderStateSchema),
	)

	// AgentExecutionOutcomeSchema is the AgentExecutionOutcome shape.
	AgentExecutionOutcomeSchema = schema.Discriminated("type", map[string]schema.Node{
		ExecutionOutcomeCompleted: schema.Object(schema.Req("type", schema.LiteralString(ExecutionOutcomeCompleted))),
		ExecutionOutcomeAwaitingPlanDecision: schema.Object(schema.Req("type", schema.LiteralString(ExecutionOutcomeAwaitingPlanDecision)),
			schema.Req("plan", DurablePlanSchema)),
	})
)

func intPlanState(kind PlanProviderKind, extra ...schema.Field) *schema.ObjectNode {
	return schema.Object(append([]schema.Field{
		schema.Req("kind", schema.LiteralString(string(kind))),
		schema.Req("version", schema.Literal(canonjson.NumberValue(1))),
	}, extra...)...)
}

// IsOffsetDateTime reports whether s is an ISO 8601 timestamp as
// DurablePlan.submittedAt accepts it: the UTC form of schema.ISODateTime,
// or the same with a ±hh:mm offset in place of "Z".
func IsOffsetDateTime(s string) bool {
	n := len(s)
	if n > 6 && (s[n-6] == '+' || s[n-6] == '-') && s[n-3] == ':' {
		hh, ok1 := intDigits2(s[n-5 : n-3])
		mm, ok2 := intDigits2(s[n-2:])
		if !ok1 || !ok2 || hh > 23 || mm > 59 {
			return false
		}
		return schema.IsISODateTime(s[:n-6] + "Z")
	}
	return schema.IsISODateTime(s)
}

func intDigits2(s string) (int, bool) {
	if len(s) != 2 || s[0] < '0' || s[0] > '9' || s[1] < '0' || s[1] > '9' {
		return 0, false
	}
	return int(s[0]-'0')*10 + int(s[1]-'0'), true
}

// ParseDurablePlan decodes and validates a committed plan.
func ParseDurablePlan(data []byte) (*DurablePlan, error) {
	return Parse[DurablePlan](KindDurablePlan, DurablePlanSchema, data)
}

// ParsePlanSubmission decodes and validates a plan submission.
func ParsePlanSubmission(data []byte) (*PlanSubmission, error) {
	return Parse[PlanSubmission](KindPlanSubmission, PlanSubmissionSchema, data)
}

// ParsePlanContinuation decodes and validates a plan continuation.
func ParsePlanContinuation(data []byte) (*PlanContinuation, error) {
	return Parse[PlanContinuation](KindPlanContinuation, PlanContinuationSchema, data)
}

// ParseAgentExecutionOutcome decodes and validates an execution outcome.
func ParseAgentExecutionOutcome(data []byte) (*AgentExecutionOutcome, error) {
	return Parse[AgentExecutionOutcome](KindAgentExecutionOutcome, AgentExecutionOutcomeSchema, data)
}
