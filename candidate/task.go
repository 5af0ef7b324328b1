package candidate

import (
	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/schema"
)

var (
	// TaskOutcomeSpecSchema is the result shape a task asks for.
	TaskOutcomeSpecSchema = schema.Discriminated("kind", map[string]schema.Node{
		"workspace": schema.Object(schema.Req("kind", schema.LiteralString("workspace"))),
		"output":    outputSpecNode.Extend(schema.Req("kind", schema.LiteralString("output"))),
	})

	benchmarkTaskFields = schema.Object(
		schema.Req("kind", schema.LiteralString(KindBenchmarkTaskValue)),
		schema.Req("digestAlgorithm", schema.LiteralString(DigestAlgorithm)),
		schema.Req("benchmark", schema.Object(
			schema.Req("name", schema.String(schema.MinLen(1), schema.MaxLen(512))),
			schema.Req("version", schema.String(schema.MinLen(1), schema.MaxLen(256))),
			schema.Req("splitDigest", digestNode),
		)),
		schema.Req("scenario", schema.Object(
			schema.Req("id", schema.String(schema.MinLen(1), schema.MaxLen(512))),
			schema.Req("kind", schema.String(schema.MinLen(1), schema.MaxLen(512))),
			schema.Req("scenarioDigest", digestNode),
		)),
		schema.Opt("datasetSnapshot", ArtifactRefSchema),
		schema.Req("instruction", schema.String(schema.MinLen(1), schema.MaxLen(4*1024*1024),
			schema.Rule[string]{Code: schema.CodeCustom, Message: "task instruction must be well-formed Unicode", Test: canonjson.IsWellFormed})),
		schema.Opt("repository", TaskRepositorySchema),
		schema.Req("outcome", TaskOutcomeSpecSchema),
		schema.Req("workspace", WorkspaceSnapshotEvidenceSchema),
		schema.Req("grader", GraderSchema),
		schema.Req("model", ResolvedModelSchema),
		schema.Req("attempt", schema.Object(
			schema.Req("maxAttempts", schema.Number(schema.Int, schema.Min(1))),
			schema.Req("retryPolicy", schema.Enum("pre-model-infrastructure-only", "none")),
		)),
		schema.Opt("evaluatorTaskContainer", ResolvedTaskContainerSchema),
		schema.Req("limits", ExecutionLimitsSchema),
	)

	// BenchmarkTaskMaterialSchema is a benchmark task without its digest
	// (CAND §11).
	BenchmarkTaskMaterialSchema = benchmarkTaskFields.Refine(checkTask)

	// BenchmarkTaskSchema is AgentCandidateBenchmarkTask (self-digested):
	// the material rules plus the digest member (the reference's extend
	// keeps the material's refinements).
	BenchmarkTaskSchema = benchmarkTaskFields.Extend(schema.Req("digest", digestNode)).Refine(checkTask)

	benchmarkSuiteFields = schema.Object(
		schema.Req("kind", schema.LiteralString(KindBenchmarkSuiteValue)),
		schema.Req("digestAlgorithm", schema.LiteralString(DigestAlgorithm)),
		schema.Req("taskDigests", nonEmptyTuple(digestNode)),
		schema.Req("reps", positiveInt),
		schema.Req("seeds", nonEmptyTuple(schema.Number(schema.Int))),
	)

	// BenchmarkSuiteMaterialSchema is a benchmark suite without its
	// digest: unique tasks, one seed per task repetition.
	BenchmarkSuiteMaterialSchema = benchmarkSuiteFields.Refine(checkSuite)

	// BenchmarkSuiteSchema is AgentCandidateBenchmarkSuite
	// (self-digested).
	BenchmarkSuiteSchema = benchmarkSuiteFields.Extend(schema.Req("digest", digestNode)).Refine(checkSuite)

	// BenchmarkSuiteInputsSchema is AgentCandidateBenchmarkSuiteInputs:
	// the suite and its tasks in suite order, one benchmark identity,
	// unique scenarios.
	BenchmarkSuiteInputsSchema = schema.Object(
		schema.Req("suite", BenchmarkSuiteSchema),
		schema.Req("tasks", nonEmptyTuple(BenchmarkTaskSchema)),
	).Refine(checkSuiteInputs).Refine(checkCanonical("benchmark suite inputs must contain finite, acyclic canonical JSON"))
)

