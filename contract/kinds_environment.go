package contract

import "github.com/agentrt/agentrt/schema"

// environmentKinds lists the environment group's wire kinds: the
// capability document, create input and verdict, workspace and resource
// requests, the auxiliary environment shapes, execution failure receipts
// and the exact-process shapes.
func environmentKinds() []schema.Kind {
	return []schema.Kind{
		{Name: KindEnvironmentCapabilities, Node: CapabilitiesSchema},
		{Name: KindProfileCapabilities, Node: ProfileCapabilitiesSchema},
		{Name: KindEnvironmentCreation, Node: CreationSchema},
		{Name: KindCreateInput, Node: CreateInputSchema},
		{Name: KindEgressPolicy, Node: EgressPolicySchema},
		{Name: KindRuntimeAttachments, Node: RuntimeAttachmentsSchema},
		{Name: KindWorkspaceRequest, Node: WorkspaceRequestSchema},
		{Name: KindWorkspaceSnapshotRef, Node: WorkspaceSnapshotRefSchema},
		{Name: KindResourceRequest, Node: ResourceRequestSchema},
		{Name: KindEnvironmentStatus, Node: EnvironmentStatusSchema},
		{Name: KindSessionStatus, Node: SessionStatusSchema},
		{Name: KindEnvironmentSummary, Node: EnvironmentSummarySchema},
		{Name: KindEnvironmentQuery, Node: EnvironmentQuerySchema},
		{Name: KindExecRequest, Node: ExecRequestSchema},
		{Name: KindExecResult, Node: ExecResultSchema},
		{Name: KindCheckpointRequest, Node: CheckpointRequestSchema},
		{Name: KindCheckpointRef, Node: CheckpointRefSchema},
		{Name: KindForkRequest, Node: ForkRequestSchema},
		{Name: KindSessionRef, Node: SessionRefSchema},
		{Name: KindProfileValidation, Node: ProfileValidationSchema},
		{Name: KindExecutionFailureReceipt, Node: ExecutionFailureReceiptSchema},
		{Name: KindCreateExactProcessInput, Node: CreateExactProcessInputSchema},
		{Name: KindExactProcessEnvironmentQuery, Node: ExactProcessEnvironmentQuerySchema},
		{Name: KindExactProcessLaunch, Node: ExactProcessLaunchSchema},
		{Name: KindExactProcessStatus, Node: ExactProcessStatusSchema},
	}
}
