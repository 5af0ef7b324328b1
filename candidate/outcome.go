package candidate

import (
	"math"
	"regexp"
	"slices"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/schema"
)

var (
	boundedID   = schema.String(schema.MinLen(1), schema.MaxLen(256))
	safeCountTS = schema.Number(schema.Int, schema.NonNegative)
	positiveTS  = schema.Number(schema.Int, schema.NonNegative, schema.Positive)
	scoreNode   = schema.Number(schema.Min(0), schema.Max(1))

	dimensionNamePattern = regexp.MustCompile(`^[a-z0-9]+(?:[._-][a-z0-9]+)*$`)

	// FixedSpendSchema is AgentCandidateFixedSpend, owned by contract.
	FixedSpendSchema = contract.FixedSpendSchema

	// ModelSettlementCallSchema is one settled model call.
	ModelSettlementCallSchema = schema.Object(
		schema.Req("callId", boundedID),
		schema.Req("generationId", boundedID),
		schema.Req("traceSpanId", boundedID),
		schema.Req("status", schema.Enum("succeeded", "failed")),
		schema.Req("model", boundedID),
		schema.Req("startedAtMs", positiveTS),
		schema.Req("endedAtMs", positiveTS),
		schema.Req("inputTokens", safeCountTS),
		schema.Req("accountedInputTokens", safeCountTS),
		schema.Req("outputTokens", safeCountTS),
		schema.Req("cachedInputTokens", safeCountTS),
		schema.Req("reasoningTokens", safeCountTS),
		schema.Req("costUsdNanos", safeCountTS),
		schema.Req("costProvenance", schema.Enum(contract.CostObserved, contract.CostEstimated)),
	).Refine(func(c *schema.Context, v canonjson.Value) {
		if member(v, "traceSpanId") != member(v, "generationId") {
			c.Custom("model settlement trace span id must equal the router generation id", "traceSpanId")
		}
		if num(v, "endedAtMs") < num(v, "startedAtMs") {
			c.Custom("model settlement call cannot end before it starts", "endedAtMs")
		}
	})

	// ModelSettlementMaterialSchema is the router's closed ledger for one
	// execution: usage is the exact per-call aggregate, with input
	// counted as accounted input (CAND §12.2).
	ModelSettlementMaterialSchema = schema.Object(
		schema.Req("kind", schema.LiteralString(KindModelSettlementMaterialValue)),
		schema.Req("executionPlanDigest", digestNode),
		schema.Req("preparationId", boundedID),
		schema.Req("grantDigest", digestNode),
		schema.Req("closed", schema.Literal(canonjson.BoolValue(true))),
		schema.Req("usageWithinLimits", boolean),
		schema.Req("resolved", ResolvedModelSchema),
		schema.Req("usage", FixedSpendSchema),
		schema.Req("calls", schema.Array(ModelSettlementCallSchema)),
	).Refine(checkSettlement).Refine(checkCanonical("model settlement material must contain only RFC 8785 JSON values"))

	// ModelSettlementEvidenceSchema is the settlement evidence record.
	ModelSettlementEvidenceSchema = evidenceSchema(KindModelSettlementEvidenceValue, ModelSettlementMaterialSchema, "model settlement")

	// RepositoryStateSchema is a repository at one commit and tree.
	RepositoryStateSchema = schema.Object(
		schema.Req("identity", nonEmpty),
		schema.Req("rootIdentity", nonEmpty),
		schema.Req("commit", gitObjectNode),
		schema.Req("tree", gitObjectNode),
	).Refine(func(c *schema.Context, v canonjson.Value) {
		if !sameGitObjectFormat(member(v, "commit"), member(v, "tree")) {
			c.Custom("repository commit and tree must use the same Git object format", "tree")
		}
	})

	outputSpecNode = schema.Object(
		schema.Req("mediaType", mediaTypeNode),
		schema.Req("maxBytes", schema.Number(schema.Int, schema.Positive, schema.Max(64*1024*1024))),
	)

	// TaskOutcomeMaterialSchema is what one execution produced: a
	// workspace (repositories, after-state, diff) or an output artifact.
	TaskOutcomeMaterialSchema = schema.Object(
		schema.Req("kind", schema.LiteralString(KindTaskOutcomeMaterialValue)),
		schema.Req("executionPlanDigest", digestNode),
		schema.Req("outcome", schema.Discriminated("kind", map[string]schema.Node{
			"workspace": schema.Object(
				schema.Req("kind", schema.LiteralString("workspace")),
				schema.Req("baseRepository", RepositoryStateSchema),
				schema.Req("resultRepository", RepositoryStateSchema),
				schema.Req("afterState", WorkspaceSnapshotEvidenceSchema),
				schema.Req("gitDiff", schema.Object(
					schema.Req("format", schema.LiteralString("git-diff-binary")),
					schema.Req("artifact", ArtifactRefSchema),
				)),
			),
			"output": schema.Object(
				schema.Req("kind", schema.LiteralString("output")),
				schema.Req("spec", outputSpecNode),
				schema.Req("artifact", ArtifactRefSchema),
			),
		})),
	).Refine(checkTaskOutcome).Refine(checkCanonical("task outcome material must contain only RFC 8785 JSON values"))

	// TaskOutcomeEvidenceSchema is the task outcome evidence record.
	TaskOutcomeEvidenceSchema = evidenceSchema(KindTaskOutcomeEvidenceValue, TaskOutcomeMaterialSchema, "task outcome")

	// BenchmarkDimensionSchema is one named score dimension.
	BenchmarkDimensionSchema = schema.Object(
		schema.Req("name", schema.String(schema.Matches("dimension names must be normalized lowercase identifiers", dimensionNamePattern.MatchString))),
		schema.Req("score", scoreNode),
	)

	// BenchmarkResultMaterialSchema is the grader's verdict on one task
	// outcome (CAND §15.3).
	BenchmarkResultMaterialSchema = schema.Object(
		schema.Req("kind", schema.LiteralString(KindBenchmarkResultMaterialValue)),
		schema.Req("executionPlanDigest", digestNode),
		schema.Req("taskOutcomeDigest", digestNode),
		schema.Req("grader", GraderSchema),
		schema.Req("evidence", ArtifactRefSchema),
		schema.Req("grading", schema.Object(
			schema.Req("usage", FixedSpendSchema),
			schema.Req("timing", timingNode),
		)),
		schema.Req("score", scoreNode),
		schema.Req("passed", boolean),
		schema.Req("dimensions", schema.Array(BenchmarkDimensionSchema)),
	).Refine(func(c *schema.Context, v canonjson.Value) {
		if num(v, "evidence", "byteLength") == 0 {
			c.Custom("benchmark result must contain non-empty durable grading evidence", "evidence", "byteLength")
		}
		if !consistentTiming(at(v, "grading", "timing")) {
			c.Custom("grader timing must be ordered and internally consistent", "grading", "timing")
		}
		checkAscending(c, memberStrings(at(v, "dimensions"), "name"), "benchmark dimensions must be unique and lexicographically sorted", "name", "dimensions")
	}).Refine(checkCanonical("benchmark result material must contain only RFC 8785 JSON values"))

	// BenchmarkResultEvidenceSchema is the benchmark result evidence
	// record.
	BenchmarkResultEvidenceSchema = evidenceSchema(KindBenchmarkResultEvidenceValue, BenchmarkResultMaterialSchema, "benchmark result")

	timingNode = schema.Object(
		schema.Req("startedAtMs", safeCountTS),
		schema.Req("endedAtMs", safeCountTS),
		schema.Req("durationMs", safeCountTS),
	)
)

