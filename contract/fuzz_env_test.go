package contract_test

import (
	"testing"

	"github.com/agentrt/agentrt/contract"
)

// Fuzz targets for the environment group's Parse functions. Each is
// seeded with the kind's reference vectors (when it has any) and the
// documents of the table tests; obsFuzzParse checks that refusals are
// *schema.Error and accepted values re-validate to the same digest.

func FuzzParseCapabilities(f *testing.F) {
	obsFuzzParse(f, contract.KindEnvironmentCapabilities, contract.CapabilitiesSchema, contract.ParseCapabilities,
		envReadmeCapabilities, envFullCapabilities)
}

func FuzzParseCreation(f *testing.F) {
	obsFuzzParse(f, contract.KindEnvironmentCreation, contract.CreationSchema, func(b []byte) (*contract.Creation, error) {
		c, err := contract.ParseCreation(b)
		if err != nil {
			return nil, err
		}
		return &c, nil
	}, `"created"`, `"replayed"`)
}

func FuzzParseCreateInput(f *testing.F) {
	obsFuzzParse(f, contract.KindCreateInput, contract.CreateInputSchema, contract.ParseCreateInput,
		`{"profile":"p"}`,
		`{"profile":{"name":"p","harness":"codex"},"requestedId":"env-fixed","backend":"codex","workspace":{"snapshot":`+envSnapshotJSON+
			`,"cwd":{"base":"repository","path":"./src//a"}},"resources":{"cpu":2,"memoryMb":4096},"env":{"A":"1"},"secrets":["T"],`+
			`"egress":{"mode":"strict","allowDomains":["a.example.com"]},"billingOwner":"acct","metadata":{"o":1},"name":"n",`+
			`"runtimeAttachments":{"mcp":{"t":{"command":"mcp-tools"}}},"providerOptions":{},"idempotencyKey":"k"}`,
		`{"profile":"p","secrets":{"A":"b"},"egress":{"mode":"open"}}`)
}

func FuzzParseEgressPolicy(f *testing.F) {
	obsFuzzParse(f, contract.KindEgressPolicy, contract.EgressPolicySchema, contract.ParseEgressPolicy,
		`{"mode":"open"}`, `{"mode":"blocked"}`, `{"mode":"strict","allowDomains":["a.example.com"]}`, `{"mode":"strict"}`)
}

func FuzzParseRuntimeAttachments(f *testing.F) {
	obsFuzzParse(f, contract.KindRuntimeAttachments, contract.RuntimeAttachmentsSchema, contract.ParseRuntimeAttachments,
		`{"mcp":{}}`, `{"mcp":{"docs":{"url":"https://mcp.example.com/sse","transport":"sse"},"local":{"command":"mcp-tools","enabled":true}}}`,
		`{"mcp":{"off":{"enabled":false}}}`)
}

func FuzzParseWorkspaceRequest(f *testing.F) {
	obsFuzzParse(f, contract.KindWorkspaceRequest, contract.WorkspaceRequestSchema, contract.ParseWorkspaceRequest,
		`{}`, `{"snapshot":`+envSnapshotJSON+`,"cwd":{"base":"repository","path":"./a//b"}}`,
		`{"checkpoint":`+envCheckpointJSON+`,"cwd":{"base":"host","path":"C:\\w"}}`,
		`{"environment":"universal","repoUrl":"https://example.com/r.git","gitRef":"main","providerOptions":{"depth":1}}`)
}

func FuzzParseWorkspaceSnapshotRef(f *testing.F) {
	obsFuzzParse(f, contract.KindWorkspaceSnapshotRef, contract.WorkspaceSnapshotRefSchema, contract.ParseWorkspaceSnapshotRef, envSnapshotJSON)
}

func FuzzParseResourceRequest(f *testing.F) {
	obsFuzzParse(f, contract.KindResourceRequest, contract.ResourceRequestSchema, contract.ParseResourceRequest,
		`{}`, `{"cpu":0.5,"memoryMb":2048,"diskMb":10240,"gpu":"a100","providerOptions":{"tier":"spot"}}`)
}

func FuzzParseEnvironmentSummary(f *testing.F) {
	obsFuzzParse(f, contract.KindEnvironmentSummary, contract.EnvironmentSummarySchema, contract.ParseEnvironmentSummary,
		`{"id":"e","provider":"p","name":"n","status":"running","metadata":{"owner":"x"}}`)
}

func FuzzParseEnvironmentQuery(f *testing.F) {
	obsFuzzParse(f, contract.KindEnvironmentQuery, contract.EnvironmentQuerySchema, contract.ParseEnvironmentQuery,
		`{}`, `{"name":"n","metadata":{"a":1},"providerOptions":{}}`)
}

func FuzzParseExecRequest(f *testing.F) {
	obsFuzzParse(f, contract.KindExecRequest, contract.ExecRequestSchema, contract.ParseExecRequest,
		`{}`, `{"cwd":"/work","env":{"A":"1"},"timeoutMs":1000}`)
}

