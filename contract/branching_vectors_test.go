package contract_test

import (
	"testing"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/internal/vectors"
)

func TestBranchingVectors(t *testing.T) {
	// BRN-03, BRN-04, BRN-07: digests recomputed, identities repeated,
	// cleanup bound to its target; reference verdicts and canonical forms.
	vectors.CheckKind(t, contract.KindWorkspaceCheckpointRef, acceptVia[contract.WorkspaceCheckpointRef](contract.KindWorkspaceCheckpointRef, contract.WorkspaceCheckpointRefSchema))
	vectors.CheckKind(t, contract.KindWorkspaceCheckpointRequest, acceptVia[contract.WorkspaceCheckpointRequest](contract.KindWorkspaceCheckpointRequest, contract.WorkspaceCheckpointRequestSchema))
	vectors.CheckKind(t, contract.KindWorkspaceCheckpointResult, acceptVia[contract.WorkspaceCheckpointResult](contract.KindWorkspaceCheckpointResult, contract.WorkspaceCheckpointResultSchema))
	vectors.CheckKind(t, contract.KindWorkspaceCheckpointLookupResult, acceptVia[contract.WorkspaceCheckpointLookupResult](contract.KindWorkspaceCheckpointLookupResult, contract.WorkspaceCheckpointLookupResultSchema))
	vectors.CheckKind(t, contract.KindWorkspaceForkRequest, acceptVia[contract.WorkspaceForkRequest](contract.KindWorkspaceForkRequest, contract.WorkspaceForkRequestSchema))
	vectors.CheckKind(t, contract.KindWorkspaceForkResult, acceptVia[contract.WorkspaceForkResult](contract.KindWorkspaceForkResult, contract.WorkspaceForkResultSchema))
	vectors.CheckKind(t, contract.KindWorkspaceForkLookupResult, acceptVia[contract.WorkspaceForkLookupResult](contract.KindWorkspaceForkLookupResult, contract.WorkspaceForkLookupResultSchema))
	vectors.CheckKind(t, contract.KindForkedEnvironmentRef, acceptVia[contract.ForkedEnvironmentRef](contract.KindForkedEnvironmentRef, contract.ForkedEnvironmentRefSchema))
	vectors.CheckKind(t, contract.KindWorkspaceCleanupRequest, acceptVia[contract.WorkspaceCleanupRequest](contract.KindWorkspaceCleanupRequest, contract.WorkspaceCleanupRequestSchema))
	vectors.CheckKind(t, contract.KindWorkspaceCleanupAcknowledgement, acceptVia[contract.WorkspaceCleanupAcknowledgement](contract.KindWorkspaceCleanupAcknowledgement, contract.WorkspaceCleanupAcknowledgementSchema))
}
