package contract

import (
	"strings"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/schema"
)

// Kind names of environment observation.
const (
	KindSafeEndpoint           = "SafeEndpoint"
	KindEnvironmentObservation = "AgentEnvironmentObservation"
)

// Observation states. A value exists only on known and stale, so a
// missing measurement is always visible as unavailable, redacted or
// unknown and can never be read as a measured zero.
const (
	ObservationKnown       = "known"
	ObservationStale       = "stale"
	ObservationUnavailable = "unavailable"
	ObservationRedacted    = "redacted"
	ObservationUnknown     = "unknown"
)

// Observation origins: how a known or stale value was obtained.
const (
	OriginMeasured  = "measured"
	OriginReported  = "reported"
	OriginEstimated = "estimated"
)

// ObservationProvenance says how and when a known or stale value was
// obtained, and optionally from which source.
type ObservationProvenance struct {
	Origin     string  `json:"origin"`
	ObservedAt string  `json:"observedAt"`
	Source     *string `json:"source,omitzero"`
}

// Observation is one freshness-tagged value. State is always present;
// Value and Provenance are present exactly when State is known or stale;
// Reason is present for stale, unavailable and redacted. Read the value
// with Get, which refuses every state that carries none.
type Observation[T any] struct {
	State      string                 `json:"state"`
	Value      *T                     `json:"value,omitzero"`
	Provenance *ObservationProvenance `json:"provenance,omitzero"`
	Reason     *string                `json:"reason,omitzero"`
}

// Get returns the observed value and true when the observation is known
// or stale and carries a value; otherwise the zero T and false. An
// observation without a value is never a zero measurement.
func (o *Observation[T]) Get() (T, bool) {
	var zero T
	if o == nil || o.Value == nil || o.State != ObservationKnown && o.State != ObservationStale {
		return zero, false
	}
	return *o.Value, true
}

// ProviderIdentity holds the safe identifiers of an environment and its
// provider session.
type ProviderIdentity struct {
	Provider      string  `json:"provider"`
	EnvironmentID string  `json:"environmentId"`
	SessionID     *string `json:"sessionId,omitzero"`
	Backend       *string `json:"backend,omitzero"`
}

// EnvironmentLifecycle is the lifecycle status of an environment with
// what is known of its cleanup, continuity and persistence.
type EnvironmentLifecycle struct {
	Status      string                           `json:"status"`
	Cleanup     *EnvironmentLifecycleCleanup     `json:"cleanup,omitzero"`
	Continuity  *EnvironmentLifecycleContinuity  `json:"continuity,omitzero"`
	Persistence *EnvironmentLifecyclePersistence `json:"persistence,omitzero"`
}

// EnvironmentLifecycleCleanup describes how and when an environment is
// cleaned up, and whether the cleanup was confirmed.
type EnvironmentLifecycleCleanup struct {
	Policy      *string `json:"policy,omitzero"`
	ScheduledAt *string `json:"scheduledAt,omitzero"`
	Confirmed   *bool   `json:"confirmed,omitzero"`
}

// EnvironmentLifecycleContinuity says whether an environment's session can
// be resumed, and how.
type EnvironmentLifecycleContinuity struct {
	Resumable bool    `json:"resumable"`
	Mode      *string `json:"mode,omitzero"`
}

// EnvironmentLifecyclePersistence says whether an environment's state
// outlives it, and at what scope.
type EnvironmentLifecyclePersistence struct {
	Durable bool    `json:"durable"`
	Scope   *string `json:"scope,omitzero"`
}

// SafeEndpoint is a credential-free network location: there is no field
// for a user, password or token, the host carries no scheme, path or
// userinfo and the scheme is a bare protocol name.
type SafeEndpoint struct {
	Scheme *string `json:"scheme,omitzero"`
	Host   string  `json:"host"`
	Port   *int64  `json:"port,omitzero"`
	Region *string `json:"region,omitzero"`
}

// ResourceProfile is a requested or effective compute shape.
type ResourceProfile struct {
	CPU         *float64     `json:"cpu,omitzero"`
	MemoryMB    *int64       `json:"memoryMb,omitzero"`
	DiskMB      *int64       `json:"diskMb,omitzero"`
	Accelerator *Accelerator `json:"accelerator,omitzero"`
}

// Accelerator is the accelerator part of a ResourceProfile.
type Accelerator struct {
	Kind     string `json:"kind"`
	Count    int64  `json:"count"`
	MemoryMB *int64 `json:"memoryMb,omitzero"`
}

