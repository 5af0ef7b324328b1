package contract

import (
	"errors"
	"fmt"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/schema"
)

// Kind names of environment creation.
const (
	// KindCreateInput names CreateAgentEnvironmentInput (no reference
	// vectors: the reference has no runtime schema for it).
	KindCreateInput = "CreateAgentEnvironmentInput"
	// KindEnvironmentCreation names the creation verdict.
	KindEnvironmentCreation = "AgentEnvironmentCreation"
	// KindEgressPolicy names an environment's egress policy.
	KindEgressPolicy = "AgentEnvironmentEgressPolicy"
	// KindRuntimeAttachments names runtime-owned attachments.
	KindRuntimeAttachments = "AgentRuntimeAttachments"
)

// CreateInputDigestKind is the kind member of the create-input digest
// material.
const CreateInputDigestKind = "agent-environment-create.v1"

// EgressMode is an outbound network mode. Treat the set as open.
type EgressMode string

// Egress modes.
const (
	// EgressOpen permits every destination.
	EgressOpen EgressMode = "open"
	// EgressStrict permits only the named domains (plus, for an agent
	// environment, the model endpoints the provider provisioned into it).
	EgressStrict EgressMode = "strict"
	// EgressBlocked denies every destination.
	EgressBlocked EgressMode = "blocked"
)

// EgressPolicy is the outbound network policy requested for an
// environment. A provider that cannot satisfy the mode fails the create;
// it never weakens or widens the policy. AllowDomains belongs to the
// strict mode only; its entries are identifiers (an outer-padded entry is
// refused, not trimmed) and their order is part of the create identity, so
// build the list in a stable order.
type EgressPolicy struct {
	Mode         EgressMode `json:"mode"`
	AllowDomains []string   `json:"allowDomains,omitzero"`
}

// RuntimeAttachments are runtime-owned execution inputs kept apart from
// the authored profile's identity: MCP servers by alias. A provider must
// refuse attachments it does not support and aliases that collide with
// the profile's own MCP servers. Credentials in them are sensitive (never
// in receipts or logs); they are part of keyed create identity and a
// replay cannot refresh them.
type RuntimeAttachments struct {
	MCP map[string]profile.MCPServer `json:"mcp"`
}

// Secrets are the secrets an environment receives: either names of
// secrets the provider holds (Names) or name/value pairs (Values). Exactly
// one form is used; Values wins when both are set. Both forms are part of
// the create identity.
type Secrets struct {
	Names  []string
	Values map[string]string
}

// MarshalValue implements canonjson.ValueMarshaler.
func (s Secrets) MarshalValue() (canonjson.Value, error) {
	if s.Values != nil {
		return canonjson.ToValue(s.Values)
	}
	names := s.Names
	if names == nil {
		names = []string{}
	}
	return canonjson.ToValue(names)
}

// UnmarshalValue implements canonjson.ValueUnmarshaler.
func (s *Secrets) UnmarshalValue(v canonjson.Value) error {
	*s = Secrets{}
	if v.Kind() == canonjson.Array {
		s.Names = []string{}
		return canonjson.FromValue(v, &s.Names)
	}
	s.Values = map[string]string{}
	return canonjson.FromValue(v, &s.Values)
}

