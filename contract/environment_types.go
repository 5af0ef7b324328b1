package contract

import (
	"fmt"
	"math"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/schema"
)

// Kind names of the auxiliary environment shapes (no reference vectors:
// the reference declares them as types only).
const (
	KindEnvironmentStatus  = "AgentEnvironmentStatus"
	KindSessionStatus      = "AgentSessionStatus"
	KindEnvironmentSummary = "AgentEnvironmentSummary"
	KindEnvironmentQuery   = "AgentEnvironmentQuery"
	KindExecRequest        = "ExecRequest"
	KindExecResult         = "ExecResult"
	KindCheckpointRequest  = "CheckpointRequest"
	KindCheckpointRef      = "CheckpointRef"
	KindForkRequest        = "ForkRequest"
	KindSessionRef         = "AgentSessionRef"
	KindProfileValidation  = "AgentProfileValidationResult"
)

// EnvironmentStatus is an environment's lifecycle state. Treat the set as
// open: an unknown value in a response is a reason to fail closed.
type EnvironmentStatus string

// Environment statuses.
const (
	EnvironmentPending      EnvironmentStatus = "pending"
	EnvironmentProvisioning EnvironmentStatus = "provisioning"
	EnvironmentRunning      EnvironmentStatus = "running"
	EnvironmentStopped      EnvironmentStatus = "stopped"
	EnvironmentFailed       EnvironmentStatus = "failed"
	EnvironmentExpired      EnvironmentStatus = "expired"
	EnvironmentUnknown      EnvironmentStatus = "unknown"
)

// SessionStatus is a session's state: an environment status, or
// completed or cancelled. Cancelled is caller cancellation, distinct from
// failed.
type SessionStatus string

// Session statuses: every environment status, plus completed and
// cancelled.
const (
	SessionPending      SessionStatus = "pending"
	SessionProvisioning SessionStatus = "provisioning"
	SessionRunning      SessionStatus = "running"
	SessionStopped      SessionStatus = "stopped"
	SessionFailed       SessionStatus = "failed"
	SessionExpired      SessionStatus = "expired"
	SessionUnknown      SessionStatus = "unknown"
	SessionCompleted    SessionStatus = "completed"
	SessionCancelled    SessionStatus = "cancelled"
)

var (
	envEnvironmentStatuses = []string{string(EnvironmentPending), string(EnvironmentProvisioning), string(EnvironmentRunning),
		string(EnvironmentStopped), string(EnvironmentFailed), string(EnvironmentExpired), string(EnvironmentUnknown)}
	envSessionStatuses = append(append([]string(nil), envEnvironmentStatuses...), string(SessionCompleted), string(SessionCancelled))
)

// Valid reports whether s is a known environment status.
func (s EnvironmentStatus) Valid() bool { return envContains(envEnvironmentStatuses, string(s)) }

// Valid reports whether s is a known session status.
func (s SessionStatus) Valid() bool { return envContains(envSessionStatuses, string(s)) }

// Terminal reports whether a session in status s can no longer change:
// completed, failed, cancelled, stopped or expired. Unknown is not
// terminal: the provider could not say, and asking again is the point.
func (s SessionStatus) Terminal() bool {
	switch s {
	case SessionCompleted, SessionFailed, SessionCancelled, SessionStopped, SessionExpired:
		return true
	}
	return false
}

func envContains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// EnvironmentSummary is one entry of a provider's environment list.
type EnvironmentSummary struct {
	ID       string                     `json:"id"`
	Provider string                     `json:"provider"`
	Name     *string                    `json:"name,omitzero"`
	Status   *EnvironmentStatus         `json:"status,omitzero"`
	Metadata map[string]canonjson.Value `json:"metadata,omitzero"`
}

// EnvironmentQuery filters a provider's environment list.
type EnvironmentQuery struct {
	Name            *string                    `json:"name,omitzero"`
	Metadata        map[string]canonjson.Value `json:"metadata,omitzero"`
	ProviderOptions map[string]canonjson.Value `json:"providerOptions,omitzero"`
}

// ExecRequest are the options of one workspace command. Cwd stays a plain
// string (it is not a based WorkspaceCwd); cancellation is the caller's
// context.
type ExecRequest struct {
	Cwd       *string           `json:"cwd,omitzero"`
	Env       map[string]string `json:"env,omitzero"`
	TimeoutMs *int64            `json:"timeoutMs,omitzero"`
}

// ExecResult is the outcome of one workspace command. ExitCode is always
// an observed exit status: a result that carries none is refused, never
// read as 0 (zero is the one value that means success).
type ExecResult struct {
	ExitCode int64  `json:"exitCode"`
	Stdout   string `json:"stdout"`
	Stderr   string `json:"stderr"`
}