// ResourceUseSample is a point-in-time or peak resource sample; a
// dimension that was not sampled is absent, not zero.
type ResourceUseSample struct {
	CPU                 *float64 `json:"cpu,omitzero"`
	MemoryMB            *float64 `json:"memoryMb,omitzero"`
	DiskMB              *float64 `json:"diskMb,omitzero"`
	AcceleratorMemoryMB *float64 `json:"acceleratorMemoryMb,omitzero"`
}

// PlacementDescriptor says where an environment was requested or verified
// to run.
type PlacementDescriptor struct {
	Kind      string  `json:"kind"`
	SandboxID *string `json:"sandboxId,omitzero"`
	FleetID   *string `json:"fleetId,omitzero"`
	MachineID *string `json:"machineId,omitzero"`
	Region    *string `json:"region,omitzero"`
}

// ComputeBilling is the provider compute cost charged for one environment.
type ComputeBilling struct {
	Amount   float64 `json:"amount"`
	Currency string  `json:"currency"`
}

// AccountUsage is what is known of the account: plan, credits, quota and
// billing period, each freshness-tagged.
type AccountUsage struct {
	Plan    *Observation[string]         `json:"plan,omitzero"`
	Credits *Observation[AccountCredits] `json:"credits,omitzero"`
	Quota   *Observation[AccountQuota]   `json:"quota,omitzero"`
	Period  *Observation[AccountPeriod]  `json:"period,omitzero"`
}

// AccountCredits is the remaining credit balance of an account.
type AccountCredits struct {
	Remaining float64 `json:"remaining"`
	Unit      string  `json:"unit"`
}

// AccountQuota is an account quota with its use.
type AccountQuota struct {
	Limit     float64 `json:"limit"`
	Used      float64 `json:"used"`
	Remaining float64 `json:"remaining"`
	Unit      string  `json:"unit"`
}

// AccountPeriod is an account's billing period.
type AccountPeriod struct {
	Start string `json:"start"`
	End   string `json:"end"`
}

// ObservedPlacement pairs the requested placement with the observed one.
type ObservedPlacement struct {
	Requested *PlacementDescriptor              `json:"requested,omitzero"`
	Verified  *Observation[PlacementDescriptor] `json:"verified,omitzero"`
}

// ObservedResources pairs the requested compute shape with the observed
// effective one.
type ObservedResources struct {
	Requested *ResourceProfile              `json:"requested,omitzero"`
	Effective *Observation[ResourceProfile] `json:"effective,omitzero"`
}

// ObservedResourceUse holds current and peak resource samples.
type ObservedResourceUse struct {
	Current *Observation[ResourceUseSample] `json:"current,omitzero"`
	Peak    *Observation[ResourceUseSample] `json:"peak,omitzero"`
}

// EnvironmentObservation is an optional normalized observation of one
// execution environment. Subject is the always-known identity that binds a
// live observation to its replay; every other surface is optional and
// freshness-tagged, so a provider that reports nothing still validates and
// no absent value is a measured zero.
type EnvironmentObservation struct {
	Subject        ProviderIdentity                   `json:"subject"`
	CapturedAt     string                             `json:"capturedAt"`
	Identity       *Observation[ProviderIdentity]     `json:"identity,omitzero"`
	Lifecycle      *Observation[EnvironmentLifecycle] `json:"lifecycle,omitzero"`
	Endpoint       *Observation[SafeEndpoint]         `json:"endpoint,omitzero"`
	Placement      *ObservedPlacement                 `json:"placement,omitzero"`
	Resources      *ObservedResources                 `json:"resources,omitzero"`
	ResourceUse    *ObservedResourceUse               `json:"resourceUse,omitzero"`
	ModelUsage     *Observation[ModelUsage]           `json:"modelUsage,omitzero"`
	ComputeBilling *Observation[ComputeBilling]       `json:"computeBilling,omitzero"`
	AccountUsage   *AccountUsage                      `json:"accountUsage,omitzero"`
}

