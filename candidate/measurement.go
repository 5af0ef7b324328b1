package candidate

import (
	"math"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/schema"
)

// The measured-comparison rules shared by the candidate and the profile
// comparisons (the reference's agent-improvement-measurement module):
// frozen evaluation policy, lineage, reported estimates and objectives,
// decision, power, provenance and accounting, and the summary checks that
// recompute every reported mean from the signed per-cell results.

var (
	number   = schema.Number()
	nonNeg   = schema.Number(schema.NonNegative)
	intNode  = schema.Number(schema.Int)
	openUnit = schema.Number(
		schema.Rule[float64]{Code: schema.CodeTooSmall, Message: "must be greater than 0", Test: func(f float64) bool { return f > 0 }},
		schema.Rule[float64]{Code: schema.CodeTooBig, Message: "must be less than 1", Test: func(f float64) bool { return f < 1 }},
	)

	// canonicalObjectNode is a JSON object of RFC 8785 values (findings,
	// metadata).
	canonicalObjectNode = schema.Refined(schema.Record(schema.Refined(schema.Any(), checkCanonical("value must be finite, acyclic RFC 8785 JSON"))),
		checkCanonical("value must be finite, acyclic RFC 8785 JSON"))

	// EvaluationPolicySchema is AgentCandidateEvaluationPolicy, the
	// pre-registered statistics of a measured comparison.
	EvaluationPolicySchema = schema.Object(
		schema.Req("confidenceLevel", openUnit),
		schema.Req("resamples", schema.Number(schema.Int, schema.Min(100))),
		schema.Req("bootstrapSeed", intNode),
		schema.Req("deltaThreshold", nonNeg),
		schema.Req("minProductiveRuns", schema.Number(schema.Int, schema.Min(3))),
		schema.Opt("budgetUsd", nonNeg),
		schema.Req("criticalDimensions", schema.Array(nonEmpty)),
		schema.Req("regressionTolerance", nonNeg),
	).Refine(func(c *schema.Context, v canonjson.Value) {
		names := itemStrings(at(v, "criticalDimensions"))
		for i := 1; i < len(names); i++ {
			if canonjson.CompareUTF16(names[i-1], names[i]) >= 0 {
				c.Custom("critical dimensions must be sorted and unique", "criticalDimensions")
				return
			}
		}
	})

	// CandidateLineageSchema is AgentCandidateLineage (reference 1.6.0):
	// where a measured candidate came from. Generated candidates name
	// their parents and producing runs and pin their development split.
	CandidateLineageSchema = schema.Object(
		schema.Req("source", schema.Enum("optimizer", "human", "import", "compound")),
		schema.Opt("parentDigests", schema.Array(digestNode)),
		schema.Opt("runIds", schema.Array(nonEmpty)),
		schema.Opt("profileDiffIds", schema.Array(nonEmpty)),
		schema.Opt("modelSnapshots", schema.Array(nonEmpty)),
		schema.Opt("developmentSplitDigest", digestNode),
	).Refine(func(c *schema.Context, v canonjson.Value) {
		checkLineageLists(c, v)
		if generatedLineage(c, v) && !has(v, "developmentSplitDigest") {
			c.Custom("generated candidates must pin their development split", "developmentSplitDigest")
		}
	})

	confidenceIntervalNode = schema.Object(
		schema.Req("level", openUnit),
		schema.Req("lower", number),
		schema.Req("upper", number),
		schema.Req("method", schema.LiteralString("paired-bootstrap")),
		schema.Req("statistic", schema.LiteralString("mean")),
		schema.Req("resamples", positiveInt),
	)

	estimateFields = []schema.Field{
		schema.Req("baseline", number),
		schema.Req("candidate", number),
		schema.Req("delta", number),
		schema.Req("confidenceInterval", confidenceIntervalNode),
		schema.Req("n", positiveInt),
	}

	objectiveNode = schema.Union(
		objectiveVariant(true, qualityFields("objective")...),
		objectiveVariant(false, qualityFields("objective")...),
		objectiveVariant(true, qualityFields("dimension")...),
		objectiveVariant(false, qualityFields("dimension")...),
		objectiveVariant(true, schema.Req("kind", schema.LiteralString("cost")), schema.Req("name", schema.LiteralString("cost")),
			schema.Req("direction", schema.LiteralString("lower-is-better")), schema.Req("unit", schema.LiteralString("usd"))),
		objectiveVariant(true, schema.Req("kind", schema.LiteralString("latency")), schema.Req("name", schema.LiteralString("latency")),
			schema.Req("direction", schema.LiteralString("lower-is-better")), schema.Req("unit", schema.LiteralString("milliseconds"))),
	)

	costNode = schema.Object(
		schema.Req("usd", nonNeg),
		schema.Req("provenance", schema.Enum("observed", "estimated")),
	)

	accountingNode = schema.Object(
		schema.Req("generationsExplored", safeCount),
		schema.Req("preparation", schema.Object(
			schema.Req("wallDurationMs", nonNeg),
			schema.Req("cost", costNode),
		)),
		schema.Req("measurement", schema.Object(
			schema.Req("wallDurationMs", nonNeg),
			schema.Req("workDurationMs", nonNeg),
			schema.Req("cost", costNode),
		)),
		schema.Req("total", schema.Object(
			schema.Req("wallDurationMs", nonNeg),
			schema.Req("cost", costNode),
		)),
	)

	contentHashNode = schema.String(schema.Matches("must match ^(?:sha256:)?[a-f0-9]{64}$", isContentHash))

	// comparisonFields are the members every measured comparison shares
	// after kind, experiment and measurements.
	comparisonFields = []schema.Field{
		schema.Req("overall", schema.Object(append([]schema.Field{schema.Req("name", schema.LiteralString("composite"))},
			append(estimateFields,
				schema.Req("direction", schema.LiteralString("higher-is-better")),
				schema.Req("unit", schema.LiteralString("score")))...)...)),
		schema.Req("objectives", schema.Array(objectiveNode)),
		schema.Opt("candidate", schema.Object(
			schema.Opt("label", nonEmpty),
			schema.Opt("rationale", nonEmpty),
		).Refine(func(c *schema.Context, v canonjson.Value) {
			if !has(v, "label") && !has(v, "rationale") {
				c.Custom("candidate metadata requires a label or rationale")
			}
		})),
		schema.Req("decision", schema.Object(
			schema.Req("outcome", schema.Enum("ship", "hold", "need_more_work", "model_ceiling", "arch_ceiling")),
			schema.Req("reasons", schema.Array(nonEmpty).MinItems(1)),
			schema.Req("contributingChecks", schema.Array(schema.Object(
				schema.Req("name", nonEmpty),
				schema.Req("passed", boolean),
			))),
		)),
		schema.Req("power", schema.Object(
			schema.Req("sufficient", boolean),
			schema.Req("n", positiveInt),
			schema.Req("minimumDetectableDelta", nonNeg),
			schema.Req("confidenceLevel", openUnit),
			schema.Req("scaleAssumed", boolean),
			schema.Req("sharedScorerChannel", boolean),
			schema.Req("reason", nonEmpty),
		)),
		schema.Req("provenance", schema.Object(
			schema.Req("kind", schema.LiteralString("agent-eval-loop")),
			schema.Req("schema", nonEmpty),
			schema.Req("runId", nonEmpty),
			schema.Req("recordDigest", digestNode),
			schema.Req("baselineContentHash", contentHashNode),
			schema.Req("candidateContentHash", contentHashNode),
		)),
		schema.Req("diff", schema.String()),
		schema.Req("evaluation", accountingNode),
		schema.Opt("metadata", canonicalObjectNode),
	}
)

