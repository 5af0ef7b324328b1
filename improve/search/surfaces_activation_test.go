package search_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/agentrt/agentrt/candidate"
	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/improve"
	"github.com/agentrt/agentrt/improve/search"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/store/memory"
)

func at(v canonjson.Value, names ...string) canonjson.Value {
	for _, n := range names {
		v, _ = v.Get(n)
	}
	return v
}

// TestSurfaceCandidatesActivate (runtime §3.9 production path, RTP-04,
// RTP-13): a shipping candidate of the skills, hooks and subagents
// surfaces becomes a proposal naming the surface's activation surface,
// and package improve's only write path activates it on a target of that
// surface (improve.Targets). A memory candidate's proposal names
// agent-profile (the reference files resources.instructions there), so its
// activation targets agent-profile; a code candidate is not a profile
// change and is refused as a proposal.
func TestSurfaceCandidatesActivate(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		surface search.Surface
		winner  canonjson.Value
		target  string
	}{
		{search.SurfaceSkills, mustValue(t, []profile.ResourceRef{inlineSkill("style", shout)}), "skills"},
		{search.SurfaceHooks, mustValue(t, map[string][]profile.HookCommand{"Stop": {{Command: "/bin/" + shout}}}), "hooks"},
		{search.SurfaceSubagents, mustValue(t, map[string]profile.Subagent{"s": {Prompt: profile.Ptr(shout)}}), "subagents"},
		{search.SurfaceMemory, canonjson.StringValue(shout), "agent-profile"},
	}
	for _, c := range cases {
		t.Run(string(c.surface), func(t *testing.T) {
			runs := 0
			o, _ := options(t, ptr(0.001))
			o.Surface, o.Method, o.Agent = c.surface, listOptimizer{proposals: []canonjson.Value{c.winner}}, shoutAgent(&runs)
			o.AuthorizeSensitiveCandidate = func(context.Context, search.SensitiveCandidate) error { return nil }
			res, err := search.Improve(ctx, baseProfile(), o)
			if err != nil || res.Decision != search.Ship {
				t.Fatalf("%v %s %v", err, res.Decision, res.Reasons)
			}
			p, err := search.Proposal(res, proposalInputs())
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(p.ChangedSurfaces, []string{c.target}) {
				t.Fatalf("the proposal changes %v, want [%s]", p.ChangedSurfaces, c.target)
			}
			if a, _ := c.surface.ActivationSurface(); a != c.target {
				t.Errorf("ActivationSurface %s, proposal %s", a, c.target)
			}
			targets := improve.NewMemoryTargets()
			svc := &improve.Service{Store: memory.New(nil), Targets: targets, Now: func() time.Time { return time.Date(2026, 12, 1, 13, 0, 0, 0, time.UTC) }}
			pv, err := canonjson.ToValue(p)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := svc.ProposeImprovement(ctx, canonjson.Marshal(pv)); err != nil {
				t.Fatal(err)
			}
			rv := selfDigested(t, &candidate.ImprovementReview{Kind: candidate.KindImprovementReviewValue, ProposalDigest: p.Digest, Decision: "approve",
				ReviewedBy: "operator@example.com", ReviewedAt: "2026-12-01T12:30:00.000Z", Reason: "measured"})
			if _, err := svc.ReviewProposal(ctx, canonjson.Marshal(rv)); err != nil {
				t.Fatal(err)
			}
			exp := at(pv, "evaluation", "experiment")
			baseState := at(exp, "baseline", "stateDigest").Str()
			candState := at(exp, "candidate", "stateDigest").Str()
			const identity = "agent-profile:echo"
			targets.Set(c.target, identity, baseState)
			var ref candidate.ProfileExecutionRef
			if err := canonjson.FromValue(at(exp, "executionRef"), &ref); err != nil {
				t.Fatal(err)
			}
			a := &candidate.ImprovementActivation{Kind: candidate.KindImprovementActivationValue, ProposalDigest: p.Digest,
				ReviewDigest: at(rv, "digest").Str(), ExperimentDigest: at(exp, "digest").Str(), CandidateDigest: candState,
				Intent:       "activate-candidate",
				Targets:      []candidate.ActivationTarget{{Surface: c.target, Identity: identity, ExpectedBaseDigest: baseState}},
				FundingOwner: "tenant:test", AuthorizedBy: "policy:admin", AuthorizedAt: "2026-12-01T12:45:00.000Z", ExpiresAt: "2026-12-01T14:00:00.000Z"}
			if c.target == "agent-profile" {
				a.ExecutionRef = &ref // required exactly for an agent-profile target
			}
			av := selfDigested(t, a)
			act, err := svc.CreateActivation(ctx, canonjson.Marshal(av))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := svc.ExecuteActivation(ctx, act.Digest); err != nil {
				t.Fatal(err)
			}
			if got, _ := targets.Base(ctx, c.target, identity); got != candState || targets.Applied() != 1 {
				t.Errorf("the %s target holds %s after %d applies, want the candidate %s", c.target, got, targets.Applied(), candState)
			}
		})
	}

	// A code candidate changes the repository only: not a profile proposal.
	res := shippingCodeResult(t)
	if _, err := search.Proposal(res, proposalInputs()); !errors.Is(err, search.ErrNotProposable) {
		t.Errorf("a code candidate's proposal: %v, want ErrNotProposable", err)
	}
}

// selfDigested returns x as a value with its self-digest set.
func selfDigested(t *testing.T, x any) canonjson.Value {
	t.Helper()
	v, err := canonjson.ToValue(x)
	if err != nil {
		t.Fatal(err)
	}
	d, err := candidate.SelfDigestValue(v)
	if err != nil {
		t.Fatal(err)
	}
	return v.With("digest", canonjson.StringValue(d))
}
