package contract

import (
	"errors"
	"strings"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/schema"
)

// KindExecutionLimitObservation names the execution-limit observation.
const KindExecutionLimitObservation = "AgentExecutionLimitObservation"

// Cost provenances of a FixedSpend.
const (
	CostObserved  = "observed"
	CostEstimated = "estimated"
)

// FixedSpend is the complete, settled spend of one execution: every count
// is known (a spend whose counts are not all known is not a FixedSpend).
// Cost is in billionths of a US dollar.
type FixedSpend struct {
	InputTokens       int64  `json:"inputTokens"`
	OutputTokens      int64  `json:"outputTokens"`
	CachedInputTokens int64  `json:"cachedInputTokens"`
	ReasoningTokens   int64  `json:"reasoningTokens"`
	ModelCalls        int64  `json:"modelCalls"`
	CostUSDNanos      int64  `json:"costUsdNanos"`
	CostProvenance    string `json:"costProvenance"`
}

// ExecutionLimitObservation holds the observable facts needed to prove an
// execution respected its frozen limits: wall-clock duration, steps taken
// and settled spend.
type ExecutionLimitObservation struct {
	DurationMs float64    `json:"durationMs"`
	Steps      int64      `json:"steps"`
	Usage      FixedSpend `json:"usage"`
}

// ExecutionLimits are the frozen limits an execution is held to (the
// execution limits of a candidate plan). MaxTotalTokens, when set, bounds
// input plus output tokens.
type ExecutionLimits struct {
	TimeoutMs       int64   `json:"timeoutMs"`
	MaxSteps        int64   `json:"maxSteps"`
	MaxModelCalls   int64   `json:"maxModelCalls"`
	MaxInputTokens  int64   `json:"maxInputTokens"`
	MaxOutputTokens int64   `json:"maxOutputTokens"`
	MaxTotalTokens  *int64  `json:"maxTotalTokens,omitzero"`
	MaxCostUSD      float64 `json:"maxCostUsd"`
}

var (
	obsSafeCount = schema.Number(schema.Int, schema.NonNegative,
		schema.Rule[float64]{Code: schema.CodeCustom, Message: "value must be a nonnegative safe integer", Test: canonjson.IsSafeInteger})

	// FixedSpendSchema is the strict FixedSpend shape.
	FixedSpendSchema = schema.Object(
		schema.Req("inputTokens", obsSafeCount),
		schema.Req("outputTokens", obsSafeCount),
		schema.Req("cachedInputTokens", obsSafeCount),
		schema.Req("reasoningTokens", obsSafeCount),
		schema.Req("modelCalls", obsSafeCount),
		schema.Req("costUsdNanos", obsSafeCount),
		schema.Req("costProvenance", schema.Enum(CostObserved, CostEstimated)),
	)

	// ExecutionLimitObservationSchema is the strict
	// AgentExecutionLimitObservation shape.
	ExecutionLimitObservationSchema = schema.Object(
		schema.Req("durationMs", schema.Number(schema.NonNegative)),
		schema.Req("steps", schema.Number(schema.Int, schema.NonNegative)),
		schema.Req("usage", FixedSpendSchema),
	)

	// ExecutionLimitsSchema is the strict ExecutionLimits shape.
	ExecutionLimitsSchema = schema.Object(
		schema.Req("timeoutMs", schema.Number(schema.Int, schema.Positive)),
		schema.Req("maxSteps", schema.Number(schema.Int, schema.Positive)),
		schema.Req("maxModelCalls", schema.Number(schema.Int, schema.NonNegative)),
		schema.Req("maxInputTokens", schema.Number(schema.Int, schema.NonNegative)),
		schema.Req("maxOutputTokens", schema.Number(schema.Int, schema.NonNegative)),
		schema.Opt("maxTotalTokens", schema.Number(schema.Int, schema.NonNegative)),
		schema.Req("maxCostUsd", schema.Number(schema.NonNegative)),
	)
)

// ParseExecutionLimitObservation decodes and validates an execution-limit
// observation.
func ParseExecutionLimitObservation(data []byte) (*ExecutionLimitObservation, error) {
	return Parse[ExecutionLimitObservation](KindExecutionLimitObservation, ExecutionLimitObservationSchema, data)
}