// Succeeded reports whether the command exited with status 0.
func (r ExecResult) Succeeded() bool { return r.ExitCode == 0 }

// ExecResultFromUnknown normalizes the untyped answer of a sandbox SDK's
// command call. The exit status is read from exitCode, else code; output
// from stdout, else output; errors from stderr, else error (a missing
// stream is empty). An answer with no finite exit status is refused with
// an error naming source, the SDK call whose answer could not be read.
func ExecResultFromUnknown(v canonjson.Value, source string) (*ExecResult, error) {
	number := func(name string) (float64, bool) {
		x, ok := v.Get(name)
		if !ok || x.Kind() != canonjson.Number || !canonjson.IsFinite(x.Float()) {
			return 0, false
		}
		return x.Float(), true
	}
	text := func(names ...string) string {
		for _, name := range names {
			if x, ok := v.Get(name); ok && x.Kind() == canonjson.String {
				return x.Str()
			}
		}
		return ""
	}
	if v.Kind() != canonjson.Object {
		v = canonjson.ObjectValue(nil)
	}
	code, ok := number("exitCode")
	if !ok {
		code, ok = number("code")
	}
	if !ok {
		return nil, fmt.Errorf("%s returned no exit status: a command result must carry a finite exitCode or code", source)
	}
	if code != math.Trunc(code) || !canonjson.IsSafeInteger(code) {
		return nil, fmt.Errorf("%s returned exit status %v, which is not an integer", source, code)
	}
	return &ExecResult{ExitCode: int64(code), Stdout: text("stdout", "output"), Stderr: text("stderr", "error")}, nil
}

// CheckpointRequest asks for a legacy checkpoint. Legacy checkpoints carry
// no recovery semantics; never present them as durable branching.
type CheckpointRequest struct {
	Name     *string                    `json:"name,omitzero"`
	Metadata map[string]canonjson.Value `json:"metadata,omitzero"`
}

// CheckpointRef names a legacy checkpoint.
type CheckpointRef struct {
	ID       string                     `json:"id"`
	Provider *string                    `json:"provider,omitzero"`
	Metadata map[string]canonjson.Value `json:"metadata,omitzero"`
}

// ForkRequest asks for a legacy fork of a checkpoint.
type ForkRequest struct {
	Name     *string                    `json:"name,omitzero"`
	Metadata map[string]canonjson.Value `json:"metadata,omitzero"`
}

// SessionRef names a session a dispatch started (AgentSessionRef).
// ControlRef, when present, is the retained run's control reference; the
// session must report the same one. ContextTransferReceipt proves the
// fresh session admitted a transferred context.
type SessionRef struct {
	ID                     string                     `json:"id"`
	Provider               *string                    `json:"provider,omitzero"`
	ControlRef             *RunControlRef             `json:"controlRef,omitzero"`
	ContextTransferReceipt *ContextTransferReceipt    `json:"contextTransferReceipt,omitzero"`
	Metadata               map[string]canonjson.Value `json:"metadata,omitzero"`
}

// Profile validation issue levels.
const (
	ProfileIssueError   = "error"
	ProfileIssueWarning = "warning"
	ProfileIssueInfo    = "info"
)

// ProfileValidation is a provider's answer to validating a profile
// reference: whether it would honor it, the issues it found, and
// optionally the profile as it would normalize it.
type ProfileValidation struct {
	OK                bool                     `json:"ok"`
	Issues            []ProfileValidationIssue `json:"issues"`
	NormalizedProfile *profile.Profile         `json:"normalizedProfile,omitzero"`
}

// ProfileValidationIssue is one finding; Path, when present, is a JSON
// pointer into the profile.
type ProfileValidationIssue struct {
	Level   string  `json:"level"`
	Code    string  `json:"code"`
	Message string  `json:"message"`
	Path    *string `json:"path,omitzero"`
}

// HasErrors reports whether any issue is at the error level.
func (p ProfileValidation) HasErrors() bool {
	for _, i := range p.Issues {
		if i.Level == ProfileIssueError {
			return true
		}
	}
	return false
}

