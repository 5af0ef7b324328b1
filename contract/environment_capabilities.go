package contract

import (
	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/harness"
	"github.com/agentrt/agentrt/schema"
)

// Kind names of the capability document.
const (
	KindEnvironmentCapabilities = "AgentEnvironmentCapabilities"
	// KindProfileCapabilities names the document's profile block (no
	// reference vectors of its own).
	KindProfileCapabilities = "AgentProfileCapabilities"
)

// Capabilities is an environment provider's capability document
// (AgentEnvironmentCapabilities): what its create accepts and which
// operations its environments expose. It is strict at every level and
// honest by construction: an optional block is present only when the
// guarantee it names is implemented in full, and an optional operation of
// an environment must be absent exactly when its capability is false. A
// declaration is not evidence that anything was delivered or applied.
//
// A provider states the document before any environment exists; an
// environment may carry its own document, which then governs every
// operation offered against that environment.
type Capabilities struct {
	Profile   ProfileCapabilities   `json:"profile"`
	Streaming StreamingCapabilities `json:"streaming"`
	Sessions  SessionCapabilities   `json:"sessions"`
	// RetainedControl is present only when exact run, result, event,
	// cancellation, replay, detach, turn and session identity are all
	// implemented together.
	RetainedControl *RetainedControlCapabilities `json:"retainedControl,omitzero"`
	// NativeContinuation is present only when same-session continuation is
	// atomic and retry-safe.
	NativeContinuation *NativeContinuationCapabilities `json:"nativeContinuation,omitzero"`
	// ContextTransfer is present only when fresh-session context transfer,
	// its retry idempotency and its lookup are all durable.
	ContextTransfer *ContextTransferCapabilities `json:"contextTransfer,omitzero"`
	// Interactions is present only when the provider can both originate
	// typed interaction requests and answer them.
	Interactions *InteractionCapabilities `json:"interactions,omitzero"`
	Workspace    WorkspaceCapabilities    `json:"workspace"`
	Branching    BranchingCapabilities    `json:"branching"`
	// Placement: environments report where they run.
	Placement bool `json:"placement"`
	// Usage: streams report token usage (some event carries it).
	Usage bool `json:"usage"`
	// Confidential: the provider can run confidential executions.
	Confidential bool `json:"confidential"`
	// ExactProcess is present only when the provider's exact-process facet
	// enforces every isolation property on its real execution path.
	ExactProcess *ExactProcessCapabilities `json:"exactProcess,omitzero"`
	// Create is present only when create honors at least one of the
	// optional create fields it lists.
	Create *CreateCapabilities `json:"create,omitzero"`
	// Observation flags the surfaces of the normalized environment
	// observation the provider reports.
	Observation *ObservationCapabilities `json:"observation,omitzero"`
	// InteractiveTerminal is present only when the provider serves an
	// interactive terminal.
	InteractiveTerminal *InteractiveTerminalCapabilities `json:"interactiveTerminal,omitzero"`
	// InteractiveAgent is present only when the provider can start and
	// rediscover exact native agent TUIs.
	InteractiveAgent *InteractiveAgentCapabilities `json:"interactiveAgent,omitzero"`
}

// ProfileCapabilities says which parts of an AgentProfile the provider
// honors when it creates an environment.
type ProfileCapabilities struct {
	// NamedProfiles: create accepts a catalog profile id.
	NamedProfiles bool `json:"namedProfiles"`
	// SystemPrompt declares the two independent system-prompt intents.
	// Replace: the provider deletes the harness's own prompt and installs
	// prompt.systemPrompt. Append: it keeps that prompt and adds
	// prompt.appendSystemPrompt. An append-only provider declares Replace
	// false and must refuse a profile carrying systemPrompt. The document
	// never accepts the older single boolean.
	SystemPrompt  harness.SystemPromptIntents `json:"systemPrompt"`
	Instructions  bool                        `json:"instructions"`
	Tools         bool                        `json:"tools"`
	Permissions   bool                        `json:"permissions"`
	MCP           bool                        `json:"mcp"`
	Subagents     bool                        `json:"subagents"`
	Resources     ProfileResourceCapabilities `json:"resources"`
	Hooks         *bool                       `json:"hooks,omitzero"`
	Modes         *bool                       `json:"modes,omitzero"`
	RuntimeUpdate bool                        `json:"runtimeUpdate"`
	Validation    bool                        `json:"validation"`
	// Extensions names the profile extension namespaces the provider
	// understands, each once.
	Extensions []string `json:"extensions,omitzero"`
}

