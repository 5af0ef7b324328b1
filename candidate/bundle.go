package candidate

import (
	"slices"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/schema"
)

// Dialect selects which envelope rules a bundle is read with (CAND §0.1,
// decision CAND §25.1).
type Dialect string

const (
	// DialectAuto reads a bundle with a top-level lineage in the seed
	// dialect and every other bundle in the ts16 dialect. It is the
	// default (the zero Dialect means DialectAuto).
	DialectAuto Dialect = "auto"
	// DialectSeed is the seeds' envelope: disabled code carries a reason
	// and the bundle carries its lineage (ancestry and spend).
	DialectSeed Dialect = "seed"
	// DialectTS16 is the reference 1.6.0 envelope: disabled code is
	// {kind:"disabled"} and there is no top-level lineage.
	DialectTS16 Dialect = "ts16"
)

// Resolve returns the concrete dialect a bundle value is read with: d
// itself unless d is auto (or empty), when a top-level lineage selects
// seed.
func (d Dialect) Resolve(bundle canonjson.Value) Dialect {
	if d == DialectSeed || d == DialectTS16 {
		return d
	}
	if has(bundle, "lineage") {
		return DialectSeed
	}
	return DialectTS16
}

var (
	// KnowledgeSchema is a frozen knowledge candidate admitted through an
	// approved review (CAND §8).
	KnowledgeSchema = schema.Object(
		schema.Req("candidate", schema.Object(
			schema.Req("kind", schema.LiteralString("knowledge-improvement-candidate")),
			schema.Req("runId", nonEmpty),
			schema.Req("candidateId", nonEmpty),
			schema.Req("goalHash", digestNode),
			schema.Req("baseHash", digestNode),
			schema.Req("candidateHash", digestNode),
			schema.Req("evidenceHash", digestNode),
			schema.Req("promotionPlanHash", digestNode),
		)),
		schema.Req("snapshot", WorkspaceSnapshotEvidenceSchema),
		schema.Opt("retrievalConfig", capturedNode),
		schema.Req("evaluation", capturedNode),
	)

	// MemoryPolicySchema is the bundle memory policy: disabled, or
	// isolated to exactly one task with an optional seed.
	MemoryPolicySchema = schema.Discriminated("mode", map[string]schema.Node{
		"disabled": modeDisabled,
		"isolated": schema.Object(
			schema.Req("mode", schema.LiteralString("isolated")),
			schema.Req("scope", schema.LiteralString("task")),
			schema.Opt("seed", ArtifactRefSchema),
		),
	})

	// seedArtifactRefNode is the seed dialect's artifact ref: the closed
	// locators plus seed 004's private-cas, whose digest must name the
	// referenced bytes (CAND §3.1 [INFERRED], §23.2 V34p; the rule follows
	// the seed text, decision §25.5).
	seedArtifactRefNode = schema.Object(
		schema.Req("locator", schema.Discriminated("kind", map[string]schema.Node{
			contract.LocatorS3:         contract.S3LocatorSchema,
			contract.LocatorIPFS:       contract.IPFSLocatorSchema,
			contract.LocatorPrivateCAS: contract.PrivateCASLocatorSchema,
		})),
		schema.Req("sha256", digestNode),
		schema.Req("byteLength", safeCount),
	).Refine(func(c *schema.Context, v canonjson.Value) {
		if loc := at(v, "locator"); member(loc, "kind") == contract.LocatorPrivateCAS && member(loc, "digest") != member(v, "sha256") {
			c.Custom("a private-cas locator must name the referenced digest", "locator", "digest")
		}
	})

	// seedMemoryPolicyNode is the seed dialect's memory policy, whose seed
	// may live in a private content-addressed store.
	seedMemoryPolicyNode = schema.Discriminated("mode", map[string]schema.Node{
		"disabled": modeDisabled,
		"isolated": schema.Object(
			schema.Req("mode", schema.LiteralString("isolated")),
			schema.Req("scope", schema.LiteralString("task")),
			schema.Opt("seed", seedArtifactRefNode),
		),
	})

	spendNode = schema.Object(
		schema.Req("costUsd", schema.Number(schema.NonNegative)),
		schema.Req("inputTokens", safeCount),
		schema.Req("outputTokens", safeCount),
		schema.Opt("cachedInputTokens", safeCount),
		schema.Req("modelCalls", safeCount),
	)

	// SeedLineageSchema is the seed dialect's bundle lineage: ancestry
	// and per-phase spend (CAND §9.1).
	SeedLineageSchema = schema.Object(
		schema.Req("source", schema.Enum("optimizer", "human", "import", "compound")),
		schema.Opt("parentDigests", schema.Array(digestNode)),
		schema.Opt("runIds", schema.Array(nonEmpty)),
		schema.Opt("profileDiffIds", schema.Array(nonEmpty)),
		schema.Opt("modelSnapshots", schema.Array(nonEmpty)),
		schema.Opt("benchmark", schema.Object(
			schema.Req("name", nonEmpty),
			schema.Req("version", nonEmpty),
			schema.Req("splitDigest", digestNode),
		)),
		schema.Opt("spend", schema.Object(
			schema.Req("proposal", spendNode),
			schema.Req("evaluation", spendNode),
		)),
	).Refine(func(c *schema.Context, v canonjson.Value) {
		checkLineageLists(c, v)
		if generatedLineage(c, v) {
			if !has(v, "benchmark") {
				c.Custom("generated candidates must pin their development split", "benchmark")
			}
			if !has(v, "spend") {
				c.Custom("generated candidates must record proposal and evaluation spend", "spend")
			}
		}
	})

	bundleFields = []schema.Field{
		schema.Req("kind", schema.LiteralString(KindBundleValue)),
		schema.Req("digestAlgorithm", schema.LiteralString(DigestAlgorithm)),
		schema.Req("profile", ProfileSchema),
		schema.Req("code", CodeSchema),
		schema.Req("execution", ExecutionSchema),
		schema.Opt("knowledge", KnowledgeSchema),
		schema.Req("memory", MemoryPolicySchema),
		schema.Req("digest", digestNode),
	}

	// BundleSchema is AgentCandidateBundle in the ts16 dialect (the
	// reference 1.6.0 shape the vectors bind).
	BundleSchema = schema.Object(bundleFields...).
			Refine(checkCanonical("candidate bundle must contain only finite, acyclic RFC 8785 JSON values")).
			Refine(checkBundle)

	// SeedBundleSchema is AgentCandidateBundle in the seed dialect:
	// disabled code carries its reason, and lineage is required.
	SeedBundleSchema = schema.Object(bundleFields...).Extend(
		schema.Req("code", codeSeedSchema),
		schema.Req("memory", seedMemoryPolicyNode),
		schema.Req("lineage", SeedLineageSchema),
	).Refine(checkCanonical("candidate bundle must contain only finite, acyclic RFC 8785 JSON values")).
		Refine(checkBundle).
		Refine(func(c *schema.Context, v canonjson.Value) {
			parents := itemStrings(at(v, "lineage", "parentDigests"))
			if slices.Contains(parents, member(v, "digest")) {
				c.Custom("a candidate cannot name itself as a parent", "lineage", "parentDigests")
			}
		})

	// bundleAutoSchema reads a bundle in the dialect DialectAuto picks.
	bundleAutoSchema = schema.NodeFunc(func(c *schema.Context, v canonjson.Value) canonjson.Value {
		if DialectAuto.Resolve(v) == DialectSeed {
			return SeedBundleSchema.Check(c, v)
		}
		return BundleSchema.Check(c, v)
	})
)