// CreateInput is the input of one environment create
// (CreateAgentEnvironmentInput). Only Profile is required.
//
// With IdempotencyKey the create is one retry-safe operation: the same key
// with canonically equal input (every field but the key; see
// CreateInputDigest) must return or reconstruct the same environment, also
// after an ambiguous provider response, and the same key with any changed
// field is refused before a second create effect. A provider without
// durable keyed admission refuses a keyed create before provisioning.
// Cancellation of one attempt is the caller's context, never part of the
// input.
type CreateInput struct {
	// Profile is the inline profile or a provider catalog id.
	Profile profile.Ref `json:"profile"`
	// RuntimeAttachments needs create.runtimeAttachments.
	RuntimeAttachments *RuntimeAttachments `json:"runtimeAttachments,omitzero"`
	// RequestedID is the exact caller-owned environment id an accepted
	// context-transfer destination demands; a taken id is refused.
	RequestedID *string `json:"requestedId,omitzero"`
	// Backend names the agent backend inside the provider (for example
	// "opencode" or "codex").
	Backend   *string           `json:"backend,omitzero"`
	Workspace *WorkspaceRequest `json:"workspace,omitzero"`
	Resources *ResourceRequest  `json:"resources,omitzero"`
	// Env holds environment variables. A provider merging them into a
	// bridge or harness process refuses runtime-process-control names
	// (profile.IsRuntimeProcessControlEnvironmentName).
	Env     map[string]string `json:"env,omitzero"`
	Secrets *Secrets          `json:"secrets,omitzero"`
	// Egress is the requested network policy; absent, the provider applies
	// its default (which may be a strict allowlist). It needs
	// create.egress to list the mode.
	Egress *EgressPolicy `json:"egress,omitzero"`
	// BillingOwner is the platform account funding managed model usage,
	// honored only for a caller the platform authorized for it (needs
	// create.billingOwner).
	BillingOwner *string `json:"billingOwner,omitzero"`
	// Metadata holds caller annotations; it proves neither authorization
	// nor authorship.
	Metadata map[string]canonjson.Value `json:"metadata,omitzero"`
	Name     *string                    `json:"name,omitzero"`
	// IdempotencyKey names one logical create; it is not part of the
	// create identity.
	IdempotencyKey  *string                    `json:"idempotencyKey,omitzero"`
	ProviderOptions map[string]canonjson.Value `json:"providerOptions,omitzero"`
	// Credential is the seat stage's credential request (nil without
	// seats). It is not part of the input's canonical form or digest.
	Credential *CredentialRequest `json:"-"`
}

// Key returns the idempotency key, or "" when the create is unkeyed.
func (in *CreateInput) Key() string {
	if in == nil || in.IdempotencyKey == nil {
		return ""
	}
	return *in.IdempotencyKey
}

// Creation is what one create call did for the environment it returned.
// It is a per-call fact: CreationCreated when this call provisioned the
// environment, CreationReplayed when an existing environment matched the
// idempotency key and this call provisioned nothing. The empty Creation
// means the provider cannot prove either (and get() never states one); a
// consumer treats it as unknown and never destroys an environment whose
// creation it cannot prove, because another caller may hold it.
type Creation string

// Creation verdicts.
const (
	CreationCreated  Creation = "created"
	CreationReplayed Creation = "replayed"
)

// Known reports whether c is one of the two verdicts.
func (c Creation) Known() bool { return c == CreationCreated || c == CreationReplayed }

// envBoundedRecord is a record of node values (every member kept,
// "__proto__" included) within the contract bounds.
func envBoundedRecord(node schema.Node) schema.Node {
	return schema.Refined(schema.Record(node).OwnKeys(), func(c *schema.Context, v canonjson.Value) {
		if !IsBoundedJSON(v) {
			c.Custom("record exceeds the contract bounds")
		}
	})
}

var (
	// CreationSchema accepts "created" or "replayed".
	CreationSchema = schema.Enum(string(CreationCreated), string(CreationReplayed))

	// EgressPolicySchema is the environment egress policy union.
	EgressPolicySchema = schema.Discriminated("mode", map[string]schema.Node{
		string(EgressOpen):    schema.Object(schema.Req("mode", schema.LiteralString(string(EgressOpen)))),
		string(EgressBlocked): schema.Object(schema.Req("mode", schema.LiteralString(string(EgressBlocked)))),
		string(EgressStrict): schema.Object(
			schema.Req("mode", schema.LiteralString(string(EgressStrict))),
			schema.Opt("allowDomains", schema.Array(BoundedIdentifier).MaxItems(MaxArrayLength)),
		),
	})

	envMCPServers = envProfileField("mcp")

	// RuntimeAttachmentsSchema accepts bounded JSON holding exactly
	// {mcp: {alias: AgentProfile MCP server}}, each alias an identifier.
	RuntimeAttachmentsSchema schema.Node = schema.NodeFunc(func(c *schema.Context, v canonjson.Value) canonjson.Value {
		if !IsBoundedJSON(v) {
			c.Custom("runtime attachments exceed the contract bounds or are not finite JSON")
			return v
		}
		return envRuntimeAttachmentsObject.Check(c, v)
	})

	envRuntimeAttachmentsObject = schema.Object(schema.Req("mcp", schema.Refined(envMCPServers, func(c *schema.Context, v canonjson.Value) {
		for _, m := range v.Members() {
			c.Push(m.Name)
			BoundedIdentifier.Check(c, canonjson.StringValue(m.Name))
			c.Pop()
		}
	})))

	envStringRecord = envBoundedRecord(BoundedString)

	// CreateInputSchema is the strict CreateAgentEnvironmentInput shape.
	// It holds no attempt signal: cancellation is a context.Context.
	CreateInputSchema = schema.Object(
		schema.Req("profile", schema.Union(BoundedIdentifier, profile.Schema)),
		schema.Opt("runtimeAttachments", RuntimeAttachmentsSchema),
		schema.Opt("requestedId", BoundedIdentifier),
		schema.Opt("backend", BoundedIdentifier),
		schema.Opt("workspace", WorkspaceRequestSchema),
		schema.Opt("resources", ResourceRequestSchema),
		schema.Opt("env", envStringRecord),
		schema.Opt("secrets", schema.Union(schema.Array(BoundedString).MaxItems(MaxArrayLength), envStringRecord)),
		schema.Opt("egress", EgressPolicySchema),
		schema.Opt("billingOwner", BoundedIdentifier),
		schema.Opt("metadata", BoundedJSONRecord),
		schema.Opt("name", BoundedString),
		schema.Opt("idempotencyKey", BoundedIdentifier),
		schema.Opt("providerOptions", BoundedJSONRecord),
	)
)

