package search

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/agentrt/agentrt/candidate"
	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
)

// ProposalInputs are what a proposal pins that Improve cannot know: the
// base's source, the executor's identity, the judges' pinned grader
// artifact, the model snapshot the agent resolved to, and the limits the
// measurements ran under.
type ProposalInputs struct {
	// RunID names the proposal (its idempotency key in package improve).
	RunID string
	// ProposedAt is the proposal's time (UTC, millisecond precision).
	ProposedAt time.Time
	// Source says where the base profile came from; its SourceDigest is
	// set to the base's digest.
	Source candidate.Source
	// ExecutionRef is the measured runner (kind is filled in).
	ExecutionRef candidate.ProfileExecutionRef
	// Grader pins the judges as one content-addressed grader.
	Grader candidate.Grader
	// Model is the resolved model the agent ran.
	Model candidate.ResolvedModel
	// Limits are the frozen limits every measured run stayed within.
	Limits contract.ExecutionLimits
	// Findings are the proposal's findings (may be empty).
	Findings []map[string]canonjson.Value
}

// MinProductiveRuns is the fewest paired test cases a proposal rests on.
const MinProductiveRuns = 3

// ErrNotProposable refuses a result that cannot become a proposal: it
// held, rests on fewer than MinProductiveRuns test cases, or lacks an
// observed fact (a token count, a model call count) a run receipt needs.
var ErrNotProposable = errors.New("search: the result cannot be proposed")

