package retained

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/store"
)

// Kind is the run-store kind of a retained run's record.
const Kind = "retained"

// AdmissionKind names one admission record.
type AdmissionKind string

// The admission records, in the order they become durable.
const (
	AdmissionIntent      AdmissionKind = "intent"
	AdmissionEnvironment AdmissionKind = "environment"
	AdmissionDispatched  AdmissionKind = "dispatched"
)

// Identity is a retained run's session and execution ids. Omitted, it is
// derived from (idempotency key, turn id) by DeriveIdentity.
type Identity struct {
	SessionID   string `json:"sessionId"`
	ExecutionID string `json:"executionId"`
}

// Intent is the first admission record, durable before the environment is
// created: who asked for what. It holds ids and digests only, never the
// prompt, the profile or a secret.
type Intent struct {
	Provider       string `json:"provider"`
	IdempotencyKey string `json:"idempotencyKey"`
	TurnID         string `json:"turnId"`
	SessionID      string `json:"sessionId"`
	ExecutionID    string `json:"executionId"`
	// RunID is the run-store record id of the retained run.
	RunID string `json:"runId"`
	// ExistingEnvironmentID names the environment the run was asked to
	// start in (StartRetainedRunInEnvironment); nil when it creates one.
	ExistingEnvironmentID *string `json:"existingEnvironmentId,omitzero"`
	// RequestedProfileDigest is the digest of the requested profile
	// reference; nil when the request names none.
	RequestedProfileDigest *string `json:"requestedProfileDigest,omitzero"`
	// TurnDigest is the digest of the turn as the caller gave it (without
	// its detach flag); RecoverRetainedRun re-dispatches only a turn with
	// this digest.
	TurnDigest string `json:"turnDigest"`
	// CredentialStage is the seat stage whose credential request the
	// turn carried (RG-07); nil when it carried none. The request itself
	// names an account and is never recorded: a recovery that
	// re-dispatches the turn rebuilds it from the profile's seat
	// (RecoverOptions.Profile) or is given it, and a request for another
	// stage is refused.
	CredentialStage *int `json:"credentialStage,omitzero"`
	// CredentialDigest is the keyed digest of that credential request
	// (HMAC-SHA256 under the caller's CredentialKey over the request
	// without its occasion, selector included), never the request or
	// its selector: a recovery that re-sends the request — the caller's,
	// or the one rebuilt from the profile as it reads now — must digest
	// to it, so that a stage whose account selector changed since the
	// admission is refused (a *CredentialChangedError) rather than sent
	// under another account (RG-12). Nil when the turn carried no
	// request, when the caller gave no key, and in every record made
	// before digests were: such a run is recovered as before, its
	// request checked for its stage only.
	CredentialDigest *string `json:"credentialDigest,omitzero"`
	// CredentialKeyID names the key CredentialDigest was made under
	// (credentialKeyID: a keyed digest of a fixed text, which tells
	// nothing of the key or the account): a recovery given another key
	// is refused as such (*CredentialKeyError), not taken for a changed
	// account. Nil wherever CredentialDigest is, and in records made
	// before key ids were.
	CredentialKeyID *string `json:"credentialKeyId,omitzero"`
	// Stage is the seat stage of a seated profile the run runs
	// (StartOptions.Stage): its environment was created with that
	// stage's projection, and a recovery re-sending its create projects
	// the same stage. Nil when the caller named none.
	Stage *int `json:"stage,omitzero"`
	// NativeContinuation, when set, says the run is a native continuation
	// of another retained run (Run.ContinueNativeRetained): its TurnID is
	// "native:<operation id>", its TurnDigest the continuation turn's,
	// and its ExecutionID empty — the provider names the continued
	// execution when it admits it (DispatchedRecord.ControlRef).
	NativeContinuation *NativeContinuationIntent `json:"nativeContinuation,omitzero"`
	// RequestDigest binds everything above and the environment request: a
	// start whose request differs is refused (a *MismatchError).
	RequestDigest string `json:"requestDigest"`
}

