package candidate

import "github.com/agentrt/agentrt/canonjson"

// EvaluationPolicy is AgentCandidateEvaluationPolicy.
type EvaluationPolicy struct {
	ConfidenceLevel     float64  `json:"confidenceLevel"`
	Resamples           int64    `json:"resamples"`
	BootstrapSeed       int64    `json:"bootstrapSeed"`
	DeltaThreshold      float64  `json:"deltaThreshold"`
	MinProductiveRuns   int64    `json:"minProductiveRuns"`
	BudgetUSD           *float64 `json:"budgetUsd,omitzero"`
	CriticalDimensions  []string `json:"criticalDimensions"`
	RegressionTolerance float64  `json:"regressionTolerance"`
}

// CandidateLineage is AgentCandidateLineage (reference 1.6.0).
type CandidateLineage struct {
	Source                 string   `json:"source"`
	ParentDigests          []string `json:"parentDigests,omitzero"`
	RunIDs                 []string `json:"runIds,omitzero"`
	ProfileDiffIDs         []string `json:"profileDiffIds,omitzero"`
	ModelSnapshots         []string `json:"modelSnapshots,omitzero"`
	DevelopmentSplitDigest *string  `json:"developmentSplitDigest,omitzero"`
}

// ConfidenceInterval is a paired-bootstrap interval of a mean.
type ConfidenceInterval struct {
	Level     float64 `json:"level"`
	Lower     float64 `json:"lower"`
	Upper     float64 `json:"upper"`
	Method    string  `json:"method"`
	Statistic string  `json:"statistic"`
	Resamples int64   `json:"resamples"`
}

// OverallEstimate is a comparison's composite score estimate.
type OverallEstimate struct {
	Name               string             `json:"name"`
	Baseline           float64            `json:"baseline"`
	Candidate          float64            `json:"candidate"`
	Delta              float64            `json:"delta"`
	ConfidenceInterval ConfidenceInterval `json:"confidenceInterval"`
	N                  int64              `json:"n"`
	Direction          string             `json:"direction"`
	Unit               string             `json:"unit"`
}

// Objective is one measured objective: a quality objective, a dimension
// of one (Objective names it), cost or latency. A measured objective
// carries the estimate (Baseline … N); an unavailable one its Reason.
type Objective struct {
	Kind               string              `json:"kind"`
	Objective          *string             `json:"objective,omitzero"`
	Name               string              `json:"name"`
	Direction          string              `json:"direction"`
	Unit               string              `json:"unit"`
	Availability       string              `json:"availability"`
	Baseline           *float64            `json:"baseline,omitzero"`
	Candidate          *float64            `json:"candidate,omitzero"`
	Delta              *float64            `json:"delta,omitzero"`
	ConfidenceInterval *ConfidenceInterval `json:"confidenceInterval,omitzero"`
	N                  *int64              `json:"n,omitzero"`
	Reason             *string             `json:"reason,omitzero"`
}

// CandidateLabel labels a compared candidate.
type CandidateLabel struct {
	Label     *string `json:"label,omitzero"`
	Rationale *string `json:"rationale,omitzero"`
}

// Decision is a comparison's verdict and its reasons.
type Decision struct {
	Outcome            string          `json:"outcome"`
	Reasons            []string        `json:"reasons"`
	ContributingChecks []DecisionCheck `json:"contributingChecks"`
}

// DecisionCheck is one named check behind a decision.
type DecisionCheck struct {
	Name   string `json:"name"`
	Passed bool   `json:"passed"`
}

// Power is a comparison's pre-registered power analysis.
type Power struct {
	Sufficient             bool    `json:"sufficient"`
	N                      int64   `json:"n"`
	MinimumDetectableDelta float64 `json:"minimumDetectableDelta"`
	ConfidenceLevel        float64 `json:"confidenceLevel"`
	ScaleAssumed           bool    `json:"scaleAssumed"`
	SharedScorerChannel    bool    `json:"sharedScorerChannel"`
	Reason                 string  `json:"reason"`
}

// ComparisonProvenance names the evaluation loop record a comparison
// came from.
type ComparisonProvenance struct {
	Kind                 string `json:"kind"`
	Schema               string `json:"schema"`
	RunID                string `json:"runId"`
	RecordDigest         string `json:"recordDigest"`
	BaselineContentHash  string `json:"baselineContentHash"`
	CandidateContentHash string `json:"candidateContentHash"`
}

// ImprovementCost is a cost in US dollars and whether it was observed or
// estimated.
type ImprovementCost struct {
	USD        float64 `json:"usd"`
	Provenance string  `json:"provenance"`
}

