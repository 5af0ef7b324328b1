package wire

import (
	"errors"
	"io/fs"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/schema"
)

// Codes of the contract's other final refusals: each stands for one
// sentinel of package contract (see Refusal), is a 4xx (a client never
// retries it) and matches that sentinel with errors.Is on the client.
const (
	// CodeDestroyed: the environment was destroyed (contract.ErrDestroyed).
	CodeDestroyed = "environment_destroyed"
	// CodeOutOfScope: a source-scoped handle refused a resource outside
	// its source scope (contract.ErrOutOfScope).
	CodeOutOfScope = "out_of_scope"
	// CodeCreateInput: the create input has no canonical form
	// (contract.ErrCreateInput).
	CodeCreateInput = "invalid_create_input"
	// CodeNotCanonical: a value is not finite, acyclic RFC 8785 JSON
	// (contract.ErrNotCanonical).
	CodeNotCanonical = "not_canonical"
	// CodeBranchingMaterial: a branching operation's material exceeds
	// the contract bounds (contract.ErrBranchingMaterial).
	CodeBranchingMaterial = "branching_material_refused"
	// CodeLegacyContextTransfer: a context transfer request in the
	// pre-Interface 5 shape (contract.ErrLegacyContextTransferRequest).
	CodeLegacyContextTransfer = "legacy_context_transfer"
	// CodeFileTooLarge: a bounded read of a file larger than it allows
	// (contract.ErrFileTooLarge).
	CodeFileTooLarge = "file_too_large"
	// CodeFileMode: an exact file mode outside 0..0o7777
	// (contract.ErrFileMode).
	CodeFileMode = "invalid_file_mode"
	// CodeObservationCredential: an observation payload carried a
	// credential (contract.ErrObservationCredential).
	CodeObservationCredential = "observation_credential"
	// CodePrivateEvent: a private native identity event on a public
	// stream (contract.ErrPrivateEvent).
	CodePrivateEvent = "private_event"
	// CodeCwdBase: a cwd whose base the provider does not accept (a
	// *contract.CwdBaseError; ErrorDetail.CwdBase says more).
	CodeCwdBase = "cwd_base_refused"
)

// refusals pairs each final-refusal code with the contract error it
// stands for, in the order Refusal tries them. It is the one table both
// directions of the mapping read: Refusal (server) and Error.Is (client).
var refusals = []struct {
	code string
	err  error
}{
	{CodeIdempotencyConflict, contract.ErrIdempotencyConflict},
	{CodeUnsupported, contract.ErrUnsupported},
	{CodeFileNotFound, fs.ErrNotExist},
	{CodeDestroyed, contract.ErrDestroyed},
	{CodeOutOfScope, contract.ErrOutOfScope},
	{CodeLegacyContextTransfer, contract.ErrLegacyContextTransferRequest},
	{CodeCreateInput, contract.ErrCreateInput},
	{CodeNotCanonical, contract.ErrNotCanonical},
	{CodeBranchingMaterial, contract.ErrBranchingMaterial},
	{CodeFileTooLarge, contract.ErrFileTooLarge},
	{CodeFileMode, contract.ErrFileMode},
	{CodeObservationCredential, contract.ErrObservationCredential},
	{CodePrivateEvent, contract.ErrPrivateEvent},
	{CodeQuotaRefused, contract.ErrQuotaRefused},
}

// Refusal returns the wire detail of the contract's final refusal err is
// (errors.As for the typed ones, errors.Is for the sentinels), and false
// when err is none of them: such an error is a fault (CodeProvider),
// which a client may retry.
func Refusal(err error) (ErrorDetail, bool) {
	var quota *contract.QuotaRefusalError
	var cwd *contract.CwdBaseError
	var big *contract.FileTooLargeError
	switch {
	case errors.As(err, &quota):
		return QuotaError(quota), true
	case errors.As(err, &cwd):
		return ErrorDetail{Code: CodeCwdBase, Message: err.Error(),
			CwdBase: &CwdBaseDetail{Label: cwd.Label, Want: cwd.Want, Got: cwd.Got}}, true
	case errors.As(err, &big):
		d := &FileTooLargeDetail{Path: big.Path, MaxBytes: big.MaxBytes}
		if big.Size >= 0 {
			size := big.Size
			d.Size = &size
		}
		return ErrorDetail{Code: CodeFileTooLarge, Message: err.Error(), FileTooLarge: d}, true
	}
	for _, r := range refusals {
		if errors.Is(err, r.err) {
			return ErrorDetail{Code: r.code, Message: err.Error()}, true
		}
	}
	return ErrorDetail{}, false
}

// CwdBaseDetail is what a cwd_base_refused error adds: the consumer
// that refused, the base it accepts and the base it was given.
type CwdBaseDetail struct {
	Label string `json:"label"`
	Want  string `json:"want"`
	Got   string `json:"got"`
}

var cwdBaseDetailSchema = schema.Object(
	schema.Req("label", contract.BoundedString),
	schema.Req("want", contract.BoundedString),
	schema.Req("got", contract.BoundedString),
)

// FileTooLargeDetail is what a file_too_large error adds: the file, its
// size when known (absent: unknown, never 0) and the read's limit.
type FileTooLargeDetail struct {
	Path     string `json:"path"`
	Size     *int64 `json:"size,omitzero"`
	MaxBytes int64  `json:"maxBytes"`
}

var fileTooLargeDetailSchema = schema.Object(
	schema.Req("path", contract.BoundedString),
	schema.Opt("size", schema.Number(schema.Int, schema.NonNegative, schema.Max(canonjson.MaxSafeInteger))),
	schema.Req("maxBytes", schema.Number(schema.Int, schema.NonNegative, schema.Max(canonjson.MaxSafeInteger))),
)

// RefusalCodes lists the codes of the contract's final refusals (those
// Refusal returns), in Refusal's order.
func RefusalCodes() []string {
	out := make([]string, len(refusals))
	for i, r := range refusals {
		out[i] = r.code
	}
	return out
}
