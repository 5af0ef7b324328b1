package candidate

import (
	"slices"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/schema"
)

// Wire kind values of a measured profile improvement.
const (
	KindProfileTaskValue                 = "agent-profile-improvement-task"
	KindProfileSuiteValue                = "agent-profile-improvement-suite"
	KindProfileExperimentValue           = "agent-profile-improvement-experiment"
	KindProfileRunCellValue              = "agent-profile-improvement-run-cell"
	KindProfileRunReceiptValue           = "agent-profile-improvement-run"
	KindProfileMeasuredComparisonValue   = "agent-profile-improvement-measured-comparison"
	KindCandidateMeasuredComparisonValue = "agent-improvement-measured-comparison"
	KindCandidateExperimentValue         = "agent-candidate-experiment"
)

// selfDigested returns a refinement that reports message at "digest"
// when a document's carried digest is not its self-digest.
func selfDigested(message string) schema.Refinement {
	return func(c *schema.Context, v canonjson.Value) {
		if d, err := SelfDigestValue(v); err != nil || d != member(v, "digest") {
			c.Custom(message, "digest")
		}
	}
}

var (
	safeCountFloat = schema.Number(schema.Int, schema.NonNegative)

	// ProfileEvidenceSchema is AgentProfileImprovementEvidence: a
	// content-pinned piece of evidence; kind and identity are trimmed.
	ProfileEvidenceSchema = schema.Object(
		schema.Req("kind", trimThen(schema.String(schema.MinLen(1), schema.MaxLen(100), schema.Matches("must match ^[a-z][a-z0-9-]*$", sourceKindPattern.MatchString)))),
		schema.Req("identity", trimThen(identity500)),
		schema.Req("digest", digestNode),
	)

	// ProfileTaskSchema is AgentProfileImprovementTask (self-digested):
	// one scenario with its grader, model and limits.
	ProfileTaskSchema = schema.Object(
		schema.Req("kind", schema.LiteralString(KindProfileTaskValue)),
		schema.Req("digestAlgorithm", schema.LiteralString(DigestAlgorithm)),
		schema.Req("scenario", schema.Object(
			schema.Req("id", identity500),
			schema.Req("kind", schema.String(schema.MinLen(1), schema.MaxLen(200))),
			schema.Req("digest", digestNode),
		)),
		schema.Req("grader", GraderSchema),
		schema.Req("model", ResolvedModelSchema),
		schema.Req("limits", ExecutionLimitsSchema),
		schema.Req("digest", digestNode),
	).Refine(selfDigested("profile improvement task digest is invalid"))

	// ProfileSuiteSchema is AgentProfileImprovementSuite (self-digested).
	ProfileSuiteSchema = schema.Object(
		schema.Req("kind", schema.LiteralString(KindProfileSuiteValue)),
		schema.Req("digestAlgorithm", schema.LiteralString(DigestAlgorithm)),
		schema.Req("splitDigest", digestNode),
		schema.Req("taskDigests", nonEmptyTuple(digestNode)),
		schema.Req("reps", positiveInt),
		schema.Req("seeds", nonEmptyTuple(intNode)),
		schema.Req("digest", digestNode),
	).Refine(selfDigested("profile improvement suite digest is invalid"))

	// ProfileSuiteInputsSchema is AgentProfileImprovementSuiteInputs: the
	// suite and its tasks in signed order, one seed per task repetition.
	ProfileSuiteInputsSchema = schema.Object(
		schema.Req("suite", ProfileSuiteSchema),
		schema.Req("tasks", nonEmptyTuple(ProfileTaskSchema)),
	).Refine(func(c *schema.Context, v canonjson.Value) {
		digests := itemStrings(at(v, "suite", "taskDigests"))
		tasks := at(v, "tasks").Items()
		if len(digests) != len(tasks) {
			c.Custom("profile improvement suite task count does not match its signed digests", "tasks")
		}
		if float64(at(v, "suite", "seeds").Len()) != float64(len(tasks))*num(v, "suite", "reps") {
			c.Custom("profile improvement suite must have one seed per task and repetition", "suite", "seeds")
		}
		for i, t := range tasks {
			if i >= len(digests) || digests[i] != member(t, "digest") {
				c.Custom("profile improvement suite task digest does not match its task", "tasks", canonjson.IndexToken(i), "digest")
			}
		}
	})

	profileArmNode = schema.Object(schema.Req("stateDigest", digestNode))

	// ProfileExperimentSchema is AgentProfileImprovementExperiment
	// (self-digested): a baseline profile state bound to its source, a
	// changed candidate state, the change between them, the candidate's
	// lineage, the held-out suite and the frozen policy.
	ProfileExperimentSchema = schema.Object(
		schema.Req("kind", schema.LiteralString(KindProfileExperimentValue)),
		schema.Req("digestAlgorithm", schema.LiteralString(DigestAlgorithm)),
		schema.Req("source", SourceSchema),
		schema.Req("executionRef", ProfileExecutionRefSchema),
		schema.Req("baseline", profileArmNode),
		schema.Req("candidate", profileArmNode),
		schema.Req("change", ProfileChangeSchema),
		schema.Req("candidateLineage", CandidateLineageSchema),
		schema.Req("benchmark", ProfileSuiteInputsSchema),
		schema.Req("policy", EvaluationPolicySchema),
		schema.Req("digest", digestNode),
	).Refine(checkProfileExperiment)

	// ProfileRunCellSchema is AgentProfileImprovementRunCell
	// (self-digested): which arm ran which task repetition.
	ProfileRunCellSchema = schema.Object(
		schema.Req("kind", schema.LiteralString(KindProfileRunCellValue)),
		schema.Req("experimentDigest", digestNode),
		schema.Req("arm", schema.Enum("baseline", "candidate")),
		schema.Req("stateDigest", digestNode),
		schema.Req("suiteDigest", digestNode),
		schema.Req("taskDigest", digestNode),
		schema.Req("taskIndex", safeCountFloat),
		schema.Req("repetition", safeCountFloat),
		schema.Req("seed", intNode),
		schema.Req("attempt", positiveInt),
		schema.Req("digest", digestNode),
	).Refine(selfDigested("profile improvement run cell digest is invalid"))

	profileTimingNode = schema.Object(
		schema.Req("startedAtMs", nonNeg),
		schema.Req("endedAtMs", nonNeg),
		schema.Req("durationMs", nonNeg),
	).Refine(func(c *schema.Context, v canonjson.Value) {
		if !approxEqual(num(v, "durationMs"), num(v, "endedAtMs")-num(v, "startedAtMs")) {
			c.Custom("timing duration must equal its start and end timestamps", "durationMs")
		}
	})

	profileGradingNode = schema.Object(
		schema.Req("grader", GraderSchema),
		schema.Req("evidence", ProfileEvidenceSchema),
		schema.Req("timing", profileTimingNode),
		schema.Req("usage", FixedSpendSchema),
		schema.Req("score", number),
		schema.Req("passed", boolean),
		schema.Req("dimensions", schema.Array(BenchmarkDimensionSchema)),
	).Refine(func(c *schema.Context, v canonjson.Value) {
		if hasDuplicate(memberStrings(at(v, "dimensions"), "name")) {
			c.Custom("profile improvement grading dimension names must be unique", "dimensions")
		}
		if member(at(v, "evidence"), "digest") == member(at(v, "grader", "artifact"), "sha256") {
			c.Custom("profile improvement grading evidence must be distinct from its grader", "evidence")
		}
	})

	// ProfileRunReceiptSchema is AgentProfileImprovementRunReceipt
	// (self-digested): one execution of one run cell, its evidence,
	// settled usage and grading, within the frozen limits.
	ProfileRunReceiptSchema = schema.Object(
		schema.Req("kind", schema.LiteralString(KindProfileRunReceiptValue)),
		schema.Req("digestAlgorithm", schema.LiteralString(DigestAlgorithm)),
		schema.Req("executionId", identity500),
		schema.Req("executionRef", ProfileExecutionRefSchema),
		schema.Req("runCell", ProfileRunCellSchema),
		schema.Req("runRecord", ProfileEvidenceSchema),
		schema.Req("billing", nonEmptyTuple(ProfileEvidenceSchema)),
		schema.Req("timing", profileTimingNode),
		schema.Req("steps", safeCountFloat),
		schema.Req("resolvedModel", ResolvedModelSchema),
		schema.Req("limits", ExecutionLimitsSchema),
		schema.Req("usage", FixedSpendSchema),
		schema.Req("trace", schema.Object(
			schema.Req("evidence", ProfileEvidenceSchema),
			schema.Req("eventCount", safeCountFloat),
			schema.Req("modelCallCount", safeCountFloat),
		)),
		schema.Req("output", ProfileEvidenceSchema),
		schema.Req("outcome", schema.Discriminated("status", map[string]schema.Node{
			"succeeded": schema.Object(schema.Req("status", schema.LiteralString("succeeded"))),
			"failed": schema.Object(
				schema.Req("status", schema.LiteralString("failed")),
				schema.Req("code", schema.String(schema.MinLen(1), schema.MaxLen(200))),
				schema.Req("message", schema.String(schema.MinLen(1), schema.MaxLen(4000))),
			),
		})),
		schema.Req("grading", profileGradingNode),
		schema.Req("digest", digestNode),
	).Refine(checkProfileRunReceipt)

	// ProfileMeasuredComparisonSchema is
	// AgentProfileImprovementMeasuredComparison: every signed cell of the
	// experiment run independently on both arms, and a summary that the
	// receipts recompute.
	ProfileMeasuredComparisonSchema = schema.Object(append([]schema.Field{
		schema.Req("kind", schema.LiteralString(KindProfileMeasuredComparisonValue)),
		schema.Req("experiment", ProfileExperimentSchema),
		schema.Req("measurements", schema.Array(schema.Object(
			schema.Req("baseline", ProfileRunReceiptSchema),
			schema.Req("candidate", ProfileRunReceiptSchema),
		))),
	}, comparisonFields...)...).Refine(checkProfileComparison)
)

