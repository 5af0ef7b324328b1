package candidate

import (
	"slices"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/schema"
)

var (
	benchmarkMaterialEvidence = schema.Object(
		schema.Req("digest", digestNode),
		schema.Req("material", capturedNode),
	).Refine(func(c *schema.Context, v canonjson.Value) {
		if member(at(v, "material"), "sha256") != member(v, "digest") {
			c.Custom("benchmark material artifact must match its canonical digest", "material", "sha256")
		}
		if num(v, "material", "byteLength") == 0 {
			c.Custom("benchmark material artifact must contain canonical bytes", "material", "byteLength")
		}
	})

	receiptContainerNode = schema.Object(
		schema.Req("source", schema.Enum("pinned-container", "evaluator-task-container")),
		schema.Req("image", nonEmpty),
		schema.Req("indexDigest", digestNode),
		schema.Req("manifestDigest", digestNode),
		schema.Req("platform", platformNode(0)),
	)

	// MaterializationReceiptSchema is AgentCandidateMaterializationReceipt
	// (self-digested), emitted after materializing and before executing
	// (CAND §14).
	MaterializationReceiptSchema = schema.Object(
		schema.Req("kind", schema.LiteralString(KindMaterializationReceiptValue)),
		schema.Req("digestAlgorithm", schema.LiteralString(DigestAlgorithm)),
		schema.Req("bundleDigest", digestNode),
		schema.Req("benchmark", schema.Object(
			schema.Req("suite", benchmarkMaterialEvidence),
			schema.Req("task", benchmarkMaterialEvidence),
		)),
		schema.Req("profileActivation", ProfileActivationSchema),
		schema.Req("executionPlan", ExecutionPlanEvidenceSchema),
		schema.Opt("candidateWorkspace", WorkspaceSnapshotEvidenceSchema),
		schema.Req("codeKind", schema.Enum(CodeDisabled, CodeNoOp, CodeGitPatch)),
		schema.Opt("materializedTree", gitObjectNode),
		schema.Req("harness", profile.HarnessSchema),
		schema.Req("harnessVersion", nonEmpty),
		schema.Req("container", receiptContainerNode),
		schema.Req("resolvedModel", ResolvedModelSchema),
		schema.Opt("knowledgeManifestDigest", digestNode),
		schema.Opt("entrypoint", schema.Object(
			schema.Req("path", relPath(false, "entrypoint path must be a canonical candidate-relative path")),
			schema.Req("sha256", digestNode),
			schema.Req("byteLength", safeCount),
		)),
		schema.Req("digest", digestNode),
	).Refine(checkMaterialization).Refine(checkCanonical("materialization receipt must contain only RFC 8785 JSON values"))

	// MemoryReceiptSchema is a run's memory receipt.
	MemoryReceiptSchema = schema.Discriminated("mode", map[string]schema.Node{
		"disabled": modeDisabled,
		"isolated": schema.Object(
			schema.Req("mode", schema.LiteralString("isolated")),
			schema.Req("scope", schema.LiteralString("task")),
			schema.Req("effectiveNamespace", nonEmpty),
			schema.Req("resetEvidenceDigest", digestNode),
			schema.Req("beforeStateDigest", digestNode),
			schema.Req("afterState", WorkspaceSnapshotEvidenceSchema),
		),
	})

	// TerminationSchema is how a run ended (CAND §15.2).
	TerminationSchema = schema.Discriminated("kind", map[string]schema.Node{
		"exit":    schema.Object(schema.Req("kind", schema.LiteralString("exit")), schema.Req("exitCode", schema.Number(schema.Int))),
		"timeout": schema.Object(schema.Req("kind", schema.LiteralString("timeout")), schema.Req("timeoutMs", positiveInt)),
		"signal": schema.Object(schema.Req("kind", schema.LiteralString("signal")),
			schema.Req("signal", schema.String(schema.Matches("must match ^SIG[A-Z0-9]+$", isSignalName)))),
		"cancelled": schema.Object(schema.Req("kind", schema.LiteralString("cancelled"))),
	})

	traceNode = schema.Object(
		schema.Req("artifact", capturedNode),
		schema.Req("eventCount", positiveInt),
		schema.Req("modelCallCount", safeCount),
	).Refine(func(c *schema.Context, v canonjson.Value) {
		if num(v, "artifact", "byteLength") == 0 {
			c.Custom("trace artifact must contain captured events", "artifact", "byteLength")
		}
		if num(v, "eventCount") < num(v, "modelCallCount") {
			c.Custom("trace must contain at least one event for every model call", "eventCount")
		}
	})

	// RunReceiptSchema is AgentCandidateRunReceipt (self-digested): the
	// facts of one finished execution of a materialized plan
	// (CAND §15.1).
	RunReceiptSchema = schema.Object(
		schema.Req("kind", schema.LiteralString(KindRunReceiptValue)),
		schema.Req("digestAlgorithm", schema.LiteralString(DigestAlgorithm)),
		schema.Req("bundleDigest", digestNode),
		schema.Req("runCellDigest", digestNode),
		schema.Req("materializationReceiptDigest", digestNode),
		schema.Req("executionPlanDigest", digestNode),
		schema.Req("timing", timingNode),
		schema.Req("steps", safeCount),
		schema.Req("memory", MemoryReceiptSchema),
		schema.Req("trace", traceNode),
		schema.Req("termination", TerminationSchema),
		schema.Req("executorCapture", ArtifactRefSchema),
		schema.Req("modelSettlement", ModelSettlementEvidenceSchema),
		schema.Req("taskOutcome", TaskOutcomeEvidenceSchema),
		schema.Req("benchmarkResult", BenchmarkResultEvidenceSchema),
		schema.Req("digest", digestNode),
	).Refine(checkRunReceipt).Refine(checkCanonical("run receipt must contain only RFC 8785 JSON values"))

	// ExecutionEvidenceSchema is CandidateExecutionEvidence: a
	// materialization receipt and the run receipt bound to it, within
	// the plan's limits (CAND §16).
	ExecutionEvidenceSchema = schema.Object(
		schema.Req("kind", schema.LiteralString(KindExecutionEvidenceValue)),
		schema.Req("materializationReceipt", MaterializationReceiptSchema),
		schema.Req("receipt", RunReceiptSchema),
		schema.Req("digest", digestNode),
	).Refine(checkExecutionEvidence).Refine(checkCanonical("candidate execution evidence must contain only RFC 8785 JSON values"))
)

