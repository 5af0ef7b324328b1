package contract

import (
	"fmt"
	"regexp"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/schema"
)

// Kind names of the exact-process shapes (no reference vectors: the
// reference declares them as types only).
const (
	KindCreateExactProcessInput      = "CreateAgentExactProcessEnvironmentInput"
	KindExactProcessEnvironmentQuery = "AgentExactProcessEnvironmentQuery"
	KindExactProcessLaunch           = "AgentExactProcessLaunch"
	KindExactProcessStatus           = "AgentExactProcessStatus"
	KindProcessTermination           = "AgentCandidateTermination" // the candidate contract's shape; not registered here
)

// ExactProcessCreateDigestKind is the kind member of the exact-process
// create digest material.
const ExactProcessCreateDigestKind = "agent-exact-process-create.v1"

// CreateExactProcessInput asks for a fresh exact-process environment:
// isolated, reproducible process execution with no provider-managed agent
// or user workload and no customer ingress. Every property is explicit:
// an immutable image reference, the egress policy (blocked or strict; an
// unsupported mode fails, never weakens), the maximum lifetime, the
// resources (never provider defaults) and the metadata. The idempotency
// key is required: the same key and input return the same environment,
// the same key with any other input fails. ProviderOptions may narrow the
// isolation contract, never weaken it.
type CreateExactProcessInput struct {
	Image              string                     `json:"image"`
	Egress             EgressPolicy               `json:"egress"`
	MaxLifetimeMs      int64                      `json:"maxLifetimeMs"`
	ProvisionTimeoutMs *int64                     `json:"provisionTimeoutMs,omitzero"`
	Resources          ExactProcessResources      `json:"resources"`
	Metadata           map[string]canonjson.Value `json:"metadata"`
	IdempotencyKey     string                     `json:"idempotencyKey"`
	ProviderOptions    map[string]canonjson.Value `json:"providerOptions,omitzero"`
}

// ExactProcessResources are the explicit limits of an exact environment:
// a positive CPU core count and positive integer mebibytes of memory and
// disk.
type ExactProcessResources struct {
	CPU      float64 `json:"cpu"`
	MemoryMB int64   `json:"memoryMb"`
	DiskMB   int64   `json:"diskMb"`
}

// ExactProcessEnvironmentQuery selects exact environments: every given
// metadata member must match the persisted metadata exactly. A provider
// returns every match (it owns pagination).
type ExactProcessEnvironmentQuery struct {
	Metadata        map[string]canonjson.Value `json:"metadata,omitzero"`
	ProviderOptions map[string]canonjson.Value `json:"providerOptions,omitzero"`
}

// ExactProcessLaunch is one shell-free process launch. Executable is an
// absolute path unless Env supplies PATH; Args are passed as they are (no
// shell); Env replaces, never extends, the ambient environment; Stdin, when
// present, is written and closed; TimeoutMs is positive, or 0 for no
// timeout.
type ExactProcessLaunch struct {
	Executable string            `json:"executable"`
	Args       []string          `json:"args"`
	Cwd        string            `json:"cwd"`
	Env        map[string]string `json:"env"`
	Stdin      *string           `json:"stdin,omitzero"`
	TimeoutMs  int64             `json:"timeoutMs"`
}

// ExactProcessStatus is the state of one exact process. While Running,
// ExitCode is -1 and Termination is absent; once terminated, Termination
// is required and agrees with the process's wait() answer.
type ExactProcessStatus struct {
	PID         int64               `json:"pid"`
	Running     bool                `json:"running"`
	ExitCode    int64               `json:"exitCode"`
	ExitSignal  *string             `json:"exitSignal,omitzero"`
	Termination *ProcessTermination `json:"termination,omitzero"`
}

// Process termination kinds. A timeout, a signal and a cancellation stay
// distinct from an exit.
const (
	TerminationExit      = "exit"
	TerminationTimeout   = "timeout"
	TerminationSignal    = "signal"
	TerminationCancelled = "cancelled"
)

// ProcessTermination is how a process ended (AgentCandidateTermination):
// Kind exit with ExitCode, timeout with TimeoutMs, signal with Signal (a
// SIG name), or cancelled with nothing else.
type ProcessTermination struct {
	Kind      string  `json:"kind"`
	ExitCode  *int64  `json:"exitCode,omitzero"`
	TimeoutMs *int64  `json:"timeoutMs,omitzero"`
	Signal    *string `json:"signal,omitzero"`
}

