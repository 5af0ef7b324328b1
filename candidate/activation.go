package candidate

import (
	"slices"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/schema"
)

// Wire kind values of the improvement production path (runtime §3.9:
// propose → review → activate → execute).
const (
	KindImprovementProposalValue         = "agent-improvement-proposal"
	KindImprovementReviewValue           = "agent-improvement-review"
	KindImprovementActivationValue       = "agent-improvement-activation"
	KindImprovementActivationResultValue = "agent-improvement-activation-result"
	KindProfileExecutionRefValue         = "agent-profile-improvement-execution-ref"
)

// improvementSurfaces are the surfaces an improvement may change, in the
// reference's order (AGENT_IMPROVEMENT_SURFACES).
var improvementSurfaces = []string{
	"prompt", "skills", "tools", "mcp", "hooks", "subagents", "agent-profile",
	"memory", "code", "knowledge", "rollout-policy",
}

// ImprovementSurfaces returns the surfaces an improvement may change, in
// the reference's order.
func ImprovementSurfaces() []string { return slices.Clone(improvementSurfaces) }

var (
	surfaceNode   = schema.Enum(improvementSurfaces...)
	isoTimeNode   = schema.String(schema.ISODateTime)
	identity500   = schema.String(schema.MinLen(1), schema.MaxLen(500))
	codeText100   = schema.String(schema.MinLen(1), schema.MaxLen(100))
	messageText2k = schema.String(schema.MinLen(1), schema.MaxLen(2000))

	// ProfileExecutionRefSchema is AgentProfileImprovementExecutionRef:
	// the measured runner of a profile experiment. Its identity is
	// trimmed, as the reference trims it.
	ProfileExecutionRefSchema = schema.Object(
		schema.Req("kind", schema.LiteralString(KindProfileExecutionRefValue)),
		schema.Req("identity", trimThen(identity500)),
		schema.Req("digest", digestNode),
	)

	// ImprovementReviewSchema is AgentImprovementReview: a reviewer's
	// decision on one proposal.
	ImprovementReviewSchema = schema.Object(
		schema.Req("kind", schema.LiteralString(KindImprovementReviewValue)),
		schema.Req("proposalDigest", digestNode),
		schema.Req("decision", schema.Enum("approve", "reject", "request-changes")),
		schema.Req("reviewedBy", nonEmpty),
		schema.Req("reviewedAt", isoTimeNode),
		schema.Req("reason", nonEmpty),
		schema.Opt("feedback", schema.String()),
		schema.Req("digest", digestNode),
	).Refine(checkCanonical("review must contain only RFC 8785 JSON values"))

	activationTargetNode = schema.Object(
		schema.Req("surface", surfaceNode),
		schema.Req("identity", identity500),
		schema.Req("expectedBaseDigest", digestNode),
	)

	// ImprovementActivationSchema is AgentImprovementActivation: the
	// authorization to apply a reviewed proposal to named targets. An
	// agent-profile target needs the measured runner reference and no
	// other target may carry one; targets are unique by surface and
	// identity; the authorization expires after it is given.
	ImprovementActivationSchema = schema.Object(
		schema.Req("kind", schema.LiteralString(KindImprovementActivationValue)),
		schema.Req("proposalDigest", digestNode),
		schema.Req("reviewDigest", digestNode),
		schema.Req("experimentDigest", digestNode),
		schema.Req("candidateDigest", digestNode),
		schema.Opt("executionRef", ProfileExecutionRefSchema),
		schema.Req("intent", schema.Enum("activate-candidate", "restore-baseline")),
		schema.Req("targets", nonEmptyTuple(activationTargetNode)),
		schema.Req("fundingOwner", identity500),
		schema.Req("authorizedBy", identity500),
		schema.Req("authorizedAt", isoTimeNode),
		schema.Req("expiresAt", isoTimeNode),
		schema.Req("digest", digestNode),
	).Refine(checkImprovementActivation).Refine(checkCanonical("activation must contain only RFC 8785 JSON values"))

	transitionTargetNode = schema.Object(
		schema.Req("surface", surfaceNode),
		schema.Req("identity", identity500),
		schema.Req("beforeDigest", digestNode),
		schema.Req("afterDigest", digestNode),
	)
	stateTargetNode = schema.Object(
		schema.Req("surface", surfaceNode),
		schema.Req("identity", identity500),
		schema.Req("currentDigest", digestNode),
	)

	activationOutcomeNode = schema.Discriminated("status", map[string]schema.Node{
		"applied": schema.Object(
			schema.Req("status", schema.LiteralString("applied")),
			schema.Req("transactionId", identity500),
			schema.Req("targets", nonEmptyTuple(transitionTargetNode)),
		),
		"already-applied": stateOutcome("already-applied"),
		"conflict":        stateOutcome("conflict"),
		"expired":         schema.Object(schema.Req("status", schema.LiteralString("expired"))),
		"unsupported":     failureOutcome("unsupported"),
		"failed":          failureOutcome("failed"),
		"indeterminate":   failureOutcome("indeterminate"),
	})

	// ImprovementActivationResultSchema is
	// AgentImprovementActivationResult: the one recorded outcome of an
	// activation attempt, keyed by its idempotency key. Completion never
	// predates the attempt and outcome targets are unique by surface and
	// identity.
	ImprovementActivationResultSchema = schema.Object(
		schema.Req("kind", schema.LiteralString(KindImprovementActivationResultValue)),
		schema.Req("idempotencyKey", digestNode),
		schema.Req("attemptedAt", isoTimeNode),
		schema.Req("completedAt", isoTimeNode),
		schema.Req("outcome", activationOutcomeNode),
		schema.Req("digest", digestNode),
	).Refine(checkActivationResult).Refine(checkCanonical("activation result must contain only RFC 8785 JSON values"))
)