func FuzzParseExecResult(f *testing.F) {
	obsFuzzParse(f, contract.KindExecResult, contract.ExecResultSchema, contract.ParseExecResult,
		`{"exitCode":0,"stdout":"ok\n","stderr":""}`, `{"exitCode":-1,"stdout":"","stderr":"killed"}`)
}

func FuzzParseCheckpointRequest(f *testing.F) {
	obsFuzzParse(f, contract.KindCheckpointRequest, contract.CheckpointRequestSchema, contract.ParseCheckpointRequest,
		`{}`, `{"name":"n","metadata":{"a":[1]}}`)
}

func FuzzParseCheckpointRef(f *testing.F) {
	obsFuzzParse(f, contract.KindCheckpointRef, contract.CheckpointRefSchema, contract.ParseCheckpointRef,
		`{"id":"c"}`, `{"id":"c","provider":"p","metadata":{"a":1}}`)
}

func FuzzParseForkRequest(f *testing.F) {
	obsFuzzParse(f, contract.KindForkRequest, contract.ForkRequestSchema, contract.ParseForkRequest,
		`{}`, `{"name":"n","metadata":{}}`)
}

func FuzzParseSessionRef(f *testing.F) {
	obsFuzzParse(f, contract.KindSessionRef, contract.SessionRefSchema, contract.ParseSessionRef,
		`{"id":"s"}`, `{"id":"s","provider":"p","controlRef":{"runId":"r","provider":"p","environmentId":"e","sessionId":"s"},"metadata":{}}`)
}

func FuzzParseProfileValidation(f *testing.F) {
	obsFuzzParse(f, contract.KindProfileValidation, contract.ProfileValidationSchema, contract.ParseProfileValidation,
		`{"ok":true,"issues":[]}`,
		`{"ok":false,"issues":[{"level":"error","code":"unsupported","message":"no hooks","path":"/hooks"}],"normalizedProfile":{"name":"p"}}`)
}

func FuzzParseExecutionFailureReceipt(f *testing.F) {
	obsFuzzParse(f, contract.KindExecutionFailureReceipt, contract.ExecutionFailureReceiptSchema, contract.ParseExecutionFailureReceipt,
		`{}`, `{"tokenUsage":{"inputTokens":120,"outputTokens":7,"cost":0.01},"timing":{"startedAt":1000,"completedAt":1500.5,"durationMs":500.5}}`)
}

func FuzzParseCreateExactProcessInput(f *testing.F) {
	obsFuzzParse(f, contract.KindCreateExactProcessInput, contract.CreateExactProcessInputSchema, contract.ParseCreateExactProcessInput,
		`{"image":"img@sha256:aa","egress":{"mode":"blocked"},"maxLifetimeMs":1000,"resources":{"cpu":1,"memoryMb":512,"diskMb":1024},"metadata":{},"idempotencyKey":"k"}`,
		`{"image":"img","egress":{"mode":"strict","allowDomains":["pypi.org"]},"maxLifetimeMs":600000,"provisionTimeoutMs":5000,`+
			`"resources":{"cpu":0.5,"memoryMb":1024,"diskMb":2048},"metadata":{"c":"1"},"idempotencyKey":"k","providerOptions":{"x":1}}`)
}

func FuzzParseExactProcessEnvironmentQuery(f *testing.F) {
	obsFuzzParse(f, contract.KindExactProcessEnvironmentQuery, contract.ExactProcessEnvironmentQuerySchema, contract.ParseExactProcessEnvironmentQuery,
		`{}`, `{"metadata":{"candidate":"c-1"},"providerOptions":{}}`)
}

func FuzzParseExactProcessLaunch(f *testing.F) {
	obsFuzzParse(f, contract.KindExactProcessLaunch, contract.ExactProcessLaunchSchema, contract.ParseExactProcessLaunch,
		`{"executable":"/bin/echo","args":["$HOME; ls"],"cwd":"/work","env":{},"timeoutMs":0}`,
		`{"executable":"python3","args":[],"cwd":"/work","env":{"PATH":"/usr/bin"},"stdin":"x","timeoutMs":5000}`)
}

func FuzzParseExactProcessStatus(f *testing.F) {
	obsFuzzParse(f, contract.KindExactProcessStatus, contract.ExactProcessStatusSchema, contract.ParseExactProcessStatus,
		`{"pid":10,"running":true,"exitCode":-1}`,
		`{"pid":10,"running":false,"exitCode":-1,"exitSignal":"SIGKILL","termination":{"kind":"signal","signal":"SIGKILL"}}`,
		`{"pid":10,"running":false,"exitCode":0,"termination":{"kind":"exit","exitCode":0}}`)
}

func FuzzParseProcessTermination(f *testing.F) {
	obsFuzzParse(f, contract.KindProcessTermination, contract.ProcessTerminationSchema, contract.ParseProcessTermination,
		`{"kind":"exit","exitCode":1}`, `{"kind":"timeout","timeoutMs":30000}`, `{"kind":"signal","signal":"SIGTERM"}`, `{"kind":"cancelled"}`)
}