// envProfileField returns the node of one AgentProfile member.
func envProfileField(name string) schema.Node {
	for _, f := range profile.Schema.Fields() {
		if f.Name == name {
			return f.Node
		}
	}
	panic("contract: AgentProfile has no member " + name)
}

// ParseCreation decodes and validates a creation verdict.
func ParseCreation(data []byte) (Creation, error) {
	c, err := Parse[Creation](KindEnvironmentCreation, CreationSchema, data)
	if err != nil {
		return "", err
	}
	return *c, nil
}

// ParseEgressPolicy decodes and validates an egress policy.
func ParseEgressPolicy(data []byte) (*EgressPolicy, error) {
	return Parse[EgressPolicy](KindEgressPolicy, EgressPolicySchema, data)
}

// ParseRuntimeAttachments decodes and validates runtime attachments.
func ParseRuntimeAttachments(data []byte) (*RuntimeAttachments, error) {
	return Parse[RuntimeAttachments](KindRuntimeAttachments, RuntimeAttachmentsSchema, data)
}

// ParseCreateInput decodes and validates a create input. A repository
// cwd comes back canonicalized.
func ParseCreateInput(data []byte) (*CreateInput, error) {
	return Parse[CreateInput](KindCreateInput, CreateInputSchema, data)
}

// ErrCreateInput is wrapped by CreateInputDigest when the input has no
// canonical form.
var ErrCreateInput = errors.New("environment create input has no canonical form")

// CreateInputDigest is the canonical identity of a create: the digest of
// {kind: "agent-environment-create.v1", input: the input without its
// idempotency key}. Every other field is included, so key order never
// matters, and a changed requestedId, env value, egress domain order or
// attachment changes the digest; the same input under another key keeps
// it. The input must be valid (a refusal is a *schema.Error); the digest
// is computed over the input exactly as given, as the reference does.
func CreateInputDigest(in *CreateInput) (string, error) {
	if in == nil {
		return "", fmt.Errorf("%w: nil input", ErrCreateInput)
	}
	v, err := envCreateInputValue(in)
	if err != nil {
		return "", err
	}
	return envCreateDigest(v)
}

// envCreateInputValue converts and validates a create input, returning
// the value as given.
func envCreateInputValue(in *CreateInput) (canonjson.Value, error) {
	v, err := canonjson.ToValue(in)
	if err != nil {
		return canonjson.Value{}, fmt.Errorf("%w: %w", ErrCreateInput, err)
	}
	if _, err := schema.Run(KindCreateInput, CreateInputSchema, v); err != nil {
		return canonjson.Value{}, err
	}
	return v, nil
}

func envCreateDigest(v canonjson.Value) (string, error) {
	material := canonjson.ObjectValue([]canonjson.Member{
		{Name: "kind", Value: canonjson.StringValue(CreateInputDigestKind)},
		{Name: "input", Value: withoutMember(v, "idempotencyKey")},
	})
	d, err := DigestOf(material)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrCreateInput, err)
	}
	return d, nil
}