var (
	envSignalName = regexp.MustCompile(`^SIG[A-Z0-9]+$`)

	// ProcessTerminationSchema is the termination union.
	ProcessTerminationSchema = schema.Discriminated("kind", map[string]schema.Node{
		TerminationExit: schema.Object(
			schema.Req("kind", schema.LiteralString(TerminationExit)),
			schema.Req("exitCode", schema.Number(schema.Int)),
		),
		TerminationTimeout: schema.Object(
			schema.Req("kind", schema.LiteralString(TerminationTimeout)),
			schema.Req("timeoutMs", schema.Number(schema.Int, schema.Positive)),
		),
		TerminationSignal: schema.Object(
			schema.Req("kind", schema.LiteralString(TerminationSignal)),
			schema.Req("signal", schema.String(schema.Matches("must be a signal name (SIG…)", envSignalName.MatchString))),
		),
		TerminationCancelled: schema.Object(schema.Req("kind", schema.LiteralString(TerminationCancelled))),
	})

	// ExactProcessEgressPolicySchema accepts only blocked, or strict with
	// its required allowlist.
	ExactProcessEgressPolicySchema = schema.Discriminated("mode", map[string]schema.Node{
		string(EgressBlocked): schema.Object(schema.Req("mode", schema.LiteralString(string(EgressBlocked)))),
		string(EgressStrict): schema.Object(
			schema.Req("mode", schema.LiteralString(string(EgressStrict))),
			schema.Req("allowDomains", schema.Array(BoundedIdentifier).MaxItems(MaxArrayLength)),
		),
	})

	envPositiveInt = schema.Number(schema.Int, schema.Positive)

	// CreateExactProcessInputSchema is the strict exact create input.
	CreateExactProcessInputSchema = schema.Object(
		schema.Req("image", BoundedIdentifier),
		schema.Req("egress", ExactProcessEgressPolicySchema),
		schema.Req("maxLifetimeMs", envPositiveInt),
		schema.Opt("provisionTimeoutMs", envPositiveInt),
		schema.Req("resources", schema.Object(
			schema.Req("cpu", schema.Number(schema.Positive)),
			schema.Req("memoryMb", envPositiveInt),
			schema.Req("diskMb", envPositiveInt),
		)),
		schema.Req("metadata", BoundedJSONRecord),
		schema.Req("idempotencyKey", BoundedIdentifier),
		schema.Opt("providerOptions", BoundedJSONRecord),
	)

	// ExactProcessEnvironmentQuerySchema is the strict query shape.
	ExactProcessEnvironmentQuerySchema = schema.Object(
		schema.Opt("metadata", BoundedJSONRecord),
		schema.Opt("providerOptions", BoundedJSONRecord),
	)

	// ExactProcessLaunchSchema is the strict launch shape.
	ExactProcessLaunchSchema = schema.Object(
		schema.Req("executable", envNonEmptyString),
		schema.Req("args", schema.Array(BoundedString).MaxItems(MaxArrayLength)),
		schema.Req("cwd", envNonEmptyString),
		schema.Req("env", envStringRecord),
		schema.Opt("stdin", schema.String()),
		schema.Req("timeoutMs", schema.Number(schema.Int, schema.NonNegative)),
	)

	// ExactProcessStatusSchema is the status shape with its running and
	// termination rules.
	ExactProcessStatusSchema = schema.Object(
		schema.Req("pid", schema.Number(schema.Int, schema.NonNegative)),
		schema.Req("running", schema.Bool()),
		schema.Req("exitCode", schema.Number(schema.Int)),
		schema.Opt("exitSignal", BoundedIdentifier),
		schema.Opt("termination", ProcessTerminationSchema),
	).Refine(func(c *schema.Context, v canonjson.Value) {
		running, _ := v.Get("running")
		exit, _ := v.Get("exitCode")
		_, terminated := v.Get("termination")
		switch {
		case running.Bool() && exit.Float() != -1:
			c.Custom("a running process reports exit code -1", "exitCode")
		case running.Bool() && terminated:
			c.Custom("a running process has no termination", "termination")
		case !running.Bool() && !terminated:
			c.Custom("a terminated process reports its termination", "termination")
		}
	})
)

// ParseCreateExactProcessInput decodes and validates an exact create
// input.
func ParseCreateExactProcessInput(data []byte) (*CreateExactProcessInput, error) {
	return Parse[CreateExactProcessInput](KindCreateExactProcessInput, CreateExactProcessInputSchema, data)
}

// ParseExactProcessEnvironmentQuery decodes and validates an exact query.
func ParseExactProcessEnvironmentQuery(data []byte) (*ExactProcessEnvironmentQuery, error) {
	return Parse[ExactProcessEnvironmentQuery](KindExactProcessEnvironmentQuery, ExactProcessEnvironmentQuerySchema, data)
}

// ParseExactProcessLaunch decodes and validates a launch.
func ParseExactProcessLaunch(data []byte) (*ExactProcessLaunch, error) {
	return Parse[ExactProcessLaunch](KindExactProcessLaunch, ExactProcessLaunchSchema, data)
}

// ParseExactProcessStatus decodes and validates a process status.
func ParseExactProcessStatus(data []byte) (*ExactProcessStatus, error) {
	return Parse[ExactProcessStatus](KindExactProcessStatus, ExactProcessStatusSchema, data)
}

// ParseProcessTermination decodes and validates a termination.
func ParseProcessTermination(data []byte) (*ProcessTermination, error) {
	return Parse[ProcessTermination](KindProcessTermination, ProcessTerminationSchema, data)
}

// CreateExactProcessInputDigest is the canonical identity of an exact
// create: the digest of {kind: "agent-exact-process-create.v1", input:
// the input without its idempotency key}. A provider compares it under a
// reused key: equal digests return the same environment, different ones
// fail. The input must be valid (a refusal is a *schema.Error).
func CreateExactProcessInputDigest(in *CreateExactProcessInput) (string, error) {
	v, err := exactCreateInputValue(in)
	if err != nil {
		return "", err
	}
	return exactCreateDigest(v)
}

// exactCreateInputValue converts and validates an exact create input,
// returning the value as given.
func exactCreateInputValue(in *CreateExactProcessInput) (canonjson.Value, error) {
	if in == nil {
		return canonjson.Value{}, fmt.Errorf("%w: nil input", ErrCreateInput)
	}
	return Validate(KindCreateExactProcessInput, CreateExactProcessInputSchema, in)
}

func exactCreateDigest(v canonjson.Value) (string, error) {
	d, err := DigestOf(canonjson.ObjectValue([]canonjson.Member{
		{Name: "kind", Value: canonjson.StringValue(ExactProcessCreateDigestKind)},
		{Name: "input", Value: withoutMember(v, "idempotencyKey")},
	}))
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrCreateInput, err)
	}
	return d, nil
}
