package candidate

import (
	"slices"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/schema"
)

var (
	// CandidateExperimentSchema is AgentCandidateExperiment: a baseline
	// and a candidate bundle (ts16 dialect), the candidate's lineage, the
	// held-out suite and the frozen policy.
	CandidateExperimentSchema = schema.Object(
		schema.Req("kind", schema.LiteralString(KindCandidateExperimentValue)),
		schema.Req("digestAlgorithm", schema.LiteralString(DigestAlgorithm)),
		schema.Req("baseline", BundleSchema),
		schema.Req("candidate", BundleSchema),
		schema.Req("candidateLineage", CandidateLineageSchema),
		schema.Req("benchmark", BenchmarkSuiteInputsSchema),
		schema.Req("policy", EvaluationPolicySchema),
		schema.Req("digest", digestNode),
	).Refine(checkCandidateExperiment)

	// CandidateMeasuredComparisonSchema is
	// AgentImprovementMeasuredComparison: every signed cell run once per
	// arm, each execution's evidence bound to the experiment's bundles and
	// the selected task, and a summary the evidence recomputes.
	CandidateMeasuredComparisonSchema = schema.Object(append([]schema.Field{
		schema.Req("kind", schema.LiteralString(KindCandidateMeasuredComparisonValue)),
		schema.Req("experiment", CandidateExperimentSchema),
		schema.Req("measurements", schema.Array(schema.Object(
			schema.Req("baseline", ExecutionEvidenceSchema),
			schema.Req("candidate", ExecutionEvidenceSchema),
		))),
	}, comparisonFields...)...).Refine(checkCandidateComparison)

	// ImprovementProposalSchema is AgentImprovementProposal: a passing,
	// sufficiently powered measured comparison (of bundles or of
	// profiles) and the surfaces it changes.
	ImprovementProposalSchema = schema.Object(
		schema.Req("kind", schema.LiteralString(KindImprovementProposalValue)),
		schema.Req("runId", schema.String(schema.MinLen(1), schema.MaxLen(200))),
		schema.Req("changedSurfaces", schema.Refined(nonEmptyTuple(surfaceNode), func(c *schema.Context, v canonjson.Value) {
			if hasDuplicate(itemStrings(v)) {
				c.Custom("changed surfaces must be unique")
			}
		})),
		schema.Req("proposedAt", isoTimeNode),
		schema.Req("findings", schema.Array(canonicalObjectNode)),
		schema.Req("evaluation", schema.Discriminated("kind", map[string]schema.Node{
			KindCandidateMeasuredComparisonValue: CandidateMeasuredComparisonSchema,
			KindProfileMeasuredComparisonValue:   ProfileMeasuredComparisonSchema,
		})),
		schema.Req("digest", digestNode),
	).Refine(checkProposal)
)

func checkCandidateExperiment(c *schema.Context, v canonjson.Value) {
	lineage := at(v, "candidateLineage")
	parents := itemStrings(at(lineage, "parentDigests"))
	if source := member(lineage, "source"); (source == "optimizer" || source == "compound") && !slices.Contains(parents, member(at(v, "baseline"), "digest")) {
		c.Custom("generated candidate lineage must include the experiment baseline", "candidateLineage", "parentDigests")
	}
	if slices.Contains(parents, member(at(v, "candidate"), "digest")) {
		c.Custom("candidate lineage cannot name the candidate itself as a parent", "candidateLineage", "parentDigests")
	}
	if split, ok := lineage.Get("developmentSplitDigest"); ok {
		for _, t := range at(v, "benchmark", "tasks").Items() {
			if member(at(t, "benchmark"), "splitDigest") == split.Str() {
				c.Custom("candidate development and held-out splits must be disjoint", "candidateLineage", "developmentSplitDigest")
				break
			}
		}
	}
	checkCanonical("candidate experiment must contain only RFC 8785 JSON values")(c, v)
}

// evidenceReceiptValues reads an execution's per-cell results: the
// benchmark score and dimensions, settled plus grading cost and latency.
var evidenceReceiptValues = receiptValues{
	score: func(e canonjson.Value) float64 { return num(e, "receipt", "benchmarkResult", "material", "score") },
	dimension: func(e canonjson.Value, name string) (float64, bool) {
		return dimensionScore(at(e, "receipt", "benchmarkResult", "material", "dimensions"), name)
	},
	cost: func(e canonjson.Value) float64 {
		return (num(e, "receipt", "modelSettlement", "material", "usage", "costUsdNanos") +
			num(e, "receipt", "benchmarkResult", "material", "grading", "usage", "costUsdNanos")) / 1e9
	},
	observed: func(e canonjson.Value) bool {
		return member(at(e, "receipt", "modelSettlement", "material", "usage"), "costProvenance") == "observed" &&
			member(at(e, "receipt", "benchmarkResult", "material", "grading", "usage"), "costProvenance") == "observed"
	},
	latency: func(e canonjson.Value) float64 {
		return num(e, "receipt", "timing", "durationMs") + num(e, "receipt", "benchmarkResult", "material", "grading", "timing", "durationMs")
	},
}

