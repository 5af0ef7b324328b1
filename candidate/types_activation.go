package candidate

import "github.com/agentrt/agentrt/profile"

// ProfileChange is AgentProfileImprovementChange: ordered profile diffs
// (each an AgentProfileImprovementChangeStep).
type ProfileChange []profile.Diff

// ProfileExecutionRef is AgentProfileImprovementExecutionRef, the
// measured runner of a profile experiment.
type ProfileExecutionRef struct {
	Kind     string `json:"kind"`
	Identity string `json:"identity"`
	Digest   string `json:"digest"`
}

// ImprovementReview is AgentImprovementReview.
type ImprovementReview struct {
	Kind           string  `json:"kind"`
	ProposalDigest string  `json:"proposalDigest"`
	Decision       string  `json:"decision"`
	ReviewedBy     string  `json:"reviewedBy"`
	ReviewedAt     string  `json:"reviewedAt"`
	Reason         string  `json:"reason"`
	Feedback       *string `json:"feedback,omitzero"`
	Digest         string  `json:"digest"`
}

// ImprovementActivation is AgentImprovementActivation. ExecutionRef is
// set exactly when a target is the agent-profile surface.
type ImprovementActivation struct {
	Kind             string               `json:"kind"`
	ProposalDigest   string               `json:"proposalDigest"`
	ReviewDigest     string               `json:"reviewDigest"`
	ExperimentDigest string               `json:"experimentDigest"`
	CandidateDigest  string               `json:"candidateDigest"`
	ExecutionRef     *ProfileExecutionRef `json:"executionRef,omitzero"`
	Intent           string               `json:"intent"`
	Targets          []ActivationTarget   `json:"targets"`
	FundingOwner     string               `json:"fundingOwner"`
	AuthorizedBy     string               `json:"authorizedBy"`
	AuthorizedAt     string               `json:"authorizedAt"`
	ExpiresAt        string               `json:"expiresAt"`
	Digest           string               `json:"digest"`
}

// ActivationTarget is one surface an activation writes, with the state it
// expects to replace.
type ActivationTarget struct {
	Surface            string `json:"surface"`
	Identity           string `json:"identity"`
	ExpectedBaseDigest string `json:"expectedBaseDigest"`
}

// ImprovementActivationResult is AgentImprovementActivationResult.
type ImprovementActivationResult struct {
	Kind           string            `json:"kind"`
	IdempotencyKey string            `json:"idempotencyKey"`
	AttemptedAt    string            `json:"attemptedAt"`
	CompletedAt    string            `json:"completedAt"`
	Outcome        ActivationOutcome `json:"outcome"`
	Digest         string            `json:"digest"`
}

// ActivationOutcome is an activation's outcome by Status: "applied"
// (TransactionID, Targets with before and after digests),
// "already-applied" and "conflict" (Targets with current digests),
// "expired", or "unsupported", "failed" and "indeterminate" (Code,
// Message).
type ActivationOutcome struct {
	Status        string                    `json:"status"`
	TransactionID *string                   `json:"transactionId,omitzero"`
	Targets       []ActivationOutcomeTarget `json:"targets,omitzero"`
	Code          *string                   `json:"code,omitzero"`
	Message       *string                   `json:"message,omitzero"`
}

// ActivationOutcomeTarget is a target's transition (BeforeDigest,
// AfterDigest) or its current state (CurrentDigest).
type ActivationOutcomeTarget struct {
	Surface       string  `json:"surface"`
	Identity      string  `json:"identity"`
	BeforeDigest  *string `json:"beforeDigest,omitzero"`
	AfterDigest   *string `json:"afterDigest,omitzero"`
	CurrentDigest *string `json:"currentDigest,omitzero"`
}
