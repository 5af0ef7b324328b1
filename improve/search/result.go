package search

import (
	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/profile"
)

// Decision is Improve's verdict.
type Decision string

// Decisions.
const (
	// Ship: the interval's lower bound cleared MinimumLift and every cost
	// is known. Improve still activates nothing.
	Ship Decision = "ship"
	// Hold: anything else; Result.Reasons say why.
	Hold Decision = "hold"
)

// Candidate is a complete, validated candidate profile.
type Candidate struct {
	// Profile is the complete candidate (a copy the caller owns).
	Profile *profile.Profile `json:"profile"`
	// Digest is profile.Digest of Profile.
	Digest string `json:"digest"`
	// Diffs are the changes from the base (profile.Diffs).
	Diffs []profile.Diff `json:"diffs"`
}

// PopulationEntry is one unique candidate the search asked about.
type PopulationEntry struct {
	// Digest is the candidate profile's digest ("" when it was refused
	// before it had one).
	Digest string `json:"digest,omitzero"`
	// Surface is the candidate's surface value.
	Surface canonjson.Value `json:"surface,omitzero"`
	// Diffs are its changes from the base.
	Diffs []profile.Diff `json:"diffs,omitzero"`
	// Status is "measured" or "refused"; Reason says why it was refused.
	Status string `json:"status"`
	Reason string `json:"reason,omitzero"`
	// Measured counts its distinct measured search cases, MeanScore
	// their mean (nil when none was measured).
	Measured  int      `json:"measured"`
	MeanScore *float64 `json:"meanScore,omitzero"`
}

// PairedCase is one test case's baseline and candidate scores.
type PairedCase struct {
	ID        string  `json:"id"`
	Baseline  float64 `json:"baseline"`
	Candidate float64 `json:"candidate"`
}

// Spend is a run's spend in US dollars by where it went; each is a
// ledger amount: unknown when any part was not reported, a floor when
// part of it was.
type Spend struct {
	Optimizer  ledger.Amount[float64] `json:"optimizer"`
	Candidates ledger.Amount[float64] `json:"candidates"`
	Judges     ledger.Amount[float64] `json:"judges"`
	Final      ledger.Amount[float64] `json:"final"`
	Total      ledger.Amount[float64] `json:"total"`
}

// Provenance says where the result came from.
type Provenance struct {
	// Method is the method's identity; Reported what it said of itself.
	Method   MethodIdentity    `json:"method"`
	Reported map[string]string `json:"reported,omitzero"`
	// MethodRunIDs are the runs the method recorded.
	MethodRunIDs []string `json:"methodRunIds,omitzero"`
	// RecipeDigest is the resume identity.
	RecipeDigest string `json:"recipeDigest"`
	// BaseDigest is the base profile's digest.
	BaseDigest string `json:"baseDigest"`
	// Resumed is set when a run dir's journal of this recipe was reused;
	// Reused counts the measurements taken from it, Evaluations those
	// run now.
	Resumed     bool `json:"resumed"`
	Reused      int  `json:"reused"`
	Evaluations int  `json:"evaluations"`
	// RunDir is the run directory ("" without one).
	RunDir string `json:"runDir,omitzero"`
	// Resume is the resume mode asked for and ResumeStatus what came of
	// it; Superseded is where a journal of another recipe was moved.
	Resume       Resume       `json:"resume"`
	ResumeStatus ResumeStatus `json:"resumeStatus"`
	Superseded   string       `json:"superseded,omitzero"`
	// Mode is the run's mode; Training, in ModeTraining, its training
	// executor and receipts.
	Mode     Mode                `json:"mode"`
	Training *TrainingProvenance `json:"training,omitzero"`
}

// Result is what Improve found. It activates nothing: the candidate is a
// proposal for the production path (package improve) to review.
type Result struct {
	Decision Decision `json:"decision"`
	Reasons  []string `json:"reasons"`
	// Lift is the candidate's mean test score minus the baseline's, and
	// LiftInterval its paired-bootstrap interval.
	Lift         float64  `json:"lift"`
	LiftInterval Interval `json:"liftInterval"`
	// BaselineScore and CandidateScore are the mean test scores.
	BaselineScore  float64 `json:"baselineScore"`
	CandidateScore float64 `json:"candidateScore"`
	// Test are the paired test cases, in scenario order.
	Test []PairedCase `json:"test"`
	// Candidate is the selected candidate.
	Candidate Candidate `json:"candidate"`
	// Population is every unique candidate the search asked about, in
	// first-asked order.
	Population []PopulationEntry `json:"population"`
	Spend      Spend             `json:"spend"`
	Provenance Provenance        `json:"provenance"`

	// cells are the test measurements, baseline then candidate, in Test's
	// order: the evidence Proposal builds run receipts from.
	cells [][2]measurement
	// What the comparison was decided under, and the splits' digests.
	minimumLift         float64
	devSplit, testSplit string
	searchWallMs        float64
	testCases           []Scenario
}