// ProfileResourceCapabilities says which profile resource kinds the
// provider mounts. An absent optional flag states nothing.
type ProfileResourceCapabilities struct {
	Files        bool  `json:"files"`
	Instructions bool  `json:"instructions"`
	Tools        *bool `json:"tools,omitzero"`
	Skills       *bool `json:"skills,omitzero"`
	Agents       *bool `json:"agents,omitzero"`
	Commands     *bool `json:"commands,omitzero"`
}

// StreamingCapabilities describes turn streaming. Detach gates
// dispatch(); detach, replay or session continuation gate session().
type StreamingCapabilities struct {
	Live            bool `json:"live"`
	Replay          bool `json:"replay"`
	Detach          bool `json:"detach"`
	TurnIdempotency bool `json:"turnIdempotency"`
}

// SessionCapabilities describes provider sessions. List and Messages are
// informational; no operation is gated on them.
type SessionCapabilities struct {
	Continue bool `json:"continue"`
	List     bool `json:"list"`
	Messages bool `json:"messages"`
}

// RetainedControlCapabilities: every member must be true, and the block
// also requires replay, detach, turn idempotency and session continuation.
type RetainedControlCapabilities struct {
	ExactRunIdentity        bool `json:"exactRunIdentity"`
	ResultIdentity          bool `json:"resultIdentity"`
	EventIdentity           bool `json:"eventIdentity"`
	CancellationIdempotency bool `json:"cancellationIdempotency"`
}

// NativeContinuationCapabilities: both guarantees must be true and
// sessions must continue. AdmissionControl true means continueNative
// reports the exact continued run before terminal output, which needs
// retained control.
type NativeContinuationCapabilities struct {
	AtomicBoundary     bool  `json:"atomicBoundary"`
	RequestIdempotency bool  `json:"requestIdempotency"`
	AdmissionControl   *bool `json:"admissionControl,omitzero"`
}

// ContextTransferCapabilities: every member must be true.
type ContextTransferCapabilities struct {
	FreshSession       bool `json:"freshSession"`
	RequestIdempotency bool `json:"requestIdempotency"`
	Lookup             bool `json:"lookup"`
}

// WorkspaceCapabilities describes workspace access. Read, Write and Exec
// gate the environment's read, write and exec operations; Git, Upload and
// Download are informational. CwdBases, when present, names the cwd bases
// create accepts; absent, the provider states none.
type WorkspaceCapabilities struct {
	Read     bool      `json:"read"`
	Write    bool      `json:"write"`
	Exec     bool      `json:"exec"`
	Git      bool      `json:"git"`
	Upload   bool      `json:"upload"`
	Download bool      `json:"download"`
	CwdBases *CwdBases `json:"cwdBases,omitzero"`
}

// BranchingCapabilities describes workspace branching. Checkpoint and Fork
// gate the legacy operations, which carry no recovery semantics. RetrySafe,
// Lookup and Cleanup declare durable branching and are all or nothing
// (with Checkpoint and Fork); absent counts as false. Confidential: a fork
// can preserve and prove confidentiality requirements.
type BranchingCapabilities struct {
	Checkpoint   bool  `json:"checkpoint"`
	Fork         bool  `json:"fork"`
	Confidential *bool `json:"confidential,omitzero"`
	RetrySafe    *bool `json:"retrySafe,omitzero"`
	Lookup       *bool `json:"lookup,omitzero"`
	Cleanup      *bool `json:"cleanup,omitzero"`
}

// Durable reports whether the document declares durable workspace
// branching (RetrySafe, Lookup and Cleanup all true): the condition under
// which environments expose the durable branching facet.
func (b BranchingCapabilities) Durable() bool {
	return envTrue(b.RetrySafe) && envTrue(b.Lookup) && envTrue(b.Cleanup)
}

// ExactProcessCapabilities lists the egress modes exact-process
// environments support, each once.
type ExactProcessCapabilities struct {
	Egress []EgressMode `json:"egress"`
}