// EvaluationAccounting is an improvement's wall time and cost:
// preparation, measurement and their total.
type EvaluationAccounting struct {
	GenerationsExplored int64 `json:"generationsExplored"`
	Preparation         struct {
		WallDurationMs float64         `json:"wallDurationMs"`
		Cost           ImprovementCost `json:"cost"`
	} `json:"preparation"`
	Measurement struct {
		WallDurationMs float64         `json:"wallDurationMs"`
		WorkDurationMs float64         `json:"workDurationMs"`
		Cost           ImprovementCost `json:"cost"`
	} `json:"measurement"`
	Total struct {
		WallDurationMs float64         `json:"wallDurationMs"`
		Cost           ImprovementCost `json:"cost"`
	} `json:"total"`
}

// ComparisonSummary holds the members every measured comparison shares.
type ComparisonSummary struct {
	Overall    OverallEstimate            `json:"overall"`
	Objectives []Objective                `json:"objectives"`
	Candidate  *CandidateLabel            `json:"candidate,omitzero"`
	Decision   Decision                   `json:"decision"`
	Power      Power                      `json:"power"`
	Provenance ComparisonProvenance       `json:"provenance"`
	Diff       string                     `json:"diff"`
	Evaluation EvaluationAccounting       `json:"evaluation"`
	Metadata   map[string]canonjson.Value `json:"metadata,omitzero"`
}

// ProfileEvidence is AgentProfileImprovementEvidence.
type ProfileEvidence struct {
	Kind     string `json:"kind"`
	Identity string `json:"identity"`
	Digest   string `json:"digest"`
}

// ProfileTask is AgentProfileImprovementTask (self-digested).
type ProfileTask struct {
	Kind            string          `json:"kind"`
	DigestAlgorithm string          `json:"digestAlgorithm"`
	Scenario        ProfileScenario `json:"scenario"`
	Grader          Grader          `json:"grader"`
	Model           ResolvedModel   `json:"model"`
	Limits          ExecutionLimits `json:"limits"`
	Digest          string          `json:"digest"`
}

// ProfileScenario identifies a profile task's scenario.
type ProfileScenario struct {
	ID     string `json:"id"`
	Kind   string `json:"kind"`
	Digest string `json:"digest"`
}

// ProfileSuite is AgentProfileImprovementSuite (self-digested).
type ProfileSuite struct {
	Kind            string   `json:"kind"`
	DigestAlgorithm string   `json:"digestAlgorithm"`
	SplitDigest     string   `json:"splitDigest"`
	TaskDigests     []string `json:"taskDigests"`
	Reps            int64    `json:"reps"`
	Seeds           []int64  `json:"seeds"`
	Digest          string   `json:"digest"`
}

// ProfileSuiteInputs is AgentProfileImprovementSuiteInputs.
type ProfileSuiteInputs struct {
	Suite ProfileSuite  `json:"suite"`
	Tasks []ProfileTask `json:"tasks"`
}

// ProfileArm is one arm of a profile experiment: a complete profile
// state.
type ProfileArm struct {
	StateDigest string `json:"stateDigest"`
}

// ProfileExperiment is AgentProfileImprovementExperiment
// (self-digested).
type ProfileExperiment struct {
	Kind             string              `json:"kind"`
	DigestAlgorithm  string              `json:"digestAlgorithm"`
	Source           Source              `json:"source"`
	ExecutionRef     ProfileExecutionRef `json:"executionRef"`
	Baseline         ProfileArm          `json:"baseline"`
	Candidate        ProfileArm          `json:"candidate"`
	Change           ProfileChange       `json:"change"`
	CandidateLineage CandidateLineage    `json:"candidateLineage"`
	Benchmark        ProfileSuiteInputs  `json:"benchmark"`
	Policy           EvaluationPolicy    `json:"policy"`
	Digest           string              `json:"digest"`
}

// ProfileRunCell is AgentProfileImprovementRunCell (self-digested).
type ProfileRunCell struct {
	Kind             string `json:"kind"`
	ExperimentDigest string `json:"experimentDigest"`
	Arm              string `json:"arm"`
	StateDigest      string `json:"stateDigest"`
	SuiteDigest      string `json:"suiteDigest"`
	TaskDigest       string `json:"taskDigest"`
	TaskIndex        int64  `json:"taskIndex"`
	Repetition       int64  `json:"repetition"`
	Seed             int64  `json:"seed"`
	Attempt          int64  `json:"attempt"`
	Digest           string `json:"digest"`
}

// ProfileTiming is a profile run's or grading's wall-clock span in
// milliseconds.
type ProfileTiming struct {
	StartedAtMs float64 `json:"startedAtMs"`
	EndedAtMs   float64 `json:"endedAtMs"`
	DurationMs  float64 `json:"durationMs"`
}

// ProfileGrading is a profile run's grading.
type ProfileGrading struct {
	Grader     Grader          `json:"grader"`
	Evidence   ProfileEvidence `json:"evidence"`
	Timing     ProfileTiming   `json:"timing"`
	Usage      FixedSpend      `json:"usage"`
	Score      float64         `json:"score"`
	Passed     bool            `json:"passed"`
	Dimensions []Dimension     `json:"dimensions"`
}