// optionalEqual compares two possibly absent members as the reference's
// === on optional strings does (absent equals absent only).
func optionalEqual(a canonjson.Value, aName string, b canonjson.Value, bName string) bool {
	x, okA := a.Get(aName)
	y, okB := b.Get(bName)
	if okA != okB {
		return false
	}
	return !okA || x.Str() == y.Str()
}

func checkCandidateComparison(c *schema.Context, v canonjson.Value) {
	experiment := at(v, "experiment")
	suite := at(experiment, "benchmark", "suite")
	tasks := at(experiment, "benchmark", "tasks").Items()
	taskCount := at(suite, "taskDigests").Len()
	reps := int64(num(suite, "reps"))
	expectedN := float64(taskCount) * num(suite, "reps")
	measurements := at(v, "measurements").Items()
	if float64(len(measurements)) != expectedN {
		c.Custom("measured comparison must contain every signed benchmark cell", "measurements")
	}
	registry := identityRegistry{label: "measured executions"}
	seeds := at(suite, "seeds").Items()
	for _, cl := range cells(len(measurements), min(taskCount, len(tasks)), reps) {
		index, ti, rep := cl.index, cl.task, cl.rep
		task := tasks[ti]
		idx := canonjson.IndexToken(index)
		for _, arm := range []string{"baseline", "candidate"} {
			armPath := path("measurements", idx, arm)
			under := func(rel ...string) []string { return append(slices.Clone(armPath), rel...) }
			e := at(measurements[index], arm)
			checkEvidenceBindings(c, evidenceBinding{
				evidence: e, bundle: at(experiment, arm), task: task, suite: suite,
				experimentDigest: member(experiment, "digest"), arm: arm,
				taskIndex: ti, repetition: int(rep), seed: seedAt(seeds, index),
			}, under)
			m := at(e, "materializationReceipt")
			registry.record(c, []identity{
				{kind: "execution", value: member(at(m, "executionPlan", "material"), "executionId")},
				{kind: "runCell", value: member(at(m, "executionPlan", "material", "runCell"), "digest")},
				{kind: "materialization", value: member(m, "digest")},
				{kind: "receipt", value: member(at(e, "receipt"), "digest")},
				{kind: "evidence", value: member(e, "digest")},
			}, armPath)
		}
	}
	checkComparisonSummary(c, v, at(experiment, "policy"), expectedN, pairsOf(at(v, "measurements")), evidenceReceiptValues)
	checkCanonical("measured comparison must contain only RFC 8785 JSON values")(c, v)
}

func seedAt(seeds []canonjson.Value, i int) *float64 {
	if i >= len(seeds) {
		return nil
	}
	f := seeds[i].Float()
	return &f
}

// evidenceBinding is one execution's evidence with what it must bind:
// its experiment arm's bundle and the selected task cell.
type evidenceBinding struct {
	evidence, bundle, task, suite canonjson.Value
	experimentDigest, arm         string
	taskIndex, repetition         int
	seed                          *float64
}