// BundleSchemaFor returns the bundle schema of a concrete dialect
// (DialectSeed or DialectTS16); any other dialect reads as auto.
func BundleSchemaFor(d Dialect) schema.Node {
	switch d {
	case DialectSeed:
		return SeedBundleSchema
	case DialectTS16:
		return BundleSchema
	}
	return bundleAutoSchema
}

// checkLineageLists reports duplicates in the four lineage lists.
func checkLineageLists(c *schema.Context, v canonjson.Value) {
	for _, name := range []string{"parentDigests", "runIds", "profileDiffIds", "modelSnapshots"} {
		checkDuplicates(c, itemStrings(at(v, name)), name)
	}
}

// generatedLineage applies the compound and generated-candidate parent
// and run rules and reports whether the candidate is generated.
func generatedLineage(c *schema.Context, v canonjson.Value) bool {
	source := member(v, "source")
	parents := len(at(v, "parentDigests").Items())
	if source == "compound" && parents < 2 {
		c.Custom("compound candidates must name at least two distinct parents", "parentDigests")
	}
	if source != "optimizer" && source != "compound" {
		return false
	}
	if parents == 0 {
		c.Custom("generated candidates must name at least one parent", "parentDigests")
	}
	if len(at(v, "runIds").Items()) == 0 {
		c.Custom("generated candidates must name their producing run", "runIds")
	}
	return true
}

// checkBundle holds the bundle's cross rules (CAND §7.4): harness
// agreement, and the disabled versus active code launch rules.
func checkBundle(c *schema.Context, v canonjson.Value) {
	exec := at(v, "execution")
	if h, ok := at(v, "profile").Get("harness"); ok && h.Str() != member(exec, "harness") {
		c.Custom("execution harness must match the candidate profile preference", "execution", "harness")
	}
	launch := at(exec, "launch")
	workspace, hasWorkspace := exec.Get("workspace")
	if member(at(v, "code"), "kind") == CodeDisabled {
		if member(at(exec, "cwd"), "workspace") != "task" {
			c.Custom("disabled code controls must execute in the task workspace", "execution", "cwd", "workspace")
		}
		if member(launch, "kind") != "container-command" {
			c.Custom("disabled code controls must use a container command", "execution", "launch")
		}
		if hasWorkspace {
			c.Custom("disabled code cannot carry a candidate workspace", "execution", "workspace")
		}
		return
	}
	entry := member(launch, "kind") == "candidate-entrypoint"
	if !entry {
		c.Custom("an active code surface must launch its candidate entrypoint", "execution", "launch")
	}
	files := at(workspace, "material", "files").Items()
	switch {
	case !hasWorkspace:
		c.Custom("active code requires a complete candidate workspace", "execution", "workspace")
	case len(files) == 0:
		c.Custom("active candidate workspaces cannot be empty", "execution", "workspace", "material", "files")
	case entry:
		i := slices.IndexFunc(files, func(f canonjson.Value) bool { return member(f, "path") == member(launch, "entrypoint") })
		if i < 0 {
			c.Custom("candidate entrypoint must exist in the pinned workspace manifest", "execution", "launch", "entrypoint")
		} else if !has(launch, "interpreter") && num(files[i], "mode") != 0o755 {
			c.Custom("a directly launched candidate entrypoint must be executable", "execution", "launch", "entrypoint")
		}
	}
}
