package search

import (
	"time"

	"github.com/agentrt/agentrt/candidate"
	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/schema"
)

// ProposalInputsKind names the proposal inputs file in errors.
const ProposalInputsKind = "ImproveProposalInputs"

// MaxProposalInputsBytes bounds a proposal inputs file.
const MaxProposalInputsBytes = 1 << 20

// proposalInputsSchema is the proposal inputs file:
//
//	{"runId": "…",
//	 "source": {"kind": "…", "sourceIdentity": "…", "sourceRevision": 7},
//	 "executionRef": {"identity": "…", "digest": "sha256:…"},
//	 "grader": AgentCandidate grader, "model": resolved model,
//	 "limits": execution limits}
var proposalInputsSchema = schema.Object(
	schema.Req("runId", schema.String(schema.MinLen(1), schema.MaxLen(200))),
	schema.Req("source", schema.Object(
		schema.Req("kind", schema.String(schema.MinLen(1), schema.MaxLen(100))),
		schema.Req("sourceIdentity", schema.String(schema.MinLen(1), schema.MaxLen(500))),
		schema.Req("sourceRevision", schema.Number(schema.Int, schema.NonNegative)),
	)),
	schema.Req("executionRef", schema.Object(
		schema.Req("identity", schema.String(schema.MinLen(1), schema.MaxLen(500))),
		schema.Req("digest", schema.String(schema.Matches("must be sha256:<64 lowercase hex>", canonjson.IsDigest))),
	)),
	schema.Req("grader", candidate.GraderSchema),
	schema.Req("model", candidate.ResolvedModelSchema),
	schema.Req("limits", contract.ExecutionLimitsSchema),
)

// ParseProposalInputs decodes a proposal inputs file strictly; a refusal
// is a *schema.Error with JSON-pointer issues. ProposedAt is now.
func ParseProposalInputs(data []byte) (ProposalInputs, error) {
	if len(data) > MaxProposalInputsBytes {
		return ProposalInputs{}, &schema.Error{Kind: ProposalInputsKind, Issues: []schema.Issue{{Code: schema.CodeTooBig, Message: "the file is over 1 MiB"}}}
	}
	f, err := contract.Parse[struct {
		RunID  string `json:"runId"`
		Source struct {
			Kind           string `json:"kind"`
			SourceIdentity string `json:"sourceIdentity"`
			SourceRevision int64  `json:"sourceRevision"`
		} `json:"source"`
		ExecutionRef struct {
			Identity string `json:"identity"`
			Digest   string `json:"digest"`
		} `json:"executionRef"`
		Grader candidate.Grader         `json:"grader"`
		Model  candidate.ResolvedModel  `json:"model"`
		Limits contract.ExecutionLimits `json:"limits"`
	}](ProposalInputsKind, proposalInputsSchema, data)
	if err != nil {
		return ProposalInputs{}, err
	}
	rev := f.Source.SourceRevision
	return ProposalInputs{RunID: f.RunID, ProposedAt: time.Now(),
		Source:       candidate.Source{Kind: f.Source.Kind, SourceIdentity: f.Source.SourceIdentity, SourceRevision: candidate.Revision{Number: &rev}},
		ExecutionRef: candidate.ProfileExecutionRef{Kind: candidate.KindProfileExecutionRefValue, Identity: f.ExecutionRef.Identity, Digest: f.ExecutionRef.Digest},
		Grader:       f.Grader, Model: f.Model, Limits: f.Limits}, nil
}