// Proposal turns a shipping result into an AgentImprovementProposal that
// carries an agent-profile-improvement-measured-comparison built from
// Improve's own test measurements: one task per test case, a receipt per
// arm, the summary recomputed from them. The proposal is validated by
// package candidate (the one owner of its rules) before it is returned,
// so a refusal there is a *schema.Error; package improve's
// ProposeImprovement takes it as it is. It activates nothing.
func Proposal(res Result, in ProposalInputs) (*candidate.ImprovementProposal, error) {
	switch {
	case res.Decision != Ship:
		return nil, fmt.Errorf("%w: the decision is %s (%s)", ErrNotProposable, res.Decision, strings.Join(res.Reasons, "; "))
	case len(res.cells) < MinProductiveRuns:
		return nil, fmt.Errorf("%w: %d test cases; a proposal needs at least %d", ErrNotProposable, len(res.cells), MinProductiveRuns)
	case res.minimumLift < 0:
		return nil, fmt.Errorf("%w: a negative minimum lift is not a proposal's delta threshold", ErrNotProposable)
	case res.LiftInterval.Seed > 1<<53:
		return nil, fmt.Errorf("%w: the bootstrap seed %d is not a safe integer", ErrNotProposable, res.LiftInterval.Seed)
	case len(res.Candidate.Diffs) == 0:
		// A code candidate changes the repository, not the profile: the
		// profile route has nothing to activate.
		return nil, fmt.Errorf("%w: the candidate does not change the profile (a code candidate is a git-patch code state of a candidate bundle, not a profile change)", ErrNotProposable)
	}
	ref := in.ExecutionRef
	ref.Kind = candidate.KindProfileExecutionRefValue
	source := in.Source
	source.SourceDigest = res.Provenance.BaseDigest

	// The suite: one task per test case, each pinned to the grader,
	// model and limits.
	var tasks []candidate.ProfileTask
	var taskDigests []string
	var seeds []int64
	for i, sc := range res.testCases {
		task := candidate.ProfileTask{Kind: candidate.KindProfileTaskValue, DigestAlgorithm: candidate.DigestAlgorithm,
			Scenario: candidate.ProfileScenario{ID: sc.ID, Kind: "improve-case", Digest: sc.digest()},
			Grader:   in.Grader, Model: in.Model, Limits: in.Limits}
		if err := selfDigest(&task, &task.Digest); err != nil {
			return nil, err
		}
		tasks, taskDigests, seeds = append(tasks, task), append(taskDigests, task.Digest), append(seeds, int64(i))
	}
	suite := candidate.ProfileSuite{Kind: candidate.KindProfileSuiteValue, DigestAlgorithm: candidate.DigestAlgorithm,
		SplitDigest: res.testSplit, TaskDigests: taskDigests, Reps: 1, Seeds: seeds}
	if err := selfDigest(&suite, &suite.Digest); err != nil {
		return nil, err
	}
	// The producing runs: the method's own, else the search run itself.
	runIDs := res.Provenance.MethodRunIDs
	if len(runIDs) == 0 {
		runIDs = []string{in.RunID}
	}
	lineage := candidate.CandidateLineage{Source: "optimizer", ParentDigests: []string{res.Provenance.BaseDigest},
		RunIDs: runIDs, DevelopmentSplitDigest: &res.devSplit}
	policy := candidate.EvaluationPolicy{ConfidenceLevel: res.LiftInterval.Level, Resamples: int64(res.LiftInterval.Resamples),
		BootstrapSeed: int64(res.LiftInterval.Seed), DeltaThreshold: res.minimumLift, MinProductiveRuns: MinProductiveRuns,
		CriticalDimensions: []string{}}
	exp := candidate.ProfileExperiment{Kind: candidate.KindProfileExperimentValue, DigestAlgorithm: candidate.DigestAlgorithm,
		Source: source, ExecutionRef: ref,
		Baseline: candidate.ProfileArm{StateDigest: res.Provenance.BaseDigest}, Candidate: candidate.ProfileArm{StateDigest: res.Candidate.Digest},
		Change: candidate.ProfileChange(res.Candidate.Diffs), CandidateLineage: lineage,
		Benchmark: candidate.ProfileSuiteInputs{Suite: suite, Tasks: tasks}, Policy: policy}
	if err := selfDigest(&exp, &exp.Digest); err != nil {
		return nil, err
	}

	// One receipt per arm and case.
	var pairs []candidate.ProfileMeasurement
	var costs, latencies [2][]float64
	wallStart, wallEnd := math.Inf(1), math.Inf(-1)
	for i, cell := range res.cells {
		var rs [2]candidate.ProfileRunReceipt
		for arm, m := range cell {
			r, err := receipt(exp, tasks[i], i, [2]string{"baseline", "candidate"}[arm], m, ref, in)
			if err != nil {
				return nil, err
			}
			rs[arm] = r
			costs[arm] = append(costs[arm], float64(r.Usage.CostUSDNanos+r.Grading.Usage.CostUSDNanos)/1e9)
			latencies[arm] = append(latencies[arm], r.Timing.DurationMs+r.Grading.Timing.DurationMs)
			wallStart, wallEnd = math.Min(wallStart, m.StartedAtMs), math.Max(wallEnd, m.JudgedAtMs)
		}
		pairs = append(pairs, candidate.ProfileMeasurement{Baseline: rs[0], Candidate: rs[1]})
	}
	n := int64(len(pairs))
	estimate := func(base, cand []float64) (float64, float64, float64, candidate.ConfidenceInterval) {
		return pairedEstimate(base, cand, res.LiftInterval)
	}
	var scores [2][]float64
	for _, t := range res.Test {
		scores[0], scores[1] = append(scores[0], t.Baseline), append(scores[1], t.Candidate)
	}
	overallCI := candidate.ConfidenceInterval{Level: res.LiftInterval.Level, Lower: res.LiftInterval.Lower, Upper: res.LiftInterval.Upper,
		Method: "paired-bootstrap", Statistic: "mean", Resamples: int64(res.LiftInterval.Resamples)}
	objective := func(kind, name, direction, unit string, base, cand []float64) candidate.Objective {
		b, c, d, ci := estimate(base, cand)
		if kind == "objective" {
			b, c, d, ci = res.BaselineScore, res.CandidateScore, res.Lift, overallCI
		}
		return candidate.Objective{Kind: kind, Name: name, Direction: direction, Unit: unit, Availability: "measured",
			Baseline: &b, Candidate: &c, Delta: &d, ConfidenceInterval: &ci, N: &n}
	}
	measCost := sum(costs[0]) + sum(costs[1])
	total := res.Spend.Total.Value
	prepCost := math.Max(total-measCost, 0)
	var eval candidate.EvaluationAccounting
	eval.GenerationsExplored = int64(len(res.Population))
	eval.Preparation.WallDurationMs = res.searchWallMs
	eval.Preparation.Cost = candidate.ImprovementCost{USD: prepCost, Provenance: "observed"}
	eval.Measurement.WallDurationMs = wallEnd - wallStart
	eval.Measurement.WorkDurationMs = sum(latencies[0]) + sum(latencies[1])
	eval.Measurement.Cost = candidate.ImprovementCost{USD: measCost, Provenance: "observed"}
	eval.Total.WallDurationMs = eval.Preparation.WallDurationMs + eval.Measurement.WallDurationMs
	eval.Total.Cost = candidate.ImprovementCost{USD: prepCost + measCost, Provenance: "observed"}
	diff, err := canonjson.ToValue(res.Candidate.Diffs)
	if err != nil {
		return nil, err
	}
	cmp := candidate.ProfileMeasuredComparison{Kind: candidate.KindProfileMeasuredComparisonValue, Experiment: exp, Measurements: pairs,
		ComparisonSummary: candidate.ComparisonSummary{
			Overall: candidate.OverallEstimate{Name: "composite", Baseline: res.BaselineScore, Candidate: res.CandidateScore, Delta: res.Lift,
				ConfidenceInterval: overallCI, N: n, Direction: "higher-is-better", Unit: "score"},
			Objectives: []candidate.Objective{
				objective("objective", "score", "higher-is-better", "score", scores[0], scores[1]),
				objective("cost", "cost", "lower-is-better", "usd", costs[0], costs[1]),
				objective("latency", "latency", "lower-is-better", "milliseconds", latencies[0], latencies[1]),
			},
			Decision: candidate.Decision{Outcome: "ship", Reasons: res.Reasons, ContributingChecks: []candidate.DecisionCheck{
				{Name: "lift-interval-clears-minimum-lift", Passed: true}, {Name: "all-spend-known", Passed: true}}},
			Power: candidate.Power{Sufficient: true, N: n, MinimumDetectableDelta: math.Max(res.minimumLift, 0), ConfidenceLevel: res.LiftInterval.Level,
				ScaleAssumed: true, SharedScorerChannel: false,
				Reason: fmt.Sprintf("%d paired test cases, at least the pre-registered %d; the interval's lower bound cleared the minimum lift", n, MinProductiveRuns)},
			Provenance: candidate.ComparisonProvenance{Kind: "agent-eval-loop", Schema: "agentrt/improve-search/v1", RunID: in.RunID,
				RecordDigest: res.Provenance.RecipeDigest, BaselineContentHash: res.Provenance.BaseDigest, CandidateContentHash: res.Candidate.Digest},
			Diff:       string(canonjson.Marshal(diff)),
			Evaluation: eval,
		}}
	surfaces, err := candidate.ChangedSurfaces(res.Candidate.Diffs)
	if err != nil {
		return nil, err
	}
	findings := in.Findings
	if findings == nil {
		findings = []map[string]canonjson.Value{}
	}
	p := &candidate.ImprovementProposal{Kind: candidate.KindImprovementProposalValue, RunID: in.RunID, ChangedSurfaces: surfaces,
		ProposedAt: in.ProposedAt.UTC().Format("2006-01-02T15:04:05.000Z"), Findings: findings,
		Evaluation: candidate.ProposalEvaluation{Profile: &cmp}}
	if err := selfDigest(p, &p.Digest); err != nil {
		return nil, err
	}
	v, err := canonjson.ToValue(p)
	if err != nil {
		return nil, err
	}
	return candidate.ParseImprovementProposal(canonjson.Marshal(v))
}

