package search_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt/candidate"
	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/improve"
	"github.com/agentrt/agentrt/improve/search"
	"github.com/agentrt/agentrt/schema"
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

const inputsDoc = `{"runId": "r1",
 "source": {"kind": "agent-profile-file", "sourceIdentity": "p.json", "sourceRevision": 2},
 "executionRef": {"identity": "runner", "digest": "sha256:4444444444444444444444444444444444444444444444444444444444444444"},
 "grader": {"name": "exact", "version": "1", "format": "tangle-grader", "artifact": {
   "locator": {"kind": "s3", "bucket": "graders", "key": "exact.json", "region": "us-east-1"},
   "sha256": "sha256:ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff", "byteLength": 1}},
 "model": {"requested": "a/b", "provider": "a", "model": "b", "snapshot": "s", "reasoningEffort": "medium"},
 "limits": {"timeoutMs": 1000, "maxSteps": 1, "maxModelCalls": 1, "maxInputTokens": 1, "maxOutputTokens": 1, "maxCostUsd": 1}}`

// TestParseProposalInputs: the inputs file decodes strictly; a refusal
// names its JSON pointer; and the inputs it gives make a proposal.
func TestParseProposalInputs(t *testing.T) {
	in, err := search.ParseProposalInputs([]byte(inputsDoc))
	if err != nil {
		t.Fatal(err)
	}
	if in.RunID != "r1" || *in.Source.SourceRevision.Number != 2 || in.ExecutionRef.Kind != candidate.KindProfileExecutionRefValue || in.Grader.Artifact.ByteLength != 1 {
		t.Errorf("inputs %+v", in)
	}
	for doc, path := range map[string]string{
		`{"runId": "r1"}`: "/source",
		strings.Replace(inputsDoc, `"sourceRevision": 2`, `"sourceRevision": -2`, 1):      "/source/sourceRevision",
		strings.Replace(inputsDoc, `"digest": "sha256:4444`, `"digest": "sha256:XX44`, 1): "/executionRef/digest",
		strings.Replace(inputsDoc, `"runId": "r1",`, `"runId": "r1", "extra": 1,`, 1):     "",
		strings.Replace(inputsDoc, `"format": "tangle-grader"`, `"format": "other"`, 1):   "/grader/format",
	} {
		_, err := search.ParseProposalInputs([]byte(doc))
		var se *schema.Error
		if !errors.As(err, &se) || se.Issues[0].Path != path {
			t.Errorf("%.60s…: %v, want an issue at %q", doc, err, path)
		}
	}
}

// FuzzParseProposalInputs: any bytes give inputs or a *schema.Error.
func FuzzParseProposalInputs(f *testing.F) {
	for _, s := range []string{inputsDoc, `{}`, `{"runId":1}`, `null`, "\x00"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		in, err := search.ParseProposalInputs(data)
		if err != nil {
			var se *schema.Error
			if !errors.As(err, &se) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		if in.RunID == "" || in.ExecutionRef.Kind == "" {
			t.Fatalf("accepted %+v", in)
		}
	})
}