var (
	// obsTimestamp is an ISO UTC timestamp of at most 64 units.
	obsTimestamp = schema.String(schema.ISODateTime, schema.MaxLen(64))

	obsNonNegative = schema.Number(schema.NonNegative)

	obsReason = schema.String(schema.MaxLen(MaxStringLength), schema.MinLen(1))

	// ObservationProvenanceSchema is the strict ObservationProvenance
	// shape.
	ObservationProvenanceSchema = schema.Object(
		schema.Req("origin", schema.Enum(OriginMeasured, OriginReported, OriginEstimated)),
		schema.Req("observedAt", obsTimestamp),
		schema.Opt("source", BoundedIdentifier),
	)

	// ProviderIdentitySchema is the strict ProviderIdentity shape.
	ProviderIdentitySchema = schema.Object(
		schema.Req("provider", BoundedIdentifier),
		schema.Req("environmentId", BoundedIdentifier),
		schema.Opt("sessionId", BoundedIdentifier),
		schema.Opt("backend", BoundedIdentifier),
	)

	// EnvironmentLifecycleSchema is the strict EnvironmentLifecycle shape.
	EnvironmentLifecycleSchema = schema.Object(
		schema.Req("status", schema.Enum("pending", "provisioning", "running", "stopped", "failed", "expired", "unknown")),
		schema.Opt("cleanup", schema.Object(
			schema.Opt("policy", schema.Enum("manual", "idle", "scheduled", "on-exit")),
			schema.Opt("scheduledAt", obsTimestamp),
			schema.Opt("confirmed", schema.Bool()),
		)),
		schema.Opt("continuity", schema.Object(
			schema.Req("resumable", schema.Bool()),
			schema.Opt("mode", schema.Enum("native", "replayed", "none")),
		)),
		schema.Opt("persistence", schema.Object(
			schema.Req("durable", schema.Bool()),
			schema.Opt("scope", schema.Enum("ephemeral", "session", "durable")),
		)),
	)

	// SafeEndpointSchema is the strict SafeEndpoint shape with its
	// credential rules.
	SafeEndpointSchema = schema.Object(
		schema.Opt("scheme", BoundedIdentifier),
		schema.Req("host", BoundedIdentifier),
		schema.Opt("port", schema.Number(schema.Int, schema.Min(1), schema.Max(65535))),
		schema.Opt("region", BoundedIdentifier),
	).Refine(obsCheckEndpoint)

	// ResourceProfileSchema is the strict ResourceProfile shape.
	ResourceProfileSchema = schema.Object(
		schema.Opt("cpu", schema.Number(schema.Positive)),
		schema.Opt("memoryMb", schema.Number(schema.Int, schema.Positive)),
		schema.Opt("diskMb", schema.Number(schema.Int, schema.Positive)),
		schema.Opt("accelerator", schema.Object(
			schema.Req("kind", BoundedIdentifier),
			schema.Req("count", schema.Number(schema.Int, schema.Positive)),
			schema.Opt("memoryMb", schema.Number(schema.Int, schema.Positive)),
		)),
	)

	// ResourceUseSampleSchema is the strict ResourceUseSample shape.
	ResourceUseSampleSchema = schema.Object(
		schema.Opt("cpu", obsNonNegative),
		schema.Opt("memoryMb", obsNonNegative),
		schema.Opt("diskMb", obsNonNegative),
		schema.Opt("acceleratorMemoryMb", obsNonNegative),
	)

	// PlacementDescriptorSchema is the strict PlacementDescriptor shape.
	PlacementDescriptorSchema = schema.Object(
		schema.Req("kind", schema.Enum("local", "sandbox", "fleet", "provider")),
		schema.Opt("sandboxId", BoundedIdentifier),
		schema.Opt("fleetId", BoundedIdentifier),
		schema.Opt("machineId", BoundedIdentifier),
		schema.Opt("region", BoundedIdentifier),
	)

	// ComputeBillingSchema is the strict ComputeBilling shape.
	ComputeBillingSchema = schema.Object(
		schema.Req("amount", obsNonNegative),
		schema.Req("currency", BoundedIdentifier),
	)

	// AccountUsageSchema is the strict AccountUsage shape.
	AccountUsageSchema = schema.Object(
		schema.Opt("plan", ObservationOf(BoundedIdentifier)),
		schema.Opt("credits", ObservationOf(schema.Object(
			schema.Req("remaining", obsNonNegative),
			schema.Req("unit", BoundedIdentifier),
		))),
		schema.Opt("quota", ObservationOf(schema.Object(
			schema.Req("limit", obsNonNegative),
			schema.Req("used", obsNonNegative),
			schema.Req("remaining", obsNonNegative),
			schema.Req("unit", BoundedIdentifier),
		))),
		schema.Opt("period", ObservationOf(schema.Object(
			schema.Req("start", obsTimestamp),
			schema.Req("end", obsTimestamp),
		))),
	)

	// EnvironmentObservationSchema is the strict AgentEnvironmentObservation
	// shape.
	EnvironmentObservationSchema = schema.Object(
		schema.Req("subject", ProviderIdentitySchema),
		schema.Req("capturedAt", obsTimestamp),
		schema.Opt("identity", ObservationOf(ProviderIdentitySchema)),
		schema.Opt("lifecycle", ObservationOf(EnvironmentLifecycleSchema)),
		schema.Opt("endpoint", ObservationOf(SafeEndpointSchema)),
		schema.Opt("placement", schema.Object(
			schema.Opt("requested", PlacementDescriptorSchema),
			schema.Opt("verified", ObservationOf(PlacementDescriptorSchema)),
		)),
		schema.Opt("resources", schema.Object(
			schema.Opt("requested", ResourceProfileSchema),
			schema.Opt("effective", ObservationOf(ResourceProfileSchema)),
		)),
		schema.Opt("resourceUse", schema.Object(
			schema.Opt("current", ObservationOf(ResourceUseSampleSchema)),
			schema.Opt("peak", ObservationOf(ResourceUseSampleSchema)),
		)),
		schema.Opt("modelUsage", ObservationOf(ModelUsageSchema)),
		schema.Opt("computeBilling", ObservationOf(ComputeBillingSchema)),
		schema.Opt("accountUsage", AccountUsageSchema),
	)
)