// ExecutionLimitViolation is one limit an execution exceeded. Path locates
// the observed fact in an execution record: ["timing","durationMs"],
// ["steps"], or ["usage", <count>] (totalTokens and costUsdNanos included).
type ExecutionLimitViolation struct {
	Path    []string
	Label   string
	Actual  float64
	Maximum float64
}

// Message describes the violation.
func (v ExecutionLimitViolation) Message() string {
	return "execution " + v.Label + " " + string(canonjson.AppendNumber(nil, v.Actual)) +
		" exceeds frozen limit " + string(canonjson.AppendNumber(nil, v.Maximum))
}

// ExecutionLimitViolations lists every limit obs exceeds, in a fixed
// order: duration, steps, model calls, input, output and (when limited)
// total tokens, then cost in US dollars. It does not validate its inputs;
// CheckExecutionWithinLimits does.
func ExecutionLimitViolations(limits ExecutionLimits, obs ExecutionLimitObservation) []ExecutionLimitViolation {
	checks := []ExecutionLimitViolation{
		{Path: []string{"timing", "durationMs"}, Label: "durationMs", Actual: obs.DurationMs, Maximum: float64(limits.TimeoutMs)},
		{Path: []string{"steps"}, Label: "steps", Actual: float64(obs.Steps), Maximum: float64(limits.MaxSteps)},
		{Path: []string{"usage", "modelCalls"}, Label: "modelCalls", Actual: float64(obs.Usage.ModelCalls), Maximum: float64(limits.MaxModelCalls)},
		{Path: []string{"usage", "inputTokens"}, Label: "inputTokens", Actual: float64(obs.Usage.InputTokens), Maximum: float64(limits.MaxInputTokens)},
		{Path: []string{"usage", "outputTokens"}, Label: "outputTokens", Actual: float64(obs.Usage.OutputTokens), Maximum: float64(limits.MaxOutputTokens)},
	}
	if limits.MaxTotalTokens != nil {
		checks = append(checks, ExecutionLimitViolation{Path: []string{"usage", "totalTokens"}, Label: "totalTokens",
			Actual: float64(obs.Usage.InputTokens) + float64(obs.Usage.OutputTokens), Maximum: float64(*limits.MaxTotalTokens)})
	}
	checks = append(checks, ExecutionLimitViolation{Path: []string{"usage", "costUsdNanos"}, Label: "costUsd",
		Actual: float64(obs.Usage.CostUSDNanos) / 1e9, Maximum: limits.MaxCostUSD})
	var out []ExecutionLimitViolation
	for _, c := range checks {
		if c.Actual > c.Maximum {
			out = append(out, c)
		}
	}
	return out
}

// CheckExecutionWithinLimits validates limits and obs and returns an error
// naming every limit obs exceeds, or nil when it respects them all.
func CheckExecutionWithinLimits(limits ExecutionLimits, obs ExecutionLimitObservation) error {
	if _, err := Validate("AgentCandidateExecutionLimits", ExecutionLimitsSchema, limits); err != nil {
		return err
	}
	if _, err := Validate(KindExecutionLimitObservation, ExecutionLimitObservationSchema, obs); err != nil {
		return err
	}
	violations := ExecutionLimitViolations(limits, obs)
	if len(violations) == 0 {
		return nil
	}
	msgs := make([]string, len(violations))
	for i, v := range violations {
		msgs[i] = v.Message()
	}
	return errors.New(strings.Join(msgs, "; "))
}

// ReportExecutionLimitViolations reports every limit obs exceeds as a
// custom issue at c's position: under prefix, with the "usage" part of a
// violation's path replaced by usagePath (nil means "usage"). Receipt
// schemas use it to refuse a record that claims limits it broke.
func ReportExecutionLimitViolations(c *schema.Context, limits ExecutionLimits, obs ExecutionLimitObservation, prefix, usagePath []string) {
	if usagePath == nil {
		usagePath = []string{"usage"}
	}
	for _, v := range ExecutionLimitViolations(limits, obs) {
		path := append([]string(nil), prefix...)
		if v.Path[0] == "usage" {
			path = append(append(path, usagePath...), v.Path[1:]...)
		} else {
			path = append(path, v.Path...)
		}
		c.Custom(v.Message(), path...)
	}
}