// CreateCapabilities lists the optional create fields create honors. Each
// member is present only when its field is honored, and the block carries
// at least one. A caller must check each field it needs: an absent member
// cannot satisfy it.
type CreateCapabilities struct {
	// Egress lists the egress modes create accepts, each once. A mode not
	// listed is refused, never weakened or widened; absent, create does
	// not read CreateInput.Egress at all.
	Egress []EgressMode `json:"egress,omitzero"`
	// BillingOwner: create carries the billing owner to the platform
	// unchanged (the platform still authorizes the caller).
	BillingOwner *bool `json:"billingOwner,omitzero"`
	// RuntimeAttachments: runtime-owned MCP bindings are applied without
	// editing the authored profile.
	RuntimeAttachments *RuntimeAttachmentCapabilities `json:"runtimeAttachments,omitzero"`
	// WorkspaceCheckpoint: create restores WorkspaceRequest.Checkpoint,
	// even when its source environment is gone.
	WorkspaceCheckpoint *bool `json:"workspaceCheckpoint,omitzero"`
	// WorkspaceSnapshot: create restores WorkspaceRequest.Snapshot. Only a
	// qualified deployed receiver (one that authorizes and verifies the
	// artifacts, enforces archive limits and restores into a fresh owned
	// destination before accepting a turn) declares it.
	WorkspaceSnapshot *bool `json:"workspaceSnapshot,omitzero"`
}

// Accepts reports whether create accepts the egress mode.
func (c *CreateCapabilities) Accepts(mode EgressMode) bool {
	if c == nil {
		return false
	}
	for _, m := range c.Egress {
		if m == mode {
			return true
		}
	}
	return false
}

// RuntimeAttachmentCapabilities declares the runtime attachment kinds
// create applies. MCP must be true: the block is absent otherwise.
type RuntimeAttachmentCapabilities struct {
	MCP bool `json:"mcp"`
}

// ObservationCapabilities flags each surface of the normalized
// environment observation.
type ObservationCapabilities struct {
	Identity       bool `json:"identity"`
	Lifecycle      bool `json:"lifecycle"`
	Endpoint       bool `json:"endpoint"`
	Placement      bool `json:"placement"`
	Resources      bool `json:"resources"`
	ResourceUse    bool `json:"resourceUse"`
	ModelUsage     bool `json:"modelUsage"`
	ComputeBilling bool `json:"computeBilling"`
	AccountUsage   bool `json:"accountUsage"`
}

// InteractiveTerminalCapabilities: Input, Resize and Reattach each need
// Attach.
type InteractiveTerminalCapabilities struct {
	Attach   bool `json:"attach"`
	Input    bool `json:"input"`
	Resize   bool `json:"resize"`
	Reattach bool `json:"reattach"`
}

// InteractiveAgentCapabilities: every operation needs Start; mutations
// (attach, sendPrompt, input, resize, stop) need provider-issued Control
// claims; Reattach, Input and Resize need Attach.
type InteractiveAgentCapabilities struct {
	Start      bool `json:"start"`
	Control    bool `json:"control"`
	Status     bool `json:"status"`
	Attach     bool `json:"attach"`
	Reattach   bool `json:"reattach"`
	SendPrompt bool `json:"sendPrompt"`
	Input      bool `json:"input"`
	Resize     bool `json:"resize"`
	Stop       bool `json:"stop"`
}

func envTrue(b *bool) bool { return b != nil && *b }

// envBools is a strict object of required boolean members.
func envBools(names ...string) *schema.ObjectNode {
	fields := make([]schema.Field, len(names))
	for i, n := range names {
		fields[i] = schema.Req(n, schema.Bool())
	}
	return schema.Object(fields...)
}