func checkProfileExperiment(c *schema.Context, v canonjson.Value) {
	baseline := member(at(v, "baseline"), "stateDigest")
	candidate := member(at(v, "candidate"), "stateDigest")
	if baseline != member(at(v, "source"), "sourceDigest") {
		c.Custom("profile improvement baseline must bind the exact source state", "baseline", "stateDigest")
	}
	if baseline == candidate {
		c.Custom("profile improvement experiment requires a changed candidate state", "candidate", "stateDigest")
	}
	lineage := at(v, "candidateLineage")
	parents := itemStrings(at(lineage, "parentDigests"))
	if source := member(lineage, "source"); (source == "optimizer" || source == "compound") && !slices.Contains(parents, baseline) {
		c.Custom("generated profile lineage must include the experiment baseline", "candidateLineage", "parentDigests")
	}
	if slices.Contains(parents, candidate) {
		c.Custom("profile lineage cannot name the candidate itself as a parent", "candidateLineage", "parentDigests")
	}
	if split, ok := lineage.Get("developmentSplitDigest"); ok && split.Str() == member(at(v, "benchmark", "suite"), "splitDigest") {
		c.Custom("profile improvement development and held-out splits must be disjoint", "candidateLineage", "developmentSplitDigest")
	}
	selfDigested("profile improvement experiment digest is invalid")(c, v)
}