// ProfileTrace is a run's retained trace.
type ProfileTrace struct {
	Evidence       ProfileEvidence `json:"evidence"`
	EventCount     int64           `json:"eventCount"`
	ModelCallCount int64           `json:"modelCallCount"`
}

// ProfileRunOutcome is "succeeded", or "failed" with Code and Message.
type ProfileRunOutcome struct {
	Status  string  `json:"status"`
	Code    *string `json:"code,omitzero"`
	Message *string `json:"message,omitzero"`
}

// ProfileRunReceipt is AgentProfileImprovementRunReceipt
// (self-digested).
type ProfileRunReceipt struct {
	Kind            string              `json:"kind"`
	DigestAlgorithm string              `json:"digestAlgorithm"`
	ExecutionID     string              `json:"executionId"`
	ExecutionRef    ProfileExecutionRef `json:"executionRef"`
	RunCell         ProfileRunCell      `json:"runCell"`
	RunRecord       ProfileEvidence     `json:"runRecord"`
	Billing         []ProfileEvidence   `json:"billing"`
	Timing          ProfileTiming       `json:"timing"`
	Steps           int64               `json:"steps"`
	ResolvedModel   ResolvedModel       `json:"resolvedModel"`
	Limits          ExecutionLimits     `json:"limits"`
	Usage           FixedSpend          `json:"usage"`
	Trace           ProfileTrace        `json:"trace"`
	Output          ProfileEvidence     `json:"output"`
	Outcome         ProfileRunOutcome   `json:"outcome"`
	Grading         ProfileGrading      `json:"grading"`
	Digest          string              `json:"digest"`
}

// ProfileMeasurement is one paired profile measurement.
type ProfileMeasurement struct {
	Baseline  ProfileRunReceipt `json:"baseline"`
	Candidate ProfileRunReceipt `json:"candidate"`
}

// ProfileMeasuredComparison is
// AgentProfileImprovementMeasuredComparison.
type ProfileMeasuredComparison struct {
	Kind         string               `json:"kind"`
	Experiment   ProfileExperiment    `json:"experiment"`
	Measurements []ProfileMeasurement `json:"measurements"`
	ComparisonSummary
}

// CandidateExperiment is AgentCandidateExperiment.
type CandidateExperiment struct {
	Kind             string               `json:"kind"`
	DigestAlgorithm  string               `json:"digestAlgorithm"`
	Baseline         Bundle               `json:"baseline"`
	Candidate        Bundle               `json:"candidate"`
	CandidateLineage CandidateLineage     `json:"candidateLineage"`
	Benchmark        BenchmarkSuiteInputs `json:"benchmark"`
	Policy           EvaluationPolicy     `json:"policy"`
	Digest           string               `json:"digest"`
}

// CandidateMeasurement is one paired bundle measurement.
type CandidateMeasurement struct {
	Baseline  ExecutionEvidence `json:"baseline"`
	Candidate ExecutionEvidence `json:"candidate"`
}

// CandidateMeasuredComparison is AgentImprovementMeasuredComparison.
type CandidateMeasuredComparison struct {
	Kind         string                 `json:"kind"`
	Experiment   CandidateExperiment    `json:"experiment"`
	Measurements []CandidateMeasurement `json:"measurements"`
	ComparisonSummary
}

// ImprovementProposal is AgentImprovementProposal.
type ImprovementProposal struct {
	Kind            string                       `json:"kind"`
	RunID           string                       `json:"runId"`
	ChangedSurfaces []string                     `json:"changedSurfaces"`
	ProposedAt      string                       `json:"proposedAt"`
	Findings        []map[string]canonjson.Value `json:"findings"`
	Evaluation      ProposalEvaluation           `json:"evaluation"`
	Digest          string                       `json:"digest"`
}

// ProposalEvaluation is the comparison a proposal carries: exactly one of
// Candidate (bundles) and Profile (profile states) is set.
type ProposalEvaluation struct {
	Candidate *CandidateMeasuredComparison
	Profile   *ProfileMeasuredComparison
}

// MarshalValue implements canonjson.ValueMarshaler.
func (e ProposalEvaluation) MarshalValue() (canonjson.Value, error) {
	if e.Candidate != nil {
		return canonjson.ToValue(e.Candidate)
	}
	if e.Profile != nil {
		return canonjson.ToValue(e.Profile)
	}
	return canonjson.Value{}, nil
}

// UnmarshalValue implements canonjson.ValueUnmarshaler, choosing the
// comparison by its kind.
func (e *ProposalEvaluation) UnmarshalValue(v canonjson.Value) error {
	*e = ProposalEvaluation{}
	if member(v, "kind") == KindCandidateMeasuredComparisonValue {
		e.Candidate = new(CandidateMeasuredComparison)
		return canonjson.FromValue(v, e.Candidate)
	}
	e.Profile = new(ProfileMeasuredComparison)
	return canonjson.FromValue(v, e.Profile)
}
