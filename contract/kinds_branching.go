package contract

import "github.com/agentrt/agentrt/schema"

// branchingKinds lists the branching group's wire kinds: durable workspace
// checkpoints, forks, lookups and cleanup.
func branchingKinds() []schema.Kind {
	return []schema.Kind{
		{Name: KindWorkspaceCheckpointRef, Node: WorkspaceCheckpointRefSchema},
		{Name: KindWorkspaceCheckpointRequest, Node: WorkspaceCheckpointRequestSchema},
		{Name: KindWorkspaceCheckpointResult, Node: WorkspaceCheckpointResultSchema},
		{Name: KindWorkspaceCheckpointLookupResult, Node: WorkspaceCheckpointLookupResultSchema},
		{Name: KindWorkspaceForkRequest, Node: WorkspaceForkRequestSchema},
		{Name: KindWorkspaceForkResult, Node: WorkspaceForkResultSchema},
		{Name: KindWorkspaceForkLookupResult, Node: WorkspaceForkLookupResultSchema},
		{Name: KindForkedEnvironmentRef, Node: ForkedEnvironmentRefSchema},
		{Name: KindWorkspaceOperationLookupRequest, Node: WorkspaceOperationLookupRequestSchema},
		{Name: KindWorkspaceCleanupRequest, Node: WorkspaceCleanupRequestSchema},
		{Name: KindWorkspaceCleanupAcknowledgement, Node: WorkspaceCleanupAcknowledgementSchema},
	}
}