var (
	envBool = schema.Bool()

	// ProfileCapabilitiesSchema is the strict AgentProfileCapabilities
	// shape. systemPrompt is the {replace, append} object; a boolean is
	// refused.
	ProfileCapabilitiesSchema = schema.Object(
		schema.Req("namedProfiles", envBool),
		schema.Req("systemPrompt", envBools("replace", "append")),
		schema.Req("instructions", envBool),
		schema.Req("tools", envBool),
		schema.Req("permissions", envBool),
		schema.Req("mcp", envBool),
		schema.Req("subagents", envBool),
		schema.Req("resources", envBools("files", "instructions").Extend(
			schema.Opt("tools", envBool),
			schema.Opt("skills", envBool),
			schema.Opt("agents", envBool),
			schema.Opt("commands", envBool),
		)),
		schema.Opt("hooks", envBool),
		schema.Opt("modes", envBool),
		schema.Req("runtimeUpdate", envBool),
		schema.Req("validation", envBool),
		schema.Opt("extensions", schema.Array(BoundedIdentifier).MaxItems(MaxArrayLength)),
	)

	envEgressModes      = []string{string(EgressOpen), string(EgressStrict), string(EgressBlocked)}
	envExactEgressModes = []string{string(EgressBlocked), string(EgressStrict)}

	// CapabilitiesSchema is the strict AgentEnvironmentCapabilities shape
	// with every cross-field rule.
	CapabilitiesSchema = schema.Object(
		schema.Req("profile", ProfileCapabilitiesSchema),
		schema.Req("streaming", envBools("live", "replay", "detach", "turnIdempotency")),
		schema.Req("sessions", envBools("continue", "list", "messages")),
		schema.Opt("retainedControl", envBools("exactRunIdentity", "resultIdentity", "eventIdentity", "cancellationIdempotency")),
		schema.Opt("nativeContinuation", envBools("atomicBoundary", "requestIdempotency").Extend(schema.Opt("admissionControl", envBool))),
		schema.Opt("contextTransfer", envBools("freshSession", "requestIdempotency", "lookup")),
		schema.Opt("interactions", InteractionCapabilitiesSchema),
		schema.Req("workspace", envBools("read", "write", "exec", "git", "upload", "download").Extend(schema.Opt("cwdBases", CwdBasesSchema))),
		schema.Req("branching", envBools("checkpoint", "fork").Extend(
			schema.Opt("confidential", envBool),
			schema.Opt("retrySafe", envBool),
			schema.Opt("lookup", envBool),
			schema.Opt("cleanup", envBool),
		)),
		schema.Req("placement", envBool),
		schema.Req("usage", envBool),
		schema.Req("confidential", envBool),
		schema.Opt("exactProcess", schema.Object(
			schema.Req("egress", schema.Array(schema.Enum(envExactEgressModes...)).MinItems(1).MaxItems(MaxArrayLength)),
		)),
		schema.Opt("create", schema.Object(
			schema.Opt("egress", schema.Array(schema.Enum(envEgressModes...)).MinItems(1).MaxItems(MaxArrayLength)),
			schema.Opt("billingOwner", envBool),
			schema.Opt("runtimeAttachments", schema.Object(schema.Req("mcp", schema.Literal(canonjson.BoolValue(true))))),
			schema.Opt("workspaceCheckpoint", envBool),
			schema.Opt("workspaceSnapshot", envBool),
		)),
		schema.Opt("observation", envBools("identity", "lifecycle", "endpoint", "placement", "resources",
			"resourceUse", "modelUsage", "computeBilling", "accountUsage")),
		schema.Opt("interactiveTerminal", envBools("attach", "input", "resize", "reattach")),
		schema.Opt("interactiveAgent", envBools("start", "control", "status", "attach", "reattach",
			"sendPrompt", "input", "resize", "stop")),
	).Refine(envCheckCapabilities)
)

// envFlag reads a boolean member at a path of object members; absent is
// false.
func envFlag(v canonjson.Value, path ...string) bool {
	for _, name := range path {
		next, ok := v.Get(name)
		if !ok {
			return false
		}
		v = next
	}
	return v.Kind() == canonjson.Bool && v.Bool()
}

// envUnique reports whether the string items of an array are distinct.
func envUnique(arr canonjson.Value) bool {
	seen := make(map[string]bool, arr.Len())
	for _, item := range arr.Items() {
		if seen[item.Str()] {
			return false
		}
		seen[item.Str()] = true
	}
	return true
}

