package candidate

import (
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/harness"
)

// PreparationReceipt is AgentExecutionPreparationReceipt
// (self-digested).
type PreparationReceipt struct {
	Kind                   string                  `json:"kind"`
	SchemaVersion          int64                   `json:"schemaVersion"`
	PreparationID          string                  `json:"preparationId"`
	RequestDigest          string                  `json:"requestDigest"`
	AuthoredProfileDigest  string                  `json:"authoredProfileDigest"`
	EffectiveProfileDigest string                  `json:"effectiveProfileDigest"`
	Backend                string                  `json:"backend"`
	Harness                harness.Type            `json:"harness"`
	HarnessVersion         string                  `json:"harnessVersion"`
	ResolvedModel          PreparationModel        `json:"resolvedModel"`
	Workspace              PreparationWorkspace    `json:"workspace"`
	AxisResults            []PreparationAxisResult `json:"axisResults"`
	ExecutionPlanDigest    string                  `json:"executionPlanDigest"`
	Materializer           Materializer            `json:"materializer"`
	ExpiresAtMs            int64                   `json:"expiresAtMs"`
	Digest                 string                  `json:"digest"`
}

// PreparationModel is the model a preparation resolved.
type PreparationModel struct {
	Requested       string                      `json:"requested"`
	Resolved        string                      `json:"resolved"`
	Provider        *string                     `json:"provider,omitzero"`
	ReasoningEffort *PreparationReasoningEffort `json:"reasoningEffort,omitzero"`
}

// PreparationReasoningEffort is AgentExecutionPreparationReasoningEffort.
type PreparationReasoningEffort struct {
	Requested harness.ReasoningEffort `json:"requested"`
	Resolved  harness.ReasoningEffort `json:"resolved,omitzero"`
	Fidelity  string                  `json:"fidelity"`
}

// PreparationWorkspace binds the lease and prepared workspace.
type PreparationWorkspace struct {
	LeaseID                 string                           `json:"leaseId"`
	Provider                string                           `json:"provider"`
	IdentityDigest          string                           `json:"identityDigest"`
	Isolation               string                           `json:"isolation"`
	SourceSnapshotDigest    string                           `json:"sourceSnapshotDigest"`
	SourceSnapshotPolicy    contract.WorkspaceSnapshotPolicy `json:"sourceSnapshotPolicy"`
	PreparedWorkspaceDigest string                           `json:"preparedWorkspaceDigest"`
	ProfileActivationDigest string                           `json:"profileActivationDigest"`
}

// PreparationAxisResult is AgentExecutionPreparationAxisResult.
type PreparationAxisResult struct {
	Axis           string  `json:"axis"`
	Disposition    string  `json:"disposition"`
	Owner          string  `json:"owner"`
	Mechanism      string  `json:"mechanism"`
	EvidenceDigest *string `json:"evidenceDigest,omitzero"`
	Path           *string `json:"path,omitzero"`
	Reason         *string `json:"reason,omitzero"`
}

// Materializer names the profile materializer.
type Materializer struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// LeaseRecord is AgentWorkspaceLeaseRecord; without Digest (empty) it
// is the material.
type LeaseRecord struct {
	Kind                       string                               `json:"kind"`
	SchemaVersion              int64                                `json:"schemaVersion"`
	Phase                      string                               `json:"phase"`
	LeaseID                    string                               `json:"leaseId"`
	OwnerID                    string                               `json:"ownerId"`
	Workspace                  contract.WorkspaceSnapshotAllocation `json:"workspace"`
	Isolation                  string                               `json:"isolation"`
	SourceSnapshotDigest       string                               `json:"sourceSnapshotDigest"`
	SourceSnapshotPolicy       contract.WorkspaceSnapshotPolicy     `json:"sourceSnapshotPolicy"`
	PreparedWorkspaceDigest    *string                              `json:"preparedWorkspaceDigest,omitzero"`
	ProfileActivationDigest    *string                              `json:"profileActivationDigest,omitzero"`
	ExecutionPreparationDigest *string                              `json:"executionPreparationDigest,omitzero"`
	CreatedAtMs                int64                                `json:"createdAtMs"`
	UpdatedAtMs                int64                                `json:"updatedAtMs"`
	ExpiresAtMs                int64                                `json:"expiresAtMs"`
	CleanupAttempts            int64                                `json:"cleanupAttempts"`
	CleanupError               *string                              `json:"cleanupError,omitzero"`
	Digest                     string                               `json:"digest,omitzero"`
}

// CertifiedContext is tenant-bound context delivered for one target.
type CertifiedContext struct {
	TenantID    string                  `json:"tenantId"`
	Target      string                  `json:"target"`
	State       string                  `json:"state"`
	Revision    string                  `json:"revision"`
	GeneratedAt string                  `json:"generatedAt"`
	ExpiresAt   string                  `json:"expiresAt"`
	Entries     []CertifiedContextEntry `json:"entries"`
	ContentHash string                  `json:"contentHash"`
}

// CertifiedContextEntry is one certified prompt, skill or instructions
// entry.
type CertifiedContextEntry struct {
	ID         string            `json:"id"`
	Kind       string            `json:"kind"`
	Name       string            `json:"name"`
	Delivery   ContextDelivery   `json:"delivery"`
	Provenance ContextProvenance `json:"provenance"`
}

// ContextDelivery is inline (Content) or file (Path, Content).
type ContextDelivery struct {
	Kind    string  `json:"kind"`
	Path    *string `json:"path,omitzero"`
	Content string  `json:"content"`
}

// ContextProvenance is an entry's hash, release version (nil is JSON
// null: no released version) and promotion time.
type ContextProvenance struct {
	ContentHash string `json:"contentHash"`
	Version     *int64 `json:"version"`
	PromotedAt  string `json:"promotedAt"`
}
