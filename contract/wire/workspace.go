package wire

import (
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/schema"
)

// Routes of the workspace abilities and profile validation. Each is POST
// with a JSON body and is served only when the capability document
// declares its ability; otherwise it is refused with CodeUnsupported.
const (
	// RouteWorkspaceRead reads a workspace file (ReadFileRequest),
	// answered with ReadFileResult (workspace.read).
	RouteWorkspaceRead = "/v1/environments/{id}/workspace/read"
	// RouteWorkspaceWrite writes a workspace file (WriteFileRequest;
	// 204) (workspace.write). Writing the same content again is harmless,
	// so a client may re-send it after a lost answer.
	RouteWorkspaceWrite = "/v1/environments/{id}/workspace/write"
	// RouteWorkspaceExec runs one command (ExecRequest), answered with the
	// provider's contract.ExecResult (workspace.exec). It is never
	// re-sent: the command may have run. The server bounds it by a
	// deadline (its own limit, or the request's timeoutMs plus
	// ExecGraceMs when that is sooner).
	RouteWorkspaceExec = "/v1/environments/{id}/workspace/exec"
	// PathProfileValidation validates a profile reference
	// (ProfileValidationRequest), answered with the provider's
	// contract.ProfileValidation (profile.validation).
	PathProfileValidation = "/v1/profile/validate"
)

// ExecGraceMs is how long past a command's own timeoutMs the server (and
// a client) waits for the provider to answer before giving up on it.
const ExecGraceMs = 5_000

// ReadFileRequest names a workspace file and, optionally, the session
// whose view of the workspace is meant.
type ReadFileRequest struct {
	Path      string  `json:"path"`
	SessionID *string `json:"sessionId,omitzero"`
}

// ReadFileResult is a file's content.
type ReadFileResult struct {
	Content string `json:"content"`
}

// WriteFileRequest writes Content to the workspace file Path.
type WriteFileRequest struct {
	Path      string  `json:"path"`
	Content   string  `json:"content"`
	SessionID *string `json:"sessionId,omitzero"`
}

// ExecRequest runs Command with the contract's exec options.
type ExecRequest struct {
	Command string                `json:"command"`
	Options *contract.ExecRequest `json:"options,omitzero"`
}

// ProfileValidationRequest asks the provider to validate a profile
// reference (an inline profile or a catalog id).
type ProfileValidationRequest struct {
	Profile profile.Ref `json:"profile"`
}

// Kind names, for errors.
const (
	KindReadFileRequest          = "SidecarReadFileRequest"
	KindReadFileResult           = "SidecarReadFileResult"
	KindWriteFileRequest         = "SidecarWriteFileRequest"
	KindExecRequest              = "SidecarExecRequest"
	KindProfileValidationRequest = "SidecarProfileValidationRequest"
)

var (
	workspacePath = schema.String(schema.MinLen(1), schema.MaxLen(contract.MaxStringLength))
	// ReadFileRequestSchema is the strict ReadFileRequest shape.
	ReadFileRequestSchema = schema.Object(
		schema.Req("path", workspacePath),
		schema.Opt("sessionId", contract.BoundedIdentifier),
	)
	// ReadFileResultSchema is the strict ReadFileResult shape; the
	// content is bounded by the body limit.
	ReadFileResultSchema = schema.Object(schema.Req("content", schema.String()))
	// WriteFileRequestSchema is the strict WriteFileRequest shape; the
	// content is bounded by the body limit.
	WriteFileRequestSchema = schema.Object(
		schema.Req("path", workspacePath),
		schema.Req("content", schema.String()),
		schema.Opt("sessionId", contract.BoundedIdentifier),
	)
	// ExecRequestSchema is the strict ExecRequest shape.
	ExecRequestSchema = schema.Object(
		schema.Req("command", schema.String(schema.MinLen(1), schema.MaxLen(contract.MaxStringLength))),
		schema.Opt("options", contract.ExecRequestSchema),
	)
	// ProfileValidationRequestSchema is the strict
	// ProfileValidationRequest shape.
	ProfileValidationRequestSchema = schema.Object(schema.Req("profile", profile.RefSchema))
)

// ParseReadFileRequest decodes a workspace read body.
func ParseReadFileRequest(data []byte) (*ReadFileRequest, error) {
	return parse[ReadFileRequest](KindReadFileRequest, ReadFileRequestSchema, data)
}

// ParseReadFileResult decodes a workspace read answer.
func ParseReadFileResult(data []byte) (*ReadFileResult, error) {
	return parse[ReadFileResult](KindReadFileResult, ReadFileResultSchema, data)
}

// ParseWriteFileRequest decodes a workspace write body.
func ParseWriteFileRequest(data []byte) (*WriteFileRequest, error) {
	return parse[WriteFileRequest](KindWriteFileRequest, WriteFileRequestSchema, data)
}

// ParseExecRequest decodes a workspace exec body.
func ParseExecRequest(data []byte) (*ExecRequest, error) {
	return parse[ExecRequest](KindExecRequest, ExecRequestSchema, data)
}

// ParseExecResult decodes a workspace exec answer; one without an exit
// status is refused.
func ParseExecResult(data []byte) (*contract.ExecResult, error) {
	return parse[contract.ExecResult](contract.KindExecResult, contract.ExecResultSchema, data)
}

// ParseProfileValidationRequest decodes a profile validation body (at
// most MaxProfileBodyBytes).
func ParseProfileValidationRequest(data []byte) (*ProfileValidationRequest, error) {
	return parseWithin[ProfileValidationRequest](KindProfileValidationRequest, ProfileValidationRequestSchema, data, MaxProfileBodyBytes)
}

// ParseProfileValidation decodes a profile validation answer.
func ParseProfileValidation(data []byte) (*contract.ProfileValidation, error) {
	return parse[contract.ProfileValidation](contract.KindProfileValidation, contract.ProfileValidationSchema, data)
}