// checkEvidenceBindings holds the reference's per-execution equalities
// between execution evidence, the arm's bundle and the signed task.
func checkEvidenceBindings(c *schema.Context, b evidenceBinding, under func(...string) []string) {
	m := at(b.evidence, "materializationReceipt")
	plan := at(m, "executionPlan", "material")
	cell := at(plan, "runCell")
	result := at(b.evidence, "receipt", "benchmarkResult", "material")
	outcome := at(b.evidence, "receipt", "taskOutcome", "material", "outcome")
	bundle, task := b.bundle, b.task
	code, exec := at(bundle, "code"), at(bundle, "execution")
	bundleDigest := member(bundle, "digest")

	var expectedTree canonjson.Value
	var treeKnown bool
	switch member(code, "kind") {
	case CodeNoOp:
		expectedTree, treeKnown = code.Get("baseTree")
	case CodeDisabled:
	default:
		expectedTree, treeKnown = code.Get("candidateTree")
	}
	tree, hasTree := m.Get("materializedTree")
	treeOK := hasTree == treeKnown && (!hasTree || tree.Str() == expectedTree.Str())

	container := at(plan, "container")
	var containerOK bool
	if member(at(exec, "environment"), "kind") == "evaluator-task-container" {
		taskContainer, ok := task.Get("evaluatorTaskContainer")
		containerOK = ok && member(container, "source") == "evaluator-task-container" && canonjson.Equal(container, taskContainer)
	} else {
		pinned := at(exec, "environment", "container")
		containerOK = member(container, "source") == "pinned-container" &&
			member(container, "image") == member(pinned, "image") && member(container, "indexDigest") == member(pinned, "indexDigest")
	}

	memory, planMemory := at(bundle, "memory"), at(plan, "memory")
	memoryOK := member(memory, "mode") == "disabled" && member(planMemory, "mode") == "disabled" ||
		member(memory, "mode") == "isolated" && member(planMemory, "mode") == "isolated" &&
			optionalEqual(planMemory, "seedDigest", at(memory, "seed"), "sha256")

	knowledge := at(bundle, "knowledge", "snapshot")
	_, hasKnowledge := bundle.Get("knowledge")
	knowledgeOK := func(v canonjson.Value) bool {
		d, ok := v.Get("knowledgeManifestDigest")
		return ok == hasKnowledge && (!ok || d.Str() == member(knowledge, "digest"))
	}

	profileDigest, err := ContentDigest(at(bundle, "profile"))
	profileOK := err == nil && member(at(m, "profileActivation", "profilePlan", "material"), "sourceProfileDigest") == profileDigest

	maxCalls := num(task, "limits", "maxModelCalls")
	network := member(at(plan, "model", "access", "network"), "mode")

	taskOutcome := at(task, "outcome")
	outputOK := member(taskOutcome, "kind") != "output" ||
		member(outcome, "kind") == "output" && optionalEqual(at(outcome, "spec"), "mediaType", taskOutcome, "mediaType") &&
			canonjson.Equal(at(outcome, "spec", "maxBytes"), at(taskOutcome, "maxBytes"))
	repo, hasRepo := task.Get("repository")
	base := at(outcome, "baseRepository")
	workspaceOK := member(taskOutcome, "kind") != "workspace" ||
		member(outcome, "kind") == "workspace" && hasRepo &&
			member(base, "identity") == member(repo, "identity") && member(base, "rootIdentity") == member(repo, "rootIdentity") &&
			member(base, "commit") == member(repo, "baseCommit") && member(base, "tree") == member(repo, "baseTree")

	seedOK := b.seed != nil && num(cell, "seed") == *b.seed
	workspace, hasWorkspace := exec.Get("workspace")
	sameWorkspace := func(v canonjson.Value) bool {
		w, ok := v.Get("candidateWorkspace")
		return ok == hasWorkspace && (!ok || canonjson.Equal(w, workspace))
	}

	report(c, []binding{
		{member(cell, "experimentDigest") == b.experimentDigest, "execution evidence must bind the measured experiment",
			under("materializationReceipt", "executionPlan", "material", "runCell", "experimentDigest")},
		{member(cell, "arm") == b.arm, "execution evidence must bind its measured arm",
			under("materializationReceipt", "executionPlan", "material", "runCell", "arm")},
		{member(cell, "bundleDigest") == bundleDigest && member(m, "bundleDigest") == bundleDigest, "execution evidence must bind the experiment arm bundle",
			under("materializationReceipt", "bundleDigest")},
		{member(cell, "suiteDigest") == member(b.suite, "digest") && member(cell, "taskDigest") == member(task, "digest") &&
			num(cell, "taskIndex") == float64(b.taskIndex) && num(cell, "repetition") == float64(b.repetition) && seedOK && num(cell, "attempt") == 1,
			"publishable execution evidence must use the first signed task attempt", under("materializationReceipt", "executionPlan", "material", "runCell")},
		{member(m, "codeKind") == member(code, "kind"), "materialized code must match the experiment arm bundle", under("materializationReceipt", "codeKind")},
		{member(at(m, "benchmark", "suite"), "digest") == member(b.suite, "digest") && member(at(m, "benchmark", "task"), "digest") == member(task, "digest"),
			"execution evidence must capture the signed suite and selected task", under("materializationReceipt", "benchmark")},
		{member(m, "harness") == member(exec, "harness") && member(m, "harnessVersion") == member(exec, "harnessVersion") &&
			member(plan, "harness") == member(exec, "harness") && member(plan, "harnessVersion") == member(exec, "harnessVersion"),
			"execution evidence must bind the candidate harness and version", under("materializationReceipt", "harness")},
		{canonjson.Equal(at(plan, "instructionDelivery"), at(exec, "instructionDelivery")), "execution plan must bind the candidate instruction delivery",
			under("materializationReceipt", "executionPlan", "material", "instructionDelivery")},
		{canonjson.Equal(at(plan, "limits"), at(task, "limits")), "execution plan must bind every signed task limit",
			under("materializationReceipt", "executionPlan", "material", "limits")},
		{containerOK, "execution plan must bind the candidate or evaluator task container", under("materializationReceipt", "executionPlan", "material", "container")},
		{sameWorkspace(plan) && sameWorkspace(m), "execution evidence must bind the candidate workspace", under("materializationReceipt", "candidateWorkspace")},
		{treeOK, "materialized tree must match the candidate code", under("materializationReceipt", "materializedTree")},
		{member(at(plan, "launch", "cwd"), "workspace") == member(at(exec, "cwd"), "workspace") && member(at(plan, "launch", "cwd"), "path") == member(at(exec, "cwd"), "path"),
			"execution plan must bind the candidate working directory", under("materializationReceipt", "executionPlan", "material", "launch", "cwd")},
		{knowledgeOK(plan) && knowledgeOK(m), "execution evidence must bind the candidate knowledge snapshot", under("materializationReceipt", "knowledgeManifestDigest")},
		{memoryOK, "execution plan must bind the candidate memory policy", under("materializationReceipt", "executionPlan", "material", "memory")},
		{member(at(result, "evidence"), "sha256") != member(at(task, "grader", "artifact"), "sha256"), "grading evidence must be distinct from the signed grader implementation",
			under("receipt", "benchmarkResult", "material", "evidence", "sha256")},
		{canonjson.Equal(at(result, "grader"), at(task, "grader")), "benchmark result must bind the signed grader", under("receipt", "benchmarkResult", "material", "grader")},
		{profileOK, "materialized profile files must bind the experiment arm profile",
			under("materializationReceipt", "profileActivation", "profilePlan", "material", "sourceProfileDigest")},
		{canonjson.Equal(at(m, "resolvedModel"), at(task, "model")), "execution must use the selected task model", under("materializationReceipt", "resolvedModel")},
		{maxCalls == 0 && network == "disabled" || maxCalls > 0 && network == "gateway-only", "model gateway access must match the signed model-call limit",
			under("materializationReceipt", "executionPlan", "material", "model", "access", "network")},
		{member(outcome, "kind") == member(taskOutcome, "kind"), "captured outcome must match the selected task contract",
			under("receipt", "taskOutcome", "material", "outcome", "kind")},
		{outputOK, "captured output must match the selected task specification", under("receipt", "taskOutcome", "material", "outcome", "spec")},
		{workspaceOK, "captured workspace must start from the selected task repository", under("receipt", "taskOutcome", "material", "outcome", "baseRepository")},
	})
}