// consistentTiming: ended ≥ started and duration == ended − started.
func consistentTiming(t canonjson.Value) bool {
	start, end := num(t, "startedAtMs"), num(t, "endedAtMs")
	return end >= start && num(t, "durationMs") == end-start
}

var spendCounts = []string{"outputTokens", "cachedInputTokens", "reasoningTokens", "costUsdNanos"}

// checkSettlement holds the settlement's ledger rules: unique ids, one
// model, accounted ≥ raw input, and usage equal to the safe per-call
// aggregate (input as accounted input).
func checkSettlement(c *schema.Context, v canonjson.Value) {
	calls := at(v, "calls").Items()
	for _, id := range []string{"callId", "traceSpanId", "generationId"} {
		seen := map[string]bool{}
		for i, call := range calls {
			if seen[member(call, id)] {
				c.Custom("model settlement "+id+"s must be unique", "calls", canonjson.IndexToken(i), id)
			}
			seen[member(call, id)] = true
		}
	}
	model := member(at(v, "resolved"), "model")
	totals := map[string]float64{"modelCalls": float64(len(calls))}
	estimated := false
	for i, call := range calls {
		idx := canonjson.IndexToken(i)
		if member(call, "model") != model {
			c.Custom("settled call model must match the resolved single model", "calls", idx, "model")
		}
		if num(call, "accountedInputTokens") < num(call, "inputTokens") {
			c.Custom("accounted input tokens cannot be less than reported input tokens", "calls", idx, "accountedInputTokens")
		}
		for _, f := range spendCounts {
			if sum := totals[f] + num(call, f); canonjson.IsSafeInteger(sum) {
				totals[f] = sum
			} else {
				c.Custom("model settlement "+f+" total exceeds safe integer range", "calls", idx, f)
			}
		}
		if sum := totals["inputTokens"] + num(call, "accountedInputTokens"); canonjson.IsSafeInteger(sum) {
			totals["inputTokens"] = sum
		} else {
			c.Custom("model settlement accounted input total exceeds safe integer range", "calls", idx, "accountedInputTokens")
		}
		estimated = estimated || member(call, "costProvenance") == contract.CostEstimated
	}
	usage := at(v, "usage")
	same := slices.IndexFunc(append([]string{"inputTokens", "modelCalls"}, spendCounts...), func(f string) bool {
		return totals[f] != num(usage, f) || math.IsNaN(num(usage, f))
	}) < 0
	provenance := contract.CostObserved
	if estimated {
		provenance = contract.CostEstimated
	}
	if !same || member(usage, "costProvenance") != provenance {
		c.Custom("model settlement usage must equal the exact per-call aggregate", "usage")
	}
}

// checkTaskOutcome binds a workspace outcome's base and result
// repositories and bounds an output artifact.
func checkTaskOutcome(c *schema.Context, v canonjson.Value) {
	o := at(v, "outcome")
	if member(o, "kind") == "workspace" {
		base, result := at(o, "baseRepository"), at(o, "resultRepository")
		if member(base, "identity") != member(result, "identity") {
			c.Custom("base and result repository identities must match", "outcome", "resultRepository", "identity")
		}
		if member(base, "rootIdentity") != member(result, "rootIdentity") {
			c.Custom("base and result repository roots must match", "outcome", "resultRepository", "rootIdentity")
		}
		if !sameGitObjectFormat(member(base, "commit"), member(result, "commit")) || !sameGitObjectFormat(member(base, "tree"), member(result, "tree")) {
			c.Custom("base and result repositories must use one Git object format", "outcome", "resultRepository")
		}
		return
	}
	n := num(o, "artifact", "byteLength")
	if n == 0 {
		c.Custom("task outcome artifact cannot be empty", "outcome", "artifact")
	}
	if n > num(o, "spec", "maxBytes") {
		c.Custom("task outcome artifact exceeds its signed byte limit", "outcome", "artifact", "byteLength")
	}
}