// nonEmptyTuple is the reference's [item, ...item] tuple: an array whose
// missing first element is a fatal type error at index 0.
func nonEmptyTuple(item schema.Node) schema.Node {
	arr := schema.Array(item)
	return schema.NodeFunc(func(c *schema.Context, v canonjson.Value) canonjson.Value {
		if v.Kind() == canonjson.Array && len(v.Items()) == 0 {
			c.Fatal(schema.CodeInvalidType, "is required", "0")
			return v
		}
		return arr.Check(c, v)
	})
}

func checkTask(c *schema.Context, v canonjson.Value) {
	checkCanonical("candidate benchmark task must contain finite, acyclic canonical JSON")(c, v)
	if member(at(v, "outcome"), "kind") == "workspace" && !has(v, "repository") {
		c.Custom("workspace outcomes require an exact source repository", "repository")
	}
	attempt := at(v, "attempt")
	if member(attempt, "retryPolicy") == "none" && num(attempt, "maxAttempts") != 1 {
		c.Custom("a no-retry task must allow exactly one attempt", "attempt", "maxAttempts")
	}
	if ds, ok := v.Get("datasetSnapshot"); ok && num(ds, "byteLength") == 0 {
		c.Custom("dataset snapshot provenance must contain bytes", "datasetSnapshot", "byteLength")
	}
}

func checkSuite(c *schema.Context, v canonjson.Value) {
	digests := itemStrings(at(v, "taskDigests"))
	seen := map[string]bool{}
	for i, d := range digests {
		if seen[d] {
			c.Custom("benchmark suite task digests must be unique", "taskDigests", canonjson.IndexToken(i))
		}
		seen[d] = true
	}
	if float64(len(at(v, "seeds").Items())) != float64(len(digests))*num(v, "reps") {
		c.Custom("benchmark suite must provide one seed per task repetition", "seeds")
	}
	checkCanonical("benchmark suite must contain finite, acyclic canonical JSON")(c, v)
}

func checkSuiteInputs(c *schema.Context, v canonjson.Value) {
	tasks := at(v, "tasks").Items()
	digests := itemStrings(at(v, "suite", "taskDigests"))
	if len(tasks) != len(digests) {
		c.Custom("benchmark suite inputs must contain every signed task exactly once", "tasks")
	}
	ids, scenarios := map[string]bool{}, map[string]bool{}
	var first canonjson.Value
	for i, task := range tasks {
		idx := canonjson.IndexToken(i)
		if i >= len(digests) || member(task, "digest") != digests[i] {
			c.Custom("benchmark task order must match the signed suite", "tasks", idx, "digest")
		}
		sc := at(task, "scenario")
		if ids[member(sc, "id")] {
			c.Custom("benchmark suite task ids must be unique", "tasks", idx, "scenario", "id")
		}
		ids[member(sc, "id")] = true
		if scenarios[member(sc, "scenarioDigest")] {
			c.Custom("benchmark suite scenario digests must be unique", "tasks", idx, "scenario", "scenarioDigest")
		}
		scenarios[member(sc, "scenarioDigest")] = true
		b := at(task, "benchmark")
		if i == 0 {
			first = b
		} else if member(b, "name") != member(first, "name") || member(b, "version") != member(first, "version") || member(b, "splitDigest") != member(first, "splitDigest") {
			c.Custom("benchmark suite tasks must share one benchmark identity", "tasks", idx, "benchmark")
		}
	}
}