// evidenceKey identifies a piece of evidence by kind, identity and
// digest.
func evidenceKey(e canonjson.Value) string {
	return member(e, "kind") + "\x00" + member(e, "identity") + "\x00" + member(e, "digest")
}

// spendOf reads a FixedSpend value (the schema has checked its shape).
func spendOf(v canonjson.Value) contract.FixedSpend {
	var s contract.FixedSpend
	_ = canonjson.FromValue(v, &s)
	return s
}

func checkProfileRunReceipt(c *schema.Context, v canonjson.Value) {
	if evidenceKey(at(v, "output")) == evidenceKey(at(v, "grading", "evidence")) {
		c.Custom("profile improvement grading evidence must be distinct from the agent output", "grading", "evidence")
	}
	usage := spendOf(at(v, "usage"))
	if num(v, "trace", "modelCallCount") != float64(usage.ModelCalls) {
		c.Custom("profile trace model calls must equal settled execution model calls", "trace", "modelCallCount")
	}
	if num(v, "trace", "eventCount") < num(v, "trace", "modelCallCount") {
		c.Custom("profile trace must retain at least one event for every model call", "trace", "eventCount")
	}
	var limits contract.ExecutionLimits
	if canonjson.FromValue(at(v, "limits"), &limits) == nil {
		obs := contract.ExecutionLimitObservation{
			DurationMs: num(v, "timing", "durationMs"),
			Steps:      int64(num(v, "steps")),
			Usage:      combinedSpend(usage, spendOf(at(v, "grading", "usage"))),
		}
		for _, violation := range contract.ExecutionLimitViolations(limits, obs) {
			c.Custom(violation.Message(), violation.Path...)
		}
	}
	billing := at(v, "billing").Items()
	keys := make([]string, len(billing))
	for i, b := range billing {
		keys[i] = evidenceKey(b)
	}
	if hasDuplicate(keys) {
		c.Custom("profile improvement billing evidence must be unique", "billing")
	}
	selfDigested("profile improvement run receipt digest is invalid")(c, v)
}