// receipt is one arm's run receipt of one test case.
func receipt(exp candidate.ProfileExperiment, task candidate.ProfileTask, index int, arm string, m measurement,
	ref candidate.ProfileExecutionRef, in ProposalInputs) (candidate.ProfileRunReceipt, error) {
	need := func(p *int64, what string) (int64, error) {
		if p == nil {
			return 0, fmt.Errorf("%w: case %s (%s) has no observed %s", ErrNotProposable, m.Case, arm, what)
		}
		return *p, nil
	}
	var usage contract.FixedSpend
	var err error
	for _, f := range []struct {
		dst  *int64
		src  *int64
		what string
	}{{&usage.InputTokens, m.InputTokens, "input tokens"}, {&usage.OutputTokens, m.OutputTokens, "output tokens"},
		{&usage.ModelCalls, m.ModelCalls, "model call count"}} {
		if *f.dst, err = need(f.src, f.what); err != nil {
			return candidate.ProfileRunReceipt{}, err
		}
	}
	if m.CachedTokens != nil {
		usage.CachedInputTokens = *m.CachedTokens
	}
	if m.ReasoningTokens != nil {
		usage.ReasoningTokens = *m.ReasoningTokens
	}
	agentCost, judgeCost := m.AgentCost.ledger(), m.JudgeCost.ledger()
	if !agentCost.Known() || !judgeCost.Known() {
		return candidate.ProfileRunReceipt{}, fmt.Errorf("%w: case %s (%s) has an unknown cost", ErrNotProposable, m.Case, arm)
	}
	usage.CostUSDNanos, usage.CostProvenance = int64(math.Round(agentCost.Value*1e9)), contract.CostObserved
	id := m.RunID
	if id == "" {
		id = "improve:" + strings.TrimPrefix(m.Candidate, "sha256:")[:16] + ":" + m.Case
	}
	evidence := func(kind, identity string, x any) (candidate.ProfileEvidence, error) {
		d, err := candidate.DigestOf(x)
		return candidate.ProfileEvidence{Kind: kind, Identity: identity, Digest: d}, err
	}
	cell := candidate.ProfileRunCell{Kind: candidate.KindProfileRunCellValue, ExperimentDigest: exp.Digest, Arm: arm,
		StateDigest: m.Candidate, SuiteDigest: exp.Benchmark.Suite.Digest, TaskDigest: task.Digest, TaskIndex: int64(index),
		Seed: int64(index), Attempt: 1}
	if err := selfDigest(&cell, &cell.Digest); err != nil {
		return candidate.ProfileRunReceipt{}, err
	}
	runRecord, err := evidence("agentrt-measurement", id, m)
	if err != nil {
		return candidate.ProfileRunReceipt{}, err
	}
	billing, err := evidence("agentrt-ledger", "ledger:"+id, usage)
	if err != nil {
		return candidate.ProfileRunReceipt{}, err
	}
	trace, err := evidence("agentrt-run-usage", "usage:"+id, map[string]any{"runId": id, "modelCalls": usage.ModelCalls})
	if err != nil {
		return candidate.ProfileRunReceipt{}, err
	}
	verdict, err := evidence("agentrt-judge-verdicts", "verdict:"+id, map[string]any{"case": m.Case, "scores": m.JudgeScores})
	if err != nil {
		return candidate.ProfileRunReceipt{}, err
	}
	r := candidate.ProfileRunReceipt{Kind: candidate.KindProfileRunReceiptValue, DigestAlgorithm: candidate.DigestAlgorithm,
		ExecutionID: id, ExecutionRef: ref, RunCell: cell, RunRecord: runRecord, Billing: []candidate.ProfileEvidence{billing},
		Timing: timing(m.StartedAtMs, m.EndedAtMs), Steps: usage.ModelCalls, ResolvedModel: in.Model, Limits: in.Limits, Usage: usage,
		Trace:   candidate.ProfileTrace{Evidence: trace, EventCount: usage.ModelCalls, ModelCallCount: usage.ModelCalls},
		Output:  candidate.ProfileEvidence{Kind: "agent-output", Identity: "output:" + id, Digest: m.OutputDigest},
		Outcome: candidate.ProfileRunOutcome{Status: "succeeded"},
		Grading: candidate.ProfileGrading{Grader: in.Grader, Evidence: verdict, Timing: timing(m.EndedAtMs, m.JudgedAtMs),
			Usage: contract.FixedSpend{CostUSDNanos: int64(math.Round(judgeCost.Value * 1e9)), CostProvenance: contract.CostObserved},
			Score: m.Score, Passed: m.Score >= 0.5, Dimensions: []candidate.Dimension{}},
	}
	if err := selfDigest(&r, &r.Digest); err != nil {
		return candidate.ProfileRunReceipt{}, err
	}
	return r, nil
}