// envCheckCapabilities holds the document's cross-field rules. It runs
// only on a document whose shape matched, but reads defensively.
func envCheckCapabilities(c *schema.Context, v canonjson.Value) {
	has := func(name string) bool { _, ok := v.Get(name); return ok }
	anyOf := func(block string, names ...string) bool {
		for _, n := range names {
			if envFlag(v, block, n) {
				return true
			}
		}
		return false
	}
	allOf := func(block string, names ...string) bool {
		for _, n := range names {
			if !envFlag(v, block, n) {
				return false
			}
		}
		return true
	}

	// 1. Retained control is all or nothing, with the streaming and
	// session guarantees it rests on.
	if has("retainedControl") && !(allOf("retainedControl", "exactRunIdentity", "resultIdentity", "eventIdentity", "cancellationIdempotency") &&
		allOf("streaming", "replay", "detach", "turnIdempotency") && envFlag(v, "sessions", "continue")) {
		c.Custom("retained control needs exact run, result, event and cancellation identity together with replay, detach, turn idempotency and session continuation", "retainedControl")
	}
	// 2. Native continuation needs both guarantees and session
	// continuation; early admission needs retained control.
	if has("nativeContinuation") && !(allOf("nativeContinuation", "atomicBoundary", "requestIdempotency") && envFlag(v, "sessions", "continue")) {
		c.Custom("native continuation needs atomic boundary admission, request idempotency and session continuation together", "nativeContinuation")
	}
	if envFlag(v, "nativeContinuation", "admissionControl") && !has("retainedControl") {
		c.Custom("native continuation admission control needs retained control", "nativeContinuation", "admissionControl")
	}
	// 3. Context transfer is all or nothing.
	if has("contextTransfer") && !allOf("contextTransfer", "freshSession", "requestIdempotency", "lookup") {
		c.Custom("context transfer needs fresh-session admission, request idempotency and lookup together", "contextTransfer")
	}
	// 4. Durable branching is all or nothing, on top of checkpoint and
	// fork.
	if anyOf("branching", "retrySafe", "lookup", "cleanup") &&
		!allOf("branching", "retrySafe", "lookup", "cleanup", "checkpoint", "fork") {
		c.Custom("durable branching needs checkpoint, fork, retrySafe, lookup and cleanup together", "branching")
	}
	// 5. Egress lists name each mode once; a create block states at least
	// one honored field.
	if ep, ok := v.Get("exactProcess"); ok {
		if egress, ok := ep.Get("egress"); ok && !envUnique(egress) {
			c.Custom("exact process egress modes must be distinct", "exactProcess", "egress")
		}
	}
	if create, ok := v.Get("create"); ok {
		if create.Kind() == canonjson.Object && create.Len() == 0 {
			c.Custom("a create capability block must state at least one honored field", "create")
		}
		if egress, ok := create.Get("egress"); ok && !envUnique(egress) {
			c.Custom("create egress modes must be distinct", "create", "egress")
		}
	}
	// 6. Terminal operations need attach.
	if has("interactiveTerminal") && anyOf("interactiveTerminal", "input", "resize", "reattach") && !envFlag(v, "interactiveTerminal", "attach") {
		c.Custom("interactive terminal input, resize and reattach each need attach", "interactiveTerminal")
	}
	// 7. Interactive agent dependencies.
	if has("interactiveAgent") {
		if anyOf("interactiveAgent", "status", "attach", "reattach", "sendPrompt", "input", "resize", "stop") && !envFlag(v, "interactiveAgent", "start") {
			c.Custom("every interactive agent operation needs start", "interactiveAgent")
		}
		if anyOf("interactiveAgent", "attach", "sendPrompt", "input", "resize", "stop") && !envFlag(v, "interactiveAgent", "control") {
			c.Custom("interactive agent mutations need provider-issued control claims", "interactiveAgent", "control")
		}
		if anyOf("interactiveAgent", "reattach", "input", "resize") && !envFlag(v, "interactiveAgent", "attach") {
			c.Custom("interactive agent reattach, input and resize each need attach", "interactiveAgent")
		}
	}
	// 8. Profile extension namespaces are distinct.
	if p, ok := v.Get("profile"); ok {
		if ext, ok := p.Get("extensions"); ok && !envUnique(ext) {
			c.Custom("profile extension namespaces must be distinct", "profile", "extensions")
		}
	}
	// 9. The interactions block carries its own rules
	// (InteractionCapabilitiesSchema).
}

// ParseCapabilities decodes and validates a capability document.
func ParseCapabilities(data []byte) (*Capabilities, error) {
	return Parse[Capabilities](KindEnvironmentCapabilities, CapabilitiesSchema, data)
}

// Validate checks the document against the strict schema and every
// cross-field rule, reporting refusals as *schema.Error.
func (c *Capabilities) Validate() error {
	_, err := Validate(KindEnvironmentCapabilities, CapabilitiesSchema, c)
	return err
}

// ExecOnlyCapabilities is the document of a provider whose only surface
// is a workspace: it runs commands and moves files in a sandbox, owns no
// agent profile (only file resources), serves no live or replayable
// stream, keeps no session and branches nothing. Everything outside the
// caller's workspace block and placement is false.
func ExecOnlyCapabilities(workspace WorkspaceCapabilities) Capabilities {
	no := func() *bool { b := false; return &b }
	if workspace.CwdBases != nil {
		bases := *workspace.CwdBases
		workspace.CwdBases = &bases
	}
	return Capabilities{
		Profile: ProfileCapabilities{
			Resources: ProfileResourceCapabilities{Files: true, Tools: no(), Skills: no(), Agents: no(), Commands: no()},
			Hooks:     no(),
			Modes:     no(),
		},
		Workspace: workspace,
		Placement: true,
	}
}