// combinedSpend adds an execution's and its grading's settled spend; the
// cost is observed only when both are.
func combinedSpend(a, b contract.FixedSpend) contract.FixedSpend {
	provenance := contract.CostEstimated
	if a.CostProvenance == contract.CostObserved && b.CostProvenance == contract.CostObserved {
		provenance = contract.CostObserved
	}
	return contract.FixedSpend{
		InputTokens:       a.InputTokens + b.InputTokens,
		OutputTokens:      a.OutputTokens + b.OutputTokens,
		CachedInputTokens: a.CachedInputTokens + b.CachedInputTokens,
		ReasoningTokens:   a.ReasoningTokens + b.ReasoningTokens,
		ModelCalls:        a.ModelCalls + b.ModelCalls,
		CostUSDNanos:      a.CostUSDNanos + b.CostUSDNanos,
		CostProvenance:    provenance,
	}
}

// profileReceiptValues reads a profile run receipt's per-cell results:
// the grading score and dimensions, execution plus grading cost and
// latency.
var profileReceiptValues = receiptValues{
	score: func(r canonjson.Value) float64 { return num(r, "grading", "score") },
	dimension: func(r canonjson.Value, name string) (float64, bool) {
		return dimensionScore(at(r, "grading", "dimensions"), name)
	},
	cost: func(r canonjson.Value) float64 {
		return (num(r, "usage", "costUsdNanos") + num(r, "grading", "usage", "costUsdNanos")) / 1e9
	},
	observed: func(r canonjson.Value) bool {
		return member(at(r, "usage"), "costProvenance") == "observed" && member(at(r, "grading", "usage"), "costProvenance") == "observed"
	},
	latency: func(r canonjson.Value) float64 {
		return num(r, "timing", "durationMs") + num(r, "grading", "timing", "durationMs")
	},
}

