package search_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/agentrt/agentrt/candidate"
	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/improve"
	"github.com/agentrt/agentrt/improve/search"
	"github.com/agentrt/agentrt/store/memory"
)

func proposalInputs() search.ProposalInputs {
	return search.ProposalInputs{
		RunID:      "improve-run-1",
		ProposedAt: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC),
		Source: candidate.Source{Kind: "agent-profile-file", SourceIdentity: "profiles/echo.json",
			SourceRevision: candidate.Revision{Number: ptr(int64(1))}},
		ExecutionRef: candidate.ProfileExecutionRef{Identity: "agentrt-kernel-tool-loop:scripted",
			Digest: canonjson.DigestBytes([]byte("scripted:echo"))},
		Grader: candidate.Grader{Name: "exact", Version: "1", Format: "tangle-grader", Artifact: candidate.ArtifactRef{
			Locator: candidate.Locator{Kind: contract.LocatorS3, Bucket: ptr("graders"), Key: ptr("exact.json"), Region: ptr("us-east-1")},
			SHA256:  canonjson.DigestBytes([]byte("exact judge")), ByteLength: 11}},
		Model:  candidate.ResolvedModel{Requested: "scripted/echo", Provider: "scripted", Model: "echo", Snapshot: "fixture", ReasoningEffort: "medium"},
		Limits: contract.ExecutionLimits{TimeoutMs: 120000, MaxSteps: 10, MaxModelCalls: 10, MaxInputTokens: 100000, MaxOutputTokens: 100000, MaxCostUSD: 1},
	}
}

// TestProposalFeedsProductionPath (RTP-04, RTP-13): a shipping result
// becomes an AgentImprovementProposal whose measured comparison is built
// from Improve's own test receipts, and package improve's production
// path records it as it is. Improve itself activated nothing: the path's
// store held nothing before the proposal was handed over.
func TestProposalFeedsProductionPath(t *testing.T) {
	ctx := context.Background()
	o, _ := options(t, ptr(0.001))
	res, err := search.Improve(ctx, baseProfile(), o)
	if err != nil || res.Decision != search.Ship {
		t.Fatalf("%v %s", err, res.Decision)
	}
	p, err := search.Proposal(res, proposalInputs())
	if err != nil {
		t.Fatal(err)
	}
	if p.Evaluation.Profile == nil || len(p.Evaluation.Profile.Measurements) != 6 || p.ChangedSurfaces[0] != "prompt" {
		t.Fatalf("proposal %+v", p)
	}
	st := memory.New(nil)
	svc := &improve.Service{Store: st}
	v, err := canonjson.ToValue(p)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := svc.ProposeImprovement(ctx, canonjson.Marshal(v))
	if err != nil {
		t.Fatalf("the production path refused the proposal: %v", err)
	}
	if rec.Digest != p.Digest || rec.Replayed {
		t.Errorf("recorded %+v, proposal digest %s", rec, p.Digest)
	}

	o, _ = options(t, nil)
	held, err := search.Improve(ctx, baseProfile(), o)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := search.Proposal(held, proposalInputs()); !errors.Is(err, search.ErrNotProposable) {
		t.Errorf("a held result: %v, want ErrNotProposable", err)
	}
}