func checkProposal(c *schema.Context, v canonjson.Value) {
	eval := at(v, "evaluation")
	if member(at(eval, "decision"), "outcome") != "ship" {
		c.Custom("an improvement proposal requires a passing measured comparison", "evaluation", "decision", "outcome")
	}
	power := at(eval, "power")
	if sufficient, _ := power.Get("sufficient"); !sufficient.Bool() || num(eval, "overall", "n") < num(eval, "experiment", "policy", "minProductiveRuns") {
		c.Custom("an improvement proposal requires sufficient pre-registered power", "evaluation", "power")
	}
	experiment := at(eval, "experiment")
	if member(eval, "kind") == KindCandidateMeasuredComparisonValue {
		if member(at(experiment, "baseline"), "digest") == member(at(experiment, "candidate"), "digest") {
			c.Custom("an improvement proposal requires a changed candidate bundle", "evaluation", "experiment", "candidate", "digest")
		}
	} else {
		changed := changedSurfaces(at(experiment, "change").Items())
		proposed := itemStrings(at(v, "changedSurfaces"))
		same := len(proposed) == len(changed)
		for _, s := range proposed {
			same = same && slices.Contains(changed, s)
		}
		if !same {
			c.Custom("proposal changed surfaces must equal the measured profile changes", "changedSurfaces")
		}
	}
	checkCanonical("proposal must contain only RFC 8785 JSON values")(c, v)
}