func checkProfileComparison(c *schema.Context, v canonjson.Value) {
	experiment := at(v, "experiment")
	suite := at(experiment, "benchmark", "suite")
	tasks := at(experiment, "benchmark", "tasks").Items()
	reps := int64(num(suite, "reps"))
	expectedN := float64(len(tasks)) * num(suite, "reps")
	provenance := at(v, "provenance")
	if member(provenance, "baselineContentHash") != member(at(experiment, "baseline"), "stateDigest") ||
		member(provenance, "candidateContentHash") != member(at(experiment, "candidate"), "stateDigest") {
		c.Custom("profile comparison provenance must bind both complete measured states", "provenance")
	}
	measurements := at(v, "measurements").Items()
	if float64(len(measurements)) != expectedN {
		c.Custom("profile comparison must contain every signed benchmark cell", "measurements")
	}
	registry := identityRegistry{label: "profile measurements"}
	var expectedDimensions []string
	if len(measurements) > 0 {
		expectedDimensions = memberStrings(at(measurements[0], "baseline", "grading", "dimensions"), "name")
	}
	seeds := at(suite, "seeds").Items()
	for _, cl := range cells(len(measurements), len(tasks), reps) {
		index, ti, rep := cl.index, cl.task, cl.rep
		task := tasks[ti]
		m := measurements[index]
		idx := canonjson.IndexToken(index)
		for _, arm := range []string{"baseline", "candidate"} {
			r := at(m, arm)
			cell := at(r, "runCell")
			armPath := path("measurements", idx, arm)
			under := func(rel ...string) []string { return append(slices.Clone(armPath), rel...) }
			seedOK := index < len(seeds) && num(cell, "seed") == seeds[index].Float()
			report(c, []binding{
				{member(cell, "experimentDigest") == member(experiment, "digest"), "profile run receipt must bind the measured experiment", under("runCell", "experimentDigest")},
				{canonjson.Equal(at(r, "executionRef"), at(experiment, "executionRef")), "profile run receipt must bind the measured executor", under("executionRef")},
				{member(cell, "arm") == arm, "profile run receipt must bind its measured arm", under("runCell", "arm")},
				{member(cell, "stateDigest") == member(at(experiment, arm), "stateDigest"), "profile run receipt must bind the experiment arm state", under("runCell", "stateDigest")},
				{member(cell, "suiteDigest") == member(suite, "digest") && member(cell, "taskDigest") == member(task, "digest") &&
					num(cell, "taskIndex") == float64(ti) && num(cell, "repetition") == float64(rep) && seedOK && num(cell, "attempt") == 1,
					"publishable profile evidence must use the first signed task attempt", under("runCell")},
				{canonjson.Equal(at(r, "grading", "grader"), at(task, "grader")), "profile run receipt must bind the signed evaluator", under("grading", "grader")},
				{canonjson.Equal(at(r, "resolvedModel"), at(task, "model")), "profile run receipt must bind the signed model snapshot", under("resolvedModel")},
				{canonjson.Equal(at(r, "limits"), at(task, "limits")), "profile run receipt must bind the signed execution limits", under("limits")},
				{slices.Equal(memberStrings(at(r, "grading", "dimensions"), "name"), expectedDimensions), "profile run receipt dimensions must match the complete measured comparison", under("grading", "dimensions")},
			})
			ids := []identity{
				{kind: "execution", value: member(r, "executionId")},
				{kind: "runCell", value: member(cell, "digest")},
				{kind: "receipt", value: member(r, "digest")},
				{kind: "runRecord", value: evidenceKey(at(r, "runRecord"))},
			}
			for _, b := range at(r, "billing").Items() {
				ids = append(ids, identity{kind: "billing", value: evidenceKey(b), path: under("billing")})
			}
			registry.record(c, ids, armPath)
		}
		b, x := at(m, "baseline"), at(m, "candidate")
		if member(b, "executionId") == member(x, "executionId") || member(at(b, "runCell"), "digest") == member(at(x, "runCell"), "digest") ||
			member(b, "digest") == member(x, "digest") {
			c.Custom("profile measurement must use independent baseline and candidate executions", "measurements", idx)
		}
	}
	if member(at(v, "decision"), "outcome") == "ship" {
		for _, m := range measurements {
			if member(at(m, "baseline", "outcome"), "status") != "succeeded" || member(at(m, "candidate", "outcome"), "status") != "succeeded" {
				c.Custom("a shippable profile comparison cannot include failed executions", "measurements")
				break
			}
		}
	}
	checkComparisonSummary(c, v, at(experiment, "policy"), expectedN, pairsOf(at(v, "measurements")), profileReceiptValues)
	checkCanonical("profile measured comparison must contain only RFC 8785 JSON values")(c, v)
}
