package candidate

import (
	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/schema"
)

// Workspace lease phases, in lifecycle order (CAND §18).
const (
	LeaseCopyReady      = "copy-ready"
	LeaseSealed         = "workspace-sealed"
	LeaseExecutionBound = "execution-bound"
	LeaseDestroying     = "destroying"
	LeaseCleanupFailed  = "cleanup-failed"
	LeaseDestroyed      = "destroyed"
)

var (
	timestampNode = schema.Number(schema.Int, schema.NonNegative)

	leaseFields = []schema.Field{
		schema.Req("kind", schema.LiteralString("agent-workspace-lease")),
		schema.Req("schemaVersion", schema.Literal(canonjson.NumberValue(1))),
		schema.Req("phase", schema.Enum(LeaseCopyReady, LeaseSealed, LeaseExecutionBound, LeaseDestroying, LeaseCleanupFailed, LeaseDestroyed)),
		schema.Req("leaseId", contract.PublicWorkspaceIdentifierSchema),
		schema.Req("ownerId", contract.PublicWorkspaceIdentifierSchema),
		schema.Req("workspace", schema.Object(
			schema.Req("provider", contract.PublicWorkspaceIdentifierSchema),
			schema.Req("root", contract.PublicWorkspaceLocatorSchema),
			schema.Req("identityDigest", digestNode),
		)),
		schema.Req("isolation", schema.Enum("per-run", "shared")),
		schema.Req("sourceSnapshotDigest", digestNode),
		schema.Req("sourceSnapshotPolicy", contract.WorkspaceSnapshotPolicySchema),
		schema.Opt("preparedWorkspaceDigest", digestNode),
		schema.Opt("profileActivationDigest", digestNode),
		schema.Opt("executionPreparationDigest", digestNode),
		schema.Req("createdAtMs", timestampNode),
		schema.Req("updatedAtMs", timestampNode),
		schema.Req("expiresAtMs", timestampNode),
		schema.Req("cleanupAttempts", timestampNode),
		schema.Opt("cleanupError", schema.String(schema.MinLen(1), schema.MaxLen(2000), schema.Rule[string]{Code: schema.CodeCustom,
			Message: "workspace cleanup error must be sanitized public text", Test: isPublicText})),
	}

	// LeaseRecordMaterialSchema is AgentWorkspaceLeaseRecordMaterial: a
	// lease record without its digest, phase-consistent.
	LeaseRecordMaterialSchema = schema.Object(leaseFields...).Refine(checkLeaseState).
					Refine(checkCanonical("workspace lease material must contain only RFC 8785 JSON values"))

	// LeaseRecordSchema is AgentWorkspaceLeaseRecord: the self-digested
	// public projection of a workspace lease; the schema verifies the
	// digest.
	LeaseRecordSchema = schema.Object(append(leaseFields, schema.Req("digest", digestNode))...).Refine(checkLeaseState).
				Refine(checkSelfDigest("workspace lease record"))
)

// isPublicText: non-blank, well-formed, no control characters, nothing
// that looks like a credential.
func isPublicText(s string) bool {
	return canonjson.TrimJS(s) != "" && isPublicConfigValue(s)
}

// checkLeaseState holds the lease invariants of CAND §18.
func checkLeaseState(c *schema.Context, v canonjson.Value) {
	created := num(v, "createdAtMs")
	if num(v, "updatedAtMs") < created {
		c.Custom("workspace lease update cannot precede creation", "updatedAtMs")
	}
	if num(v, "expiresAtMs") <= created {
		c.Custom("workspace lease expiry must follow creation", "expiresAtMs")
	}
	prepared, activation, execution := has(v, "preparedWorkspaceDigest"), has(v, "profileActivationDigest"), has(v, "executionPreparationDigest")
	if prepared != activation {
		c.Custom("prepared workspace and profile activation evidence must appear together")
	}
	if execution && (!prepared || !activation) {
		c.Custom("execution binding requires sealed workspace evidence", "executionPreparationDigest")
	}
	phase := member(v, "phase")
	active := phase == LeaseCopyReady || phase == LeaseSealed || phase == LeaseExecutionBound
	attempts := num(v, "cleanupAttempts")
	if active && attempts != 0 {
		c.Custom("active workspace phases cannot have cleanup attempts", "cleanupAttempts")
	}
	if !active && attempts < 1 {
		c.Custom("cleanup workspace phases require at least one cleanup attempt", "cleanupAttempts")
	}
	switch {
	case phase == LeaseCopyReady && (prepared || execution):
		c.Custom("copy-ready workspace cannot carry preparation evidence")
	case phase == LeaseSealed && (!prepared || !activation || execution):
		c.Custom("workspace-sealed phase requires preparation evidence without execution binding")
	case phase == LeaseExecutionBound && (!prepared || !activation || !execution):
		c.Custom("execution-bound phase requires complete preparation evidence")
	}
	if phase == LeaseCleanupFailed {
		if !has(v, "cleanupError") {
			c.Custom("cleanup-failed phase requires a sanitized error", "cleanupError")
		}
	} else if has(v, "cleanupError") {
		c.Custom("cleanup error is valid only in cleanup-failed phase", "cleanupError")
	}
}