// NativeContinuationIntent names the continuation a retained run's
// intent admits: the run it continues and the persisted request.
type NativeContinuationIntent struct {
	// Continues is the run-store record id of the continued run.
	Continues string `json:"continues"`
	// OperationID and RequestDigest are the continuation request's.
	OperationID   string `json:"operationId"`
	RequestDigest string `json:"requestDigest"`
}

// EnvironmentRecord is the second admission record, durable after the
// environment exists and before the turn is dispatched.
type EnvironmentRecord struct {
	Provider       string `json:"provider"`
	EnvironmentID  string `json:"environmentId"`
	IdempotencyKey string `json:"idempotencyKey"`
	TurnID         string `json:"turnId"`
	SessionID      string `json:"sessionId"`
	ExecutionID    string `json:"executionId"`
}

// DispatchedRecord is the third admission record, durable after the
// provider confirmed the dispatched run's exact control reference.
type DispatchedRecord struct {
	ControlRef     contract.ExactRunControlRef `json:"controlRef"`
	IdempotencyKey string                      `json:"idempotencyKey"`
	TurnID         string                      `json:"turnId"`
}

// NativeRecord binds the provider's own conversation identity of a
// retained run to its execution (NSO-02): recorded once the provider's
// session reports it (contract.NativeSessionReporter), so a process that
// died still leaves it named. Ids only, never a secret.
type NativeRecord struct {
	ExecutionID     string `json:"executionId"`
	Provider        string `json:"provider"`
	NativeSessionID string `json:"nativeSessionId"`
}

// Admission is one durable admission record as the OnAdmission hook sees
// it: Kind names which of the three fields is set.
type Admission struct {
	Kind        AdmissionKind
	Intent      *Intent
	Environment *EnvironmentRecord
	Dispatched  *DispatchedRecord
}

// AdmissionHook is awaited after each admission record is durable; an
// error stops the start (provider state already made is kept for
// recovery). After a restart the same records may be delivered again, so
// a hook must be idempotent.
type AdmissionHook func(ctx context.Context, a Admission) error

// Record is a retained run as the run store holds it.
type Record struct {
	// ID is the run-store record id (Intent.RunID).
	ID string
	// Status is the record's status: pending until dispatched, running
	// after, and the run's terminal status once a handle observed it.
	Status      store.Status
	CreatedAt   time.Time
	UpdatedAt   time.Time
	Intent      Intent
	Environment *EnvironmentRecord
	Dispatched  *DispatchedRecord
	// Native is the run's native session, once the provider reported it.
	Native *NativeRecord
	// CreateRefused is the provider's definite refusal of the last
	// start's create, while no environment was admitted.
	CreateRefused *CreateRefusedRecord
	// Seat links the run into the seat chain of a seated retained run
	// (StartSeated); nil for a run started alone.
	Seat *SeatLink
}

// ControlRef returns the record's claim ticket, or ErrNotDispatched.
func (r *Record) ControlRef() (ControlRef, error) {
	if r.Dispatched == nil {
		return ControlRef{}, fmt.Errorf("%w: %s", ErrNotDispatched, r.ID)
	}
	return ControlRef{Record: r.ID, Run: r.Dispatched.ControlRef}, nil
}

// ControlRef is the plain-data claim ticket of a retained run: the
// run-store record that admitted it and the provider's exact control
// reference. Any process with the same store and provider re-attaches
// with it (ReconnectRetainedRun).
type ControlRef struct {
	Record string                      `json:"record"`
	Run    contract.ExactRunControlRef `json:"run"`
}

// document is the run record's document.
type document struct {
	Intent      Intent             `json:"intent"`
	Environment *EnvironmentRecord `json:"environment,omitzero"`
	Dispatched  *DispatchedRecord  `json:"dispatched,omitzero"`
	Native      *NativeRecord      `json:"native,omitzero"`
	// CreateRefused is the provider's definite refusal of the run's
	// create (quota) by the last start; cleared before every new create.
	CreateRefused *CreateRefusedRecord `json:"createRefused,omitzero"`
	Seat          *SeatLink            `json:"seat,omitzero"`
}