func isSignalName(s string) bool {
	if len(s) < 4 || s[:3] != "SIG" {
		return false
	}
	for i := 3; i < len(s); i++ {
		if c := s[i]; !(c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// binding is one equality a receipt must hold, reported at path.
type binding struct {
	ok      bool
	message string
	path    []string
}

func report(c *schema.Context, bindings []binding) {
	for _, b := range bindings {
		if !b.ok {
			c.Custom(b.message, b.path...)
		}
	}
}

func p(names ...string) []string { return names }

// checkMaterialization holds the receipt's code-state rules and its
// equalities with the execution plan (CAND §14).
func checkMaterialization(c *schema.Context, v canonjson.Value) {
	plan := at(v, "executionPlan", "material")
	_, hasTree := v.Get("materializedTree")
	entry, hasEntry := v.Get("entrypoint")
	ws, hasWS := v.Get("candidateWorkspace")
	if member(v, "codeKind") == CodeDisabled {
		if hasTree || hasEntry || hasWS {
			c.Custom("disabled code must not claim a materialized tree, entrypoint, or workspace")
		}
	} else if !hasTree || !hasEntry || !hasWS {
		c.Custom("active code requires a materialized tree, entrypoint, and workspace receipt")
	} else {
		files := at(ws, "material", "files").Items()
		i := slices.IndexFunc(files, func(f canonjson.Value) bool { return member(f, "path") == member(entry, "path") })
		if i < 0 || member(files[i], "sha256") != member(entry, "sha256") || num(files[i], "byteLength") != num(entry, "byteLength") {
			c.Custom("entrypoint receipt must identify exact candidate-workspace bytes", "entrypoint")
		}
	}
	runCell := at(plan, "runCell")
	activationPlan := at(v, "profileActivation", "profilePlan")
	relPaths := memberStrings(at(activationPlan, "material", "files"), "relPath")
	container, planContainer := at(v, "container"), at(plan, "container")
	report(c, []binding{
		{member(v, "bundleDigest") == member(runCell, "bundleDigest"), "execution plan must bind the receipt bundle", p("executionPlan", "material", "runCell", "bundleDigest")},
		{member(at(v, "benchmark", "suite"), "digest") == member(runCell, "suiteDigest"), "execution plan must bind the captured benchmark suite", p("benchmark", "suite", "digest")},
		{member(at(v, "benchmark", "task"), "digest") == member(runCell, "taskDigest"), "execution plan must bind the captured benchmark task", p("benchmark", "task", "digest")},
		{member(activationPlan, "digest") == member(at(plan, "profile"), "planDigest"), "execution plan must bind the exact profile plan", p("executionPlan", "material", "profile", "planDigest")},
		{slices.Equal(itemStrings(at(plan, "profile", "mountPaths")), relPaths), "execution plan must bind every profile mount path", p("executionPlan", "material", "profile", "mountPaths")},
		{member(v, "codeKind") == member(plan, "codeKind"), "execution plan code kind must match materialization", p("executionPlan", "material", "codeKind")},
		{member(v, "harness") == member(plan, "harness") && member(v, "harnessVersion") == member(plan, "harnessVersion"), "execution plan must bind the exact harness and version", p("executionPlan", "material", "harness")},
		{sameContainer(container, planContainer), "execution plan must bind the selected container bytes", p("executionPlan", "material", "container")},
		{sameOptional(v, plan, "resolvedModel", "model", "resolved"), "execution plan must bind the exact resolved model", p("executionPlan", "material", "model", "resolved")},
		{sameOptional(v, plan, "knowledgeManifestDigest", "knowledgeManifestDigest"), "execution plan knowledge must match materialization", p("executionPlan", "material", "knowledgeManifestDigest")},
		{sameOptional(v, plan, "candidateWorkspace", "candidateWorkspace"), "execution plan must bind the exact uploaded candidate workspace", p("executionPlan", "material", "candidateWorkspace")},
		{member(at(activationPlan, "material"), "harness") == member(v, "harness"), "profile plan harness must match materialization", p("profileActivation", "profilePlan", "material", "harness")},
	})
}

// sameContainer compares the selected container member by member,
// including an optional platform variant.
func sameContainer(a, b canonjson.Value) bool {
	for _, n := range []string{"source", "image", "indexDigest", "manifestDigest"} {
		if member(a, n) != member(b, n) {
			return false
		}
	}
	pa, pb := at(a, "platform"), at(b, "platform")
	va, oka := pa.Get("variant")
	vb, okb := pb.Get("variant")
	return member(pa, "os") == member(pb, "os") && member(pa, "architecture") == member(pb, "architecture") &&
		oka == okb && va.Str() == vb.Str()
}

// sameOptional compares member name of a with the member at path of b
// structurally: both absent, or both present and equal. (The reference
// compares JSON.stringify forms, which also depend on member order; agentrt
// compares values, CAND §14.)
func sameOptional(a, b canonjson.Value, name string, path ...string) bool {
	x, okx := a.Get(name)
	y := b
	oky := true
	for _, n := range path {
		if y, oky = y.Get(n); !oky {
			break
		}
	}
	return okx == oky && (!okx || canonjson.Equal(x, y))
}

// checkRunReceipt holds the run receipt's timing and binding rules
// (CAND §15.1).
func checkRunReceipt(c *schema.Context, v canonjson.Value) {
	timing := at(v, "timing")
	if !consistentTiming(timing) {
		c.Custom("run timing must be ordered and internally consistent", "timing")
	}
	planDigest := member(v, "executionPlanDigest")
	settlement := at(v, "modelSettlement", "material")
	if member(settlement, "executionPlanDigest") != planDigest {
		c.Custom("model settlement must bind the executed plan", "modelSettlement", "material", "executionPlanDigest")
	}
	start, end := num(timing, "startedAtMs"), num(timing, "endedAtMs")
	for i, call := range at(settlement, "calls").Items() {
		if num(call, "startedAtMs") < start || num(call, "endedAtMs") > end {
			c.Custom("model calls must occur within the recorded run", "modelSettlement", "material", "calls", canonjson.IndexToken(i))
		}
	}
	result := at(v, "benchmarkResult", "material")
	if num(result, "grading", "timing", "startedAtMs") < end {
		c.Custom("grading must start after candidate execution ends", "benchmarkResult", "material", "grading", "timing", "startedAtMs")
	}
	if num(v, "trace", "modelCallCount") != num(settlement, "usage", "modelCalls") {
		c.Custom("trace model-call count must match fixed run usage", "trace", "modelCallCount")
	}
	if member(at(v, "taskOutcome", "material"), "executionPlanDigest") != planDigest {
		c.Custom("task outcome must bind the executed plan", "taskOutcome", "material", "executionPlanDigest")
	}
	if member(result, "executionPlanDigest") != planDigest {
		c.Custom("benchmark result must bind the executed plan", "benchmarkResult", "material", "executionPlanDigest")
	}
	if member(result, "taskOutcomeDigest") != member(at(v, "taskOutcome"), "digest") {
		c.Custom("benchmark result must bind the exact task outcome", "benchmarkResult", "material", "taskOutcomeDigest")
	}
}

// checkExecutionEvidence binds a run receipt to its materialization and
// applies the limits check over duration, steps and settled usage
// (CAND §12.1, §16).
func checkExecutionEvidence(c *schema.Context, v canonjson.Value) {
	m := at(v, "materializationReceipt")
	r := at(v, "receipt")
	plan := at(m, "executionPlan")
	material := at(plan, "material")
	report(c, []binding{
		{member(r, "materializationReceiptDigest") == member(m, "digest"), "run receipt must bind the included materialization receipt", p("receipt", "materializationReceiptDigest")},
		{member(r, "executionPlanDigest") == member(plan, "digest"), "run receipt must bind the included execution plan", p("receipt", "executionPlanDigest")},
		{member(r, "bundleDigest") == member(m, "bundleDigest"), "run receipt and materialization must bind one bundle", p("receipt", "bundleDigest")},
		{member(r, "runCellDigest") == member(at(material, "runCell"), "digest"), "run receipt must bind the materialized run cell", p("receipt", "runCellDigest")},
		{member(at(m, "profileActivation", "profilePlan"), "digest") == member(at(material, "profile"), "planDigest"), "profile activation must bind the materialized execution plan", p("materializationReceipt", "profileActivation", "profilePlan", "digest")},
		{member(at(r, "modelSettlement", "material"), "grantDigest") == member(at(material, "model", "access"), "grantDigest"), "model settlement must bind the execution plan grant", p("receipt", "modelSettlement", "material", "grantDigest")},
	})
	for _, violation := range ExecutionEvidenceLimitViolations(v) {
		c.Custom(violation.Message(), violation.Path...)
	}
}

// ExecutionEvidenceLimitViolations applies the within-limits check
// (CAND §12.1) to a CandidateExecutionEvidence value: the plan's frozen
// limits against the run receipt's duration and steps and the settled
// usage. Each violation's Path is its location in the evidence
// (receipt/timing/durationMs, receipt/steps or
// receipt/modelSettlement/material/usage/…). It returns nil when the
// limits or the usage cannot be read (the schema reports those).
func ExecutionEvidenceLimitViolations(v canonjson.Value) []contract.ExecutionLimitViolation {
	r := at(v, "receipt")
	var limits contract.ExecutionLimits
	var usage contract.FixedSpend
	if canonjson.FromValue(at(v, "materializationReceipt", "executionPlan", "material", "limits"), &limits) != nil ||
		canonjson.FromValue(at(r, "modelSettlement", "material", "usage"), &usage) != nil {
		return nil
	}
	obs := contract.ExecutionLimitObservation{DurationMs: num(r, "timing", "durationMs"), Steps: int64(num(r, "steps")), Usage: usage}
	violations := contract.ExecutionLimitViolations(limits, obs)
	for i, violation := range violations {
		path := append([]string{"receipt"}, violation.Path...)
		if violation.Path[0] == "usage" {
			path = append([]string{"receipt", "modelSettlement", "material", "usage"}, violation.Path[1:]...)
		}
		violations[i].Path = path
	}
	return violations
}
