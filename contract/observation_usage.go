package contract

import "github.com/agentrt/agentrt/schema"

// Kind names of token usage. Neither has reference vectors; they are
// registered so `agentrt check` can validate a usage object on its own.
const (
	KindTokenUsage = "TokenUsage"
	KindModelUsage = "ModelUsage"
)

// TokenUsage is the token usage and cost a provider reported for one
// execution, turn or event. Input and output counts are required whenever
// usage is reported at all; every other count is present only when the
// provider reported it. A nil pointer means "not reported", never zero:
// consumers must not add an absent count as 0 (unknown usage stays
// unknown).
type TokenUsage struct {
	InputTokens              int64    `json:"inputTokens"`
	OutputTokens             int64    `json:"outputTokens"`
	TotalTokens              *int64   `json:"totalTokens,omitzero"`
	CacheReadInputTokens     *int64   `json:"cacheReadInputTokens,omitzero"`
	CacheCreationInputTokens *int64   `json:"cacheCreationInputTokens,omitzero"`
	ReasoningTokens          *int64   `json:"reasoningTokens,omitzero"`
	Cost                     *float64 `json:"cost,omitzero"`
}

// ModelUsage is the name the environment observation gives TokenUsage: the
// same shape, checked by the same schema.
type ModelUsage = TokenUsage

var (
	obsCount = schema.Number(schema.Int, schema.NonNegative)

	// TokenUsageSchema is the strict TokenUsage shape: non-negative
	// integer counts, a finite non-negative cost.
	TokenUsageSchema = schema.Object(
		schema.Req("inputTokens", obsCount),
		schema.Req("outputTokens", obsCount),
		schema.Opt("totalTokens", obsCount),
		schema.Opt("cacheReadInputTokens", obsCount),
		schema.Opt("cacheCreationInputTokens", obsCount),
		schema.Opt("reasoningTokens", obsCount),
		schema.Opt("cost", schema.Number(schema.NonNegative)),
	)

	// ModelUsageSchema is TokenUsageSchema under the observation's name.
	ModelUsageSchema = TokenUsageSchema
)

// ParseTokenUsage decodes and validates a usage object.
func ParseTokenUsage(data []byte) (*TokenUsage, error) {
	return Parse[TokenUsage](KindTokenUsage, TokenUsageSchema, data)
}