func stateOutcome(status string) schema.Node {
	return schema.Object(
		schema.Req("status", schema.LiteralString(status)),
		schema.Req("targets", nonEmptyTuple(stateTargetNode)),
	)
}

func failureOutcome(status string) schema.Node {
	return schema.Object(
		schema.Req("status", schema.LiteralString(status)),
		schema.Req("code", codeText100),
		schema.Req("message", messageText2k),
	)
}

// targetKeys returns the surface-and-identity key of every target.
func targetKeys(targets canonjson.Value) []string {
	items := targets.Items()
	out := make([]string, len(items))
	for i, t := range items {
		out[i] = member(t, "surface") + "\x00" + member(t, "identity")
	}
	return out
}

func hasDuplicate(values []string) bool {
	seen := make(map[string]bool, len(values))
	for _, s := range values {
		if seen[s] {
			return true
		}
		seen[s] = true
	}
	return false
}

func checkImprovementActivation(c *schema.Context, v canonjson.Value) {
	profileTarget := false
	for _, t := range at(v, "targets").Items() {
		if member(t, "surface") == "agent-profile" {
			profileTarget = true
		}
	}
	switch ref := has(v, "executionRef"); {
	case profileTarget && !ref:
		c.Custom("agent-profile activation requires the measured runner reference", "executionRef")
	case !profileTarget && ref:
		c.Custom("executionRef is valid only for agent-profile activation", "executionRef")
	}
	if hasDuplicate(targetKeys(at(v, "targets"))) {
		c.Custom("activation targets must be unique by surface and identity", "targets")
	}
	authorized, _ := isoMillis(member(v, "authorizedAt"))
	expires, _ := isoMillis(member(v, "expiresAt"))
	if expires <= authorized {
		c.Custom("activation expiry must follow its authorization time", "expiresAt")
	}
}

func checkActivationResult(c *schema.Context, v canonjson.Value) {
	attempted, _ := isoMillis(member(v, "attemptedAt"))
	completed, _ := isoMillis(member(v, "completedAt"))
	if completed < attempted {
		c.Custom("activation completion cannot predate its attempt", "completedAt")
	}
	if hasDuplicate(targetKeys(at(v, "outcome", "targets"))) {
		c.Custom("activation outcome targets must be unique by surface and identity", "outcome", "targets")
	}
}