// ObservationOf returns the freshness-tagged observation shape around
// value: selected by state, with value and provenance only on known and
// stale and a non-empty reason on stale, unavailable and redacted.
func ObservationOf(value schema.Node) schema.Node {
	state := func(s string) schema.Field { return schema.Req("state", schema.LiteralString(s)) }
	return schema.Discriminated("state", map[string]schema.Node{
		ObservationKnown: schema.Object(state(ObservationKnown),
			schema.Req("value", value),
			schema.Req("provenance", ObservationProvenanceSchema)),
		ObservationStale: schema.Object(state(ObservationStale),
			schema.Req("value", value),
			schema.Req("provenance", ObservationProvenanceSchema),
			schema.Req("reason", obsReason)),
		ObservationUnavailable: schema.Object(state(ObservationUnavailable), schema.Req("reason", obsReason)),
		ObservationRedacted:    schema.Object(state(ObservationRedacted), schema.Req("reason", obsReason)),
		ObservationUnknown:     schema.Object(state(ObservationUnknown)),
	})
}

// obsCheckEndpoint refuses a host that carries userinfo, a scheme or a
// path, and a scheme that is not a bare protocol name.
func obsCheckEndpoint(c *schema.Context, v canonjson.Value) {
	if host, ok := v.Get("host"); ok && obsHasAnyOrSpace(host.Str(), "@/") {
		c.Custom("an endpoint host must not carry credentials, a scheme or a path", "host")
	}
	if scheme, ok := v.Get("scheme"); ok && obsHasAnyOrSpace(scheme.Str(), "@:/") {
		c.Custom("an endpoint scheme must be a bare protocol name", "scheme")
	}
}

// obsHasAnyOrSpace reports whether s contains one of the ASCII bytes in
// chars or a JavaScript whitespace character.
func obsHasAnyOrSpace(s, chars string) bool {
	return strings.ContainsAny(s, chars) || canonjson.ContainsJSWhitespace(s)
}

// ParseSafeEndpoint decodes and validates an endpoint.
func ParseSafeEndpoint(data []byte) (*SafeEndpoint, error) {
	return Parse[SafeEndpoint](KindSafeEndpoint, SafeEndpointSchema, data)
}

// ParseEnvironmentObservation decodes and validates an environment
// observation.
func ParseEnvironmentObservation(data []byte) (*EnvironmentObservation, error) {
	return Parse[EnvironmentObservation](KindEnvironmentObservation, EnvironmentObservationSchema, data)
}

// EnvironmentObservationIdentityMatches reports whether a live observation
// and its replay name the same environment: both valid, the same subject,
// and the same observed identity (the same state and, when it carries a
// value, the same identifiers and provenance source). Capture and
// observation times may differ; identifiers may not.
func EnvironmentObservationIdentityMatches(live, replay *EnvironmentObservation) bool {
	if live == nil || replay == nil {
		return false
	}
	if _, err := Validate(KindEnvironmentObservation, EnvironmentObservationSchema, live); err != nil {
		return false
	}
	if _, err := Validate(KindEnvironmentObservation, EnvironmentObservationSchema, replay); err != nil {
		return false
	}
	return obsSameIdentity(live.Subject, replay.Subject) && obsSameObservedIdentity(live.Identity, replay.Identity)
}

func obsSameIdentity(a, b ProviderIdentity) bool {
	return a.Provider == b.Provider && a.EnvironmentID == b.EnvironmentID &&
		obsSameOptional(a.SessionID, b.SessionID) && obsSameOptional(a.Backend, b.Backend)
}

func obsSameOptional(a, b *string) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

func obsSameObservedIdentity(a, b *Observation[ProviderIdentity]) bool {
	if a == nil || b == nil {
		return a == b
	}
	if a.State != b.State {
		return false
	}
	if a.Value == nil || b.Value == nil {
		return a.Value == b.Value
	}
	var sa, sb *string
	if a.Provenance != nil {
		sa = a.Provenance.Source
	}
	if b.Provenance != nil {
		sb = b.Provenance.Source
	}
	return obsSameIdentity(*a.Value, *b.Value) && obsSameOptional(sa, sb)
}