func qualityFields(kind string) []schema.Field {
	fields := []schema.Field{schema.Req("kind", schema.LiteralString(kind))}
	if kind == "dimension" {
		fields = append(fields, schema.Req("objective", nonEmpty))
	}
	return append(fields,
		schema.Req("name", nonEmpty),
		schema.Req("direction", schema.LiteralString("higher-is-better")),
		schema.Req("unit", schema.LiteralString("score")))
}

func objectiveVariant(measured bool, fields ...schema.Field) schema.Node {
	if measured {
		fields = append(fields, schema.Req("availability", schema.LiteralString("measured")))
		return schema.Object(append(fields, estimateFields...)...)
	}
	return schema.Object(append(fields,
		schema.Req("availability", schema.LiteralString("unavailable")),
		schema.Req("reason", nonEmpty))...)
}

func isContentHash(s string) bool {
	if len(s) == 71 && s[:7] == "sha256:" {
		s = s[7:]
	}
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// approxEqual is the reference's numbersApproximatelyEqual: equal within
// 16 ulps of the larger magnitude (at least 1).
func approxEqual(a, b float64) bool {
	return math.Abs(a-b) <= epsilon*math.Max(1, math.Max(math.Abs(a), math.Abs(b)))*16
}

// epsilon is JavaScript's Number.EPSILON (2^-52).
const epsilon = 0x1p-52

// measuredPair is one paired measurement: the baseline's and the
// candidate's signed results for one benchmark cell.
type measuredPair struct{ baseline, candidate canonjson.Value }

func pairsOf(measurements canonjson.Value) []measuredPair {
	items := measurements.Items()
	out := make([]measuredPair, len(items))
	for i, m := range items {
		out[i] = measuredPair{at(m, "baseline"), at(m, "candidate")}
	}
	return out
}

// receiptValues reads the per-cell quantities a summary is recomputed
// from.
type receiptValues struct {
	score     func(canonjson.Value) float64
	dimension func(r canonjson.Value, name string) (float64, bool)
	cost      func(canonjson.Value) float64
	observed  func(canonjson.Value) bool
	latency   func(canonjson.Value) float64
}

// identityRegistry reports an identity (execution id, run cell,
// receipt, …) reused by two measured executions.
type identityRegistry struct {
	label string
	seen  map[string]map[string]bool
}

// identity is one identity of a measured execution, reported at path
// (or at the execution's path when path is nil).
type identity struct {
	kind, value string
	path        []string
}

func (r *identityRegistry) record(c *schema.Context, ids []identity, fallback []string) {
	if r.seen == nil {
		r.seen = map[string]map[string]bool{}
	}
	for _, id := range ids {
		used := r.seen[id.kind]
		if used == nil {
			used = map[string]bool{}
			r.seen[id.kind] = used
		}
		if used[id.value] {
			path := id.path
			if path == nil {
				path = fallback
			}
			c.Custom(r.label+" must not reuse "+id.kind+" identity", path...)
		}
		used[id.value] = true
	}
}

// checkEstimate: delta is candidate − baseline, and the interval is
// ordered and contains delta.
func checkEstimate(c *schema.Context, e canonjson.Value, path ...string) {
	expected := num(e, "candidate") - num(e, "baseline")
	delta := num(e, "delta")
	if math.Abs(delta-expected) > epsilon*math.Max(1, math.Abs(expected))*8 {
		c.Custom("measured delta must equal candidate minus baseline", append(path, "delta")...)
	}
	lower, upper := num(e, "confidenceInterval", "lower"), num(e, "confidenceInterval", "upper")
	if lower > upper || delta < lower || delta > upper {
		c.Custom("confidence interval must be ordered and contain the measured delta", append(path, "confidenceInterval")...)
	}
}

// checkMean: the reported mean equals the mean of the signed values.
func checkMean(c *schema.Context, reported float64, values []float64, path ...string) {
	sum := 0.0
	for _, x := range values {
		sum += x
	}
	measured := sum / float64(len(values))
	if math.Abs(reported-measured) > epsilon*math.Max(1, math.Abs(measured))*float64(len(values))*8 {
		c.Custom("reported mean must equal the signed per-cell results", path...)
	}
}

func path(names ...string) []string { return names }

// checkComparisonSummary recomputes a comparison's summary from its
// signed measurements: estimates, sample counts, means per objective,
// accounting, the objective set and the frozen policy's uncertainty.
func checkComparisonSummary(c *schema.Context, v, policy canonjson.Value, expectedN float64, pairs []measuredPair, values receiptValues) {
	overall := at(v, "overall")
	checkEstimate(c, overall, "overall")
	eval := at(v, "evaluation")
	prep, meas, total := at(eval, "preparation"), at(eval, "measurement"), at(eval, "total")
	totalProvenance := "estimated"
	if member(at(prep, "cost"), "provenance") == "observed" && member(at(meas, "cost"), "provenance") == "observed" {
		totalProvenance = "observed"
	}
	if !approxEqual(num(total, "wallDurationMs"), num(prep, "wallDurationMs")+num(meas, "wallDurationMs")) ||
		!approxEqual(num(total, "cost", "usd"), num(prep, "cost", "usd")+num(meas, "cost", "usd")) ||
		member(at(total, "cost"), "provenance") != totalProvenance {
		c.Custom("evaluation totals must equal preparation and measurement accounting", "evaluation")
	}
	if num(overall, "n") != expectedN {
		c.Custom("measured sample count must equal the complete benchmark suite", "overall", "n")
	}
	if len(pairs) > 0 {
		checkMean(c, num(overall, "baseline"), mapPairs(pairs, true, values.score), "overall", "baseline")
		checkMean(c, num(overall, "candidate"), mapPairs(pairs, false, values.score), "overall", "candidate")
	}
	seen := map[string]bool{}
	quality := map[string]bool{}
	type parent struct {
		index     int
		objective string
	}
	var parents []parent
	costs, latencies := 0, 0
	for i, o := range at(v, "objectives").Items() {
		idx := canonjson.IndexToken(i)
		kind, name := member(o, "kind"), member(o, "name")
		if member(o, "availability") == "measured" {
			checkEstimate(c, o, "objectives", idx)
			if num(o, "n") != expectedN {
				c.Custom("measured objective count must equal the complete benchmark suite", "objectives", idx, "n")
			}
			if len(pairs) > 0 {
				extract := func(r canonjson.Value) (float64, bool) {
					switch kind {
					case "objective":
						return values.score(r), true
					case "dimension":
						return values.dimension(r, name)
					case "cost":
						return values.cost(r), true
					}
					return values.latency(r), true
				}
				var baseline, candidate []float64
				complete := true
				for _, p := range pairs {
					b, okB := extract(p.baseline)
					x, okC := extract(p.candidate)
					complete = complete && okB && okC
					baseline, candidate = append(baseline, b), append(candidate, x)
				}
				if !complete {
					c.Custom("every signed receipt must include each measured dimension", "objectives", idx, "name")
				} else {
					checkMean(c, num(o, "baseline"), baseline, "objectives", idx, "baseline")
					checkMean(c, num(o, "candidate"), candidate, "objectives", idx, "candidate")
				}
			}
		}
		id := kind + ":" + name
		if kind == "dimension" {
			id = kind + ":" + member(o, "objective") + ":" + name
		}
		if seen[id] {
			c.Custom("measured objective identities must be unique", "objectives", idx, "name")
		}
		seen[id] = true
		switch kind {
		case "objective":
			quality[name] = true
		case "dimension":
			parents = append(parents, parent{i, member(o, "objective")})
		case "cost":
			costs++
		case "latency":
			latencies++
		}
	}
	costUSD, work := 0.0, 0.0
	observed := true
	for _, p := range pairs {
		costUSD += values.cost(p.baseline) + values.cost(p.candidate)
		work += values.latency(p.baseline) + values.latency(p.candidate)
		observed = observed && values.observed(p.baseline) && values.observed(p.candidate)
	}
	measProvenance := "estimated"
	if observed {
		measProvenance = "observed"
	}
	if !approxEqual(num(meas, "cost", "usd"), costUSD) || member(at(meas, "cost"), "provenance") != measProvenance ||
		!approxEqual(num(meas, "workDurationMs"), work) {
		c.Custom("measurement accounting must equal the complete signed receipts", "evaluation", "measurement")
	}
	if costs != 1 || latencies != 1 {
		c.Custom("measured comparison must contain exactly one cost and latency objective", "objectives")
	}
	if len(quality) == 0 {
		c.Custom("measured comparison must contain at least one quality objective", "objectives")
	}
	for _, p := range parents {
		if !quality[p.objective] {
			c.Custom("measured dimension must name a present quality objective", "objectives", canonjson.IndexToken(p.index), "objective")
		}
	}
	if num(at(v, "power"), "n") != expectedN {
		c.Custom("power analysis must use the paired held-out sample", "power", "n")
	}
	level, resamples := num(policy, "confidenceLevel"), num(policy, "resamples")
	ci := at(overall, "confidenceInterval")
	if num(ci, "level") != level || num(ci, "resamples") != resamples || num(at(v, "power"), "confidenceLevel") != level {
		c.Custom("reported uncertainty must use the frozen evaluation policy", "experiment", "policy")
	}
	for i, o := range at(v, "objectives").Items() {
		ci := at(o, "confidenceInterval")
		if member(o, "availability") == "measured" && (num(ci, "level") != level || num(ci, "resamples") != resamples) {
			c.Custom("objective uncertainty must use the frozen evaluation policy", "objectives", canonjson.IndexToken(i), "confidenceInterval")
		}
	}
}

func mapPairs(pairs []measuredPair, baseline bool, f func(canonjson.Value) float64) []float64 {
	out := make([]float64, len(pairs))
	for i, p := range pairs {
		r := p.candidate
		if baseline {
			r = p.baseline
		}
		out[i] = f(r)
	}
	return out
}

// dimensionScore finds the named dimension's score in a list of
// benchmark dimensions.
func dimensionScore(dimensions canonjson.Value, name string) (float64, bool) {
	for _, d := range dimensions.Items() {
		if member(d, "name") == name {
			return num(d, "score"), true
		}
	}
	return 0, false
}

// cell is one benchmark cell a measurement index stands for.
type cell struct {
	index, task int
	rep         int64
}

// cells returns the (task, repetition) of every measurement index below
// both len(measurements) and tasks×reps, in index order (task-major), as
// the reference's nested loops visit them; it never visits cells that
// have no measurement, however large reps is.
func cells(measurements, tasks int, reps int64) []cell {
	var out []cell
	for index := 0; index < measurements && reps > 0; index++ {
		task := int64(index) / reps
		if task >= int64(tasks) {
			break
		}
		out = append(out, cell{index, int(task), int64(index) % reps})
	}
	return out
}