// CreateRefusedRecord is a provider's definite refusal of a retained
// run's environment create: nothing was created under the run's key, so
// a recovery answers NotFound (start again) rather than Unverifiable.
type CreateRefusedRecord struct {
	// Reason is the provider's refusal, as it said it.
	Reason string `json:"reason"`
	// RetryAfterMS is when the provider said the create may succeed,
	// in milliseconds from At; absent when it did not say.
	RetryAfterMS *int64 `json:"retryAfterMs,omitzero"`
	// At is when the refusal was recorded (RFC 3339).
	At string `json:"at"`
}

func (d *document) value() (canonjson.Value, error) { return canonjson.ToValue(d) }

func decodeDocument(r store.Run) (*document, error) {
	if r.Kind != Kind {
		return nil, fmt.Errorf("%w: run %s is a %q run", ErrNoRecord, r.ID, r.Kind)
	}
	var d document
	if err := canonjson.FromValue(r.Doc, &d); err != nil {
		return nil, fmt.Errorf("retained: run %s: malformed admission document: %w", r.ID, err)
	}
	return &d, nil
}

// Load reads a retained run's admission records from the run store. A
// store that fails or does not answer within 30 s is a
// *kernel.StoreError (Op "read").
func Load(ctx context.Context, s store.Store, id string) (*Record, error) {
	cctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	r, err := s.GetRun(cctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("%w: %s", ErrNoRecord, id)
	}
	if err != nil {
		return nil, storeFailure(ctx, id, "read", err)
	}
	return FromRun(r)
}

// FromRun decodes a run-store record of kind Kind.
func FromRun(r store.Run) (*Record, error) {
	d, err := decodeDocument(r)
	if err != nil {
		return nil, err
	}
	return &Record{ID: r.ID, Status: r.Status, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
		Intent: d.Intent, Environment: d.Environment, Dispatched: d.Dispatched, Native: d.Native, CreateRefused: d.CreateRefused, Seat: d.Seat}, nil
}

// identityPurpose separates the derivations of one (key, turn) pair.
const identityPurpose = "agentrt.retained.identity/v1"

// DeriveIdentity returns the session and execution ids, and the run-store
// record id, every process derives from (idempotencyKey, turnID): the
// canonical digest of the pair, so no separator or encoding can make two
// pairs collide.
func DeriveIdentity(idempotencyKey, turnID string) (Identity, string, error) {
	if idempotencyKey == "" || turnID == "" {
		return Identity{}, "", fmt.Errorf("%w: deriving an identity needs an idempotency key and a turn id", ErrInvalidOptions)
	}
	d, err := canonjson.Digest(canonjson.ObjectValue([]canonjson.Member{
		{Name: "idempotencyKey", Value: canonjson.StringValue(idempotencyKey)},
		{Name: "purpose", Value: canonjson.StringValue(identityPurpose)},
		{Name: "turnId", Value: canonjson.StringValue(turnID)},
	}))
	if err != nil {
		return Identity{}, "", fmt.Errorf("%w: %w", ErrInvalidOptions, err)
	}
	h := strings.TrimPrefix(d, canonjson.DigestPrefix)[:32]
	return Identity{SessionID: "rs-" + h, ExecutionID: "rx-" + h}, "retained-" + h, nil
}

// firstDifference names the first member where two canonical values
// differ, for a mismatch report; "" when none is found.
func firstDifference(a, b any) (field, want, got string) {
	va, err1 := canonjson.ToValue(a)
	vb, err2 := canonjson.ToValue(b)
	if err1 != nil || err2 != nil || va.Kind() != canonjson.Object || vb.Kind() != canonjson.Object {
		return "", "", ""
	}
	for _, m := range va.Members() {
		other, ok := vb.Get(m.Name)
		if !ok || !canonjson.Equal(m.Value, other) {
			return m.Name, string(canonjson.Marshal(m.Value)), string(canonjson.Marshal(other))
		}
	}
	for _, m := range vb.Members() {
		if _, ok := va.Get(m.Name); !ok {
			return m.Name, "", string(canonjson.Marshal(m.Value))
		}
	}
	return "", "", ""
}

// mismatch builds the *MismatchError of two values that must be equal.
func mismatch(what string, want, got any) error {
	f, w, g := firstDifference(want, got)
	return &MismatchError{What: what, Field: f, Want: w, Got: g}
}