var (
	// EnvironmentStatusSchema accepts a known environment status.
	EnvironmentStatusSchema = schema.Enum(envEnvironmentStatuses...)

	// SessionStatusSchema accepts a known session status.
	SessionStatusSchema = schema.Enum(envSessionStatuses...)

	// EnvironmentSummarySchema is the strict summary shape.
	EnvironmentSummarySchema = schema.Object(
		schema.Req("id", BoundedIdentifier),
		schema.Req("provider", BoundedIdentifier),
		schema.Opt("name", BoundedString),
		schema.Opt("status", EnvironmentStatusSchema),
		schema.Opt("metadata", BoundedJSONRecord),
	)

	// EnvironmentQuerySchema is the strict query shape.
	EnvironmentQuerySchema = schema.Object(
		schema.Opt("name", BoundedString),
		schema.Opt("metadata", BoundedJSONRecord),
		schema.Opt("providerOptions", BoundedJSONRecord),
	)

	// ExecRequestSchema is the strict exec options shape.
	ExecRequestSchema = schema.Object(
		schema.Opt("cwd", BoundedString),
		schema.Opt("env", envStringRecord),
		schema.Opt("timeoutMs", schema.Number(schema.Int, schema.Positive)),
	)

	// ExecResultSchema requires an integer exit status and both streams.
	ExecResultSchema = schema.Object(
		schema.Req("exitCode", schema.Number(schema.Int)),
		schema.Req("stdout", schema.String()),
		schema.Req("stderr", schema.String()),
	)

	envLegacyBranchFields = []schema.Field{
		schema.Opt("name", BoundedString),
		schema.Opt("metadata", BoundedJSONRecord),
	}

	// CheckpointRequestSchema is the legacy checkpoint request shape.
	CheckpointRequestSchema = schema.Object(envLegacyBranchFields...)

	// ForkRequestSchema is the legacy fork request shape.
	ForkRequestSchema = schema.Object(envLegacyBranchFields...)

	// CheckpointRefSchema is the legacy checkpoint reference shape.
	CheckpointRefSchema = schema.Object(
		schema.Req("id", BoundedIdentifier),
		schema.Opt("provider", BoundedIdentifier),
		schema.Opt("metadata", BoundedJSONRecord),
	)

	// SessionRefSchema is the strict AgentSessionRef shape.
	SessionRefSchema = schema.Object(
		schema.Req("id", BoundedIdentifier),
		schema.Opt("provider", BoundedIdentifier),
		schema.Opt("controlRef", RunControlRefSchema),
		schema.Opt("contextTransferReceipt", ContextTransferReceiptSchema),
		schema.Opt("metadata", BoundedJSONRecord),
	)

	// ProfileValidationSchema is the strict validateProfile result shape.
	ProfileValidationSchema = schema.Object(
		schema.Req("ok", schema.Bool()),
		schema.Req("issues", schema.Array(schema.Object(
			schema.Req("level", schema.Enum(ProfileIssueError, ProfileIssueWarning, ProfileIssueInfo)),
			schema.Req("code", BoundedIdentifier),
			schema.Req("message", BoundedString),
			schema.Opt("path", BoundedString),
		)).MaxItems(MaxArrayLength)),
		schema.Opt("normalizedProfile", profile.Schema),
	)
)

// ParseEnvironmentSummary decodes and validates an environment summary.
func ParseEnvironmentSummary(data []byte) (*EnvironmentSummary, error) {
	return Parse[EnvironmentSummary](KindEnvironmentSummary, EnvironmentSummarySchema, data)
}

// ParseEnvironmentQuery decodes and validates an environment query.
func ParseEnvironmentQuery(data []byte) (*EnvironmentQuery, error) {
	return Parse[EnvironmentQuery](KindEnvironmentQuery, EnvironmentQuerySchema, data)
}

// ParseExecRequest decodes and validates exec options.
func ParseExecRequest(data []byte) (*ExecRequest, error) {
	return Parse[ExecRequest](KindExecRequest, ExecRequestSchema, data)
}

// ParseExecResult decodes and validates a command result; a result with
// no exit status is refused.
func ParseExecResult(data []byte) (*ExecResult, error) {
	return Parse[ExecResult](KindExecResult, ExecResultSchema, data)
}

// ParseCheckpointRequest decodes and validates a legacy checkpoint
// request.
func ParseCheckpointRequest(data []byte) (*CheckpointRequest, error) {
	return Parse[CheckpointRequest](KindCheckpointRequest, CheckpointRequestSchema, data)
}

// ParseCheckpointRef decodes and validates a legacy checkpoint reference.
func ParseCheckpointRef(data []byte) (*CheckpointRef, error) {
	return Parse[CheckpointRef](KindCheckpointRef, CheckpointRefSchema, data)
}

// ParseForkRequest decodes and validates a legacy fork request.
func ParseForkRequest(data []byte) (*ForkRequest, error) {
	return Parse[ForkRequest](KindForkRequest, ForkRequestSchema, data)
}

// ParseSessionRef decodes and validates a session reference.
func ParseSessionRef(data []byte) (*SessionRef, error) {
	return Parse[SessionRef](KindSessionRef, SessionRefSchema, data)
}

// ParseProfileValidation decodes and validates a validateProfile result.
func ParseProfileValidation(data []byte) (*ProfileValidation, error) {
	return Parse[ProfileValidation](KindProfileValidation, ProfileValidationSchema, data)
}
