package contract_test

import (
	"testing"

	"github.com/agentrt/agentrt/contract"
)

func FuzzParseWorkspaceOperationLookupRequest(f *testing.F) {
	obsFuzzParse(f, contract.KindWorkspaceOperationLookupRequest, contract.WorkspaceOperationLookupRequestSchema, contract.ParseWorkspaceOperationLookupRequest,
		`{"idempotencyKey":"k","requestDigest":"sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"}`)
}

func FuzzParseWorkspaceCheckpointRef(f *testing.F) {
	obsFuzzParse(f, contract.KindWorkspaceCheckpointRef, contract.WorkspaceCheckpointRefSchema, contract.ParseWorkspaceCheckpointRef)
}

func FuzzParseWorkspaceCheckpointRequest(f *testing.F) {
	obsFuzzParse(f, contract.KindWorkspaceCheckpointRequest, contract.WorkspaceCheckpointRequestSchema, contract.ParseWorkspaceCheckpointRequest)
}

func FuzzParseWorkspaceCheckpointResult(f *testing.F) {
	obsFuzzParse(f, contract.KindWorkspaceCheckpointResult, contract.WorkspaceCheckpointResultSchema, contract.ParseWorkspaceCheckpointResult)
}

func FuzzParseWorkspaceCheckpointLookupResult(f *testing.F) {
	obsFuzzParse(f, contract.KindWorkspaceCheckpointLookupResult, contract.WorkspaceCheckpointLookupResultSchema, contract.ParseWorkspaceCheckpointLookupResult)
}

func FuzzParseWorkspaceForkRequest(f *testing.F) {
	obsFuzzParse(f, contract.KindWorkspaceForkRequest, contract.WorkspaceForkRequestSchema, contract.ParseWorkspaceForkRequest)
}

func FuzzParseForkedEnvironmentRef(f *testing.F) {
	obsFuzzParse(f, contract.KindForkedEnvironmentRef, contract.ForkedEnvironmentRefSchema, contract.ParseForkedEnvironmentRef)
}

func FuzzParseWorkspaceForkResult(f *testing.F) {
	obsFuzzParse(f, contract.KindWorkspaceForkResult, contract.WorkspaceForkResultSchema, contract.ParseWorkspaceForkResult)
}

func FuzzParseWorkspaceForkLookupResult(f *testing.F) {
	obsFuzzParse(f, contract.KindWorkspaceForkLookupResult, contract.WorkspaceForkLookupResultSchema, contract.ParseWorkspaceForkLookupResult)
}

func FuzzParseWorkspaceCleanupRequest(f *testing.F) {
	obsFuzzParse(f, contract.KindWorkspaceCleanupRequest, contract.WorkspaceCleanupRequestSchema, contract.ParseWorkspaceCleanupRequest)
}

func FuzzParseWorkspaceCleanupAcknowledgement(f *testing.F) {
	obsFuzzParse(f, contract.KindWorkspaceCleanupAcknowledgement, contract.WorkspaceCleanupAcknowledgementSchema, contract.ParseWorkspaceCleanupAcknowledgement)
}