// timing is a receipt's span; the duration is computed from the rounded
// ends so that it equals them exactly.
func timing(start, end float64) candidate.ProfileTiming {
	start, end = math.Round(start*1000)/1000, math.Round(end*1000)/1000
	return candidate.ProfileTiming{StartedAtMs: start, EndedAtMs: end, DurationMs: end - start}
}

// selfDigest sets *digest to doc's self-digest.
func selfDigest(doc any, digest *string) error {
	*digest = ""
	d, err := candidate.SelfDigest(doc)
	if err != nil {
		return err
	}
	*digest = d
	return nil
}

func sum(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s
}

// pairedEstimate is one objective's estimate from paired measurements:
// the arms' means, the delta and the paired-bootstrap interval of the
// mean delta (resamples, level and seed from li). The proposal's rule is
// delta = candidate − baseline; the mean of the paired deltas equals it
// only up to rounding, which grows with the measured values (latencies
// of hundreds of milliseconds) while the checker's tolerance follows the
// delta, so the delta is the difference of the means and the interval is
// widened by that rounding to contain it.
func pairedEstimate(base, cand []float64, li Interval) (b, c, d float64, ci candidate.ConfidenceInterval) {
	deltas := make([]float64, len(base))
	for i := range base {
		deltas[i] = cand[i] - base[i]
	}
	iv := PairedBootstrap(deltas, li.Resamples, li.Level, li.Seed)
	b, c = mean(base), mean(cand)
	d = c - b
	return b, c, d, candidate.ConfidenceInterval{Level: iv.Level, Lower: math.Min(iv.Lower, d), Upper: math.Max(iv.Upper, d),
		Method: "paired-bootstrap", Statistic: "mean", Resamples: int64(iv.Resamples)}
}
