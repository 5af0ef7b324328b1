package retained

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"time"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/store"
)

// RetainedKeyMetadata is the environment metadata member that carries the
// idempotency key of the retained run that created the environment;
// StartRetainedRunInEnvironment verifies it before reusing an environment.
const RetainedKeyMetadata = "agentrtRetainedKey"

// StartOptions configure StartRetainedRun.
type StartOptions struct {
	// Provider runs the job. It must declare retained control (with
	// replay, detach, turn idempotency and session continuation) and find
	// environments by id (contract.EnvironmentGetter).
	Provider contract.Provider
	// Store holds the admission records.
	Store store.Store
	// Environment is the create input; its IdempotencyKey is required.
	Environment *contract.CreateInput
	// Turn is the turn to dispatch; its TurnID is required. Its session
	// and execution ids, when set, must equal Identity's.
	Turn contract.TurnInput
	// Identity fixes the session and execution ids; nil derives them from
	// (idempotency key, turn id) (DeriveIdentity).
	Identity *Identity
	// Intent, when set, is a previously persisted intent to replay: the
	// start is refused unless it recomputes to exactly this intent.
	Intent *Intent
	// Stage, when set, is the seat stage of a seated profile the run
	// runs: Environment.Profile is that stage's projection (the caller
	// projects it; see kernel.ProjectStage), and the intent records the
	// stage (Intent.Stage). A credential request for another stage is
	// refused.
	Stage *int
	// OnAdmission is required: it is awaited after each admission record
	// is durable.
	OnAdmission AdmissionHook
	// Seat, when set, links the run into a seat chain (StartSeated): it
	// is recorded with the intent, outside the request digest.
	Seat *SeatLink
	// CredentialKey, when set, keys the digest of the turn's credential
	// request that the intent records (Intent.CredentialDigest; at least
	// MinCredentialKeySize bytes): a recovery given the same key refuses
	// a request that asks for another account (RG-12). Keep it secret
	// from readers of the store, and the same in every process that
	// starts or recovers the run: a start again with another key is a
	// *MismatchError. Without it no digest is recorded.
	CredentialKey []byte
	// Now replaces time.Now (tests).
	Now func() time.Time
	// Logger receives what the start does; nil discards it.
	Logger *slog.Logger
}

// InEnvironmentOptions configure StartRetainedRunInEnvironment.
type InEnvironmentOptions struct {
	Provider contract.Provider
	Store    store.Store
	// EnvironmentID names the existing environment.
	EnvironmentID string
	// IdempotencyKey must be the retained key the environment was created
	// with (its RetainedKeyMetadata member).
	IdempotencyKey string
	Turn           contract.TurnInput
	Identity       *Identity
	Intent         *Intent
	OnAdmission    AdmissionHook
	// CredentialKey is StartOptions.CredentialKey.
	CredentialKey []byte
	Now           func() time.Time
	Logger        *slog.Logger
}

// StartRetainedRun admits and dispatches a retained run (spec/runtime.md
// §3.8). Without OnAdmission it is refused before any provider call. The
// admission records intent → environment → dispatched are each durable in
// the store before the hook sees them, and StartRetainedRun returns only
// after the dispatched hook returned.
//
// Starting again with the same options continues the same run: the
// records already durable are checked (a changed request is a
// *MismatchError) and delivered to the hook again, the keyed create
// replays the same environment and the turn id the same dispatch. A
// failure after the turn may have been dispatched keeps the environment
// for RecoverRetainedRun; an environment this call created and never
// dispatched to is destroyed when it cannot serve the run or its record
// cannot be written, unless the run record (read again) names it.
func StartRetainedRun(ctx context.Context, o StartOptions) (*Run, error) {
	if o.OnAdmission == nil {
		return nil, ErrNoAdmissionHook
	}
	if o.Provider == nil || o.Store == nil || o.Environment == nil {
		return nil, fmt.Errorf("%w: Provider, Store and Environment are required", ErrInvalidOptions)
	}
	if o.Environment.IdempotencyKey == nil || *o.Environment.IdempotencyKey == "" {
		return nil, fmt.Errorf("%w: Environment.IdempotencyKey is required", ErrInvalidOptions)
	}
	key := *o.Environment.IdempotencyKey
	create, createDigest, profileDigest, err := keyedCreateInput(o.Environment)
	if err != nil {
		return nil, err
	}
	a := &admission{provider: o.Provider, store: o.Store, hook: o.OnAdmission, now: o.Now, log: o.Logger, turn: o.Turn, stage: o.Stage, seat: o.Seat,
		credentialKey: o.CredentialKey}
	if err := a.prepare(key, o.Identity, profileDigest, nil, createDigest); err != nil {
		return nil, err
	}
	if err := a.checkIntent(o.Intent); err != nil {
		return nil, err
	}
	// The create's credential request must be the admitted one, as a
	// recovery replaying the create checks it (checkAdmittedCredential).
	if err := checkAdmittedCredential(a.intent, create.Credential, o.CredentialKey); err != nil {
		return nil, fmt.Errorf("%w: the create's credential request is not the turn's: %w", ErrInvalidOptions, err)
	}
	a.acquire = func(ctx context.Context) (contract.Environment, error) {
		env, err := o.Provider.Create(ctx, &create)
		if err != nil {
			return nil, fmt.Errorf("retained: creating the environment: %w", err)
		}
		return env, nil
	}
	return a.run(ctx)
}

// keyedCreateInput is the create a retained run sends for in (whose
// IdempotencyKey is set): in with the key in its RetainedKeyMetadata
// member, the digest of that create and the digest of its profile (nil
// when it has none). A start and a recovery replaying its keyed create
// send exactly this.
func keyedCreateInput(in *contract.CreateInput) (contract.CreateInput, string, *string, error) {
	key := *in.IdempotencyKey
	create := *in
	create.Metadata = maps.Clone(create.Metadata)
	if create.Metadata == nil {
		create.Metadata = map[string]canonjson.Value{}
	}
	if prior, ok := create.Metadata[RetainedKeyMetadata]; ok && prior.Str() != key {
		return create, "", nil, fmt.Errorf("%w: Environment.Metadata[%s] is not the idempotency key", ErrInvalidOptions, RetainedKeyMetadata)
	}
	create.Metadata[RetainedKeyMetadata] = canonjson.StringValue(key)
	createDigest, err := contract.CreateInputDigest(&create)
	if err != nil {
		return create, "", nil, fmt.Errorf("%w: %w", ErrInvalidOptions, err)
	}
	var profileDigest *string
	if d, err := contract.DigestOf(create.Profile); err == nil {
		profileDigest = &d
	}
	return create, createDigest, profileDigest, nil
}

// StartRetainedRunInEnvironment starts a fresh session in an existing
// environment after verifying, through the provider's metadata, that it
// was created under o.IdempotencyKey. Reusing an environment is not chat
// continuity: the run is a new session. Its admission follows
// StartRetainedRun.
func StartRetainedRunInEnvironment(ctx context.Context, o InEnvironmentOptions) (*Run, error) {
	if o.OnAdmission == nil {
		return nil, ErrNoAdmissionHook
	}
	if o.Provider == nil || o.Store == nil || o.EnvironmentID == "" || o.IdempotencyKey == "" {
		return nil, fmt.Errorf("%w: Provider, Store, EnvironmentID and IdempotencyKey are required", ErrInvalidOptions)
	}
	var profileDigest *string
	if o.Turn.Profile != nil {
		if d, err := contract.DigestOf(o.Turn.Profile); err == nil {
			profileDigest = &d
		}
	}
	envDigest, err := contract.DigestOf(map[string]string{"existingEnvironmentId": o.EnvironmentID})
	if err != nil {
		return nil, err
	}
	a := &admission{provider: o.Provider, store: o.Store, hook: o.OnAdmission, now: o.Now, log: o.Logger, turn: o.Turn, credentialKey: o.CredentialKey}
	if err := a.prepare(o.IdempotencyKey, o.Identity, profileDigest, &o.EnvironmentID, envDigest); err != nil {
		return nil, err
	}
	if err := a.checkIntent(o.Intent); err != nil {
		return nil, err
	}
	a.acquire = func(ctx context.Context) (contract.Environment, error) {
		env, err := lookup(ctx, o.Provider, o.EnvironmentID)
		if err != nil {
			return nil, err
		}
		if got, ok := env.Metadata()[RetainedKeyMetadata]; !ok || got.Kind() != canonjson.String || got.Str() != o.IdempotencyKey {
			return nil, &MismatchError{What: "environment's retained key", Field: RetainedKeyMetadata, Want: o.IdempotencyKey, Got: got.Str()}
		}
		return env, nil
	}
	return a.run(ctx)
}

// lookup finds an environment by id: ErrEnvironmentGone when the provider
// says it does not exist.
func lookup(ctx context.Context, p contract.Provider, id string) (contract.Environment, error) {
	g, ok := p.(contract.EnvironmentGetter)
	if !ok {
		return nil, fmt.Errorf("%w: %s cannot find an environment by id", ErrNotRetainable, p.Name())
	}
	env, err := g.Get(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("retained: looking up environment %s: %w", id, err)
	}
	if env == nil {
		return nil, fmt.Errorf("%w: %s", ErrEnvironmentGone, id)
	}
	return env, nil
}

// admission is one start's state.
type admission struct {
	provider contract.Provider
	store    store.Store
	hook     AdmissionHook
	now      func() time.Time
	log      *slog.Logger
	turn     contract.TurnInput
	intent   Intent
	stage    *int
	seat     *SeatLink
	// credentialKey keys the intent's credential digest.
	credentialKey []byte
	acquire       func(ctx context.Context) (contract.Environment, error)
}

// prepare computes the identity and the intent.
func (a *admission) prepare(key string, id *Identity, profileDigest, existing *string, envDigest string) error {
	if a.now == nil {
		a.now = time.Now
	}
	if a.log == nil {
		a.log = slog.New(slog.DiscardHandler)
	}
	if a.turn.TurnID == nil || *a.turn.TurnID == "" {
		return fmt.Errorf("%w: Turn.TurnID is required", ErrInvalidOptions)
	}
	if a.turn.ControlRef != nil || a.turn.NativeContinuation != nil {
		return fmt.Errorf("%w: a retained turn starts a run; it carries no control reference or native continuation", ErrInvalidOptions)
	}
	turnID := *a.turn.TurnID
	derived, recordID, err := DeriveIdentity(key, turnID)
	if err != nil {
		return err
	}
	if id != nil {
		if id.SessionID == "" || id.ExecutionID == "" {
			return fmt.Errorf("%w: Identity needs both a session id and an execution id", ErrInvalidOptions)
		}
		derived = *id
	}
	if s := a.turn.SessionID; s != nil && *s != derived.SessionID {
		return &MismatchError{What: "turn's session id", Field: "sessionId", Want: derived.SessionID, Got: *s}
	}
	if x := a.turn.ExecutionID; x != nil && *x != derived.ExecutionID {
		return &MismatchError{What: "turn's execution id", Field: "executionId", Want: derived.ExecutionID, Got: *x}
	}
	turnDigest, err := digestTurn(&a.turn)
	if err != nil {
		return fmt.Errorf("%w: the turn has no canonical form: %w", ErrInvalidOptions, err)
	}
	a.intent = Intent{Provider: a.provider.Name(), IdempotencyKey: key, TurnID: turnID, SessionID: derived.SessionID,
		ExecutionID: derived.ExecutionID, RunID: recordID, ExistingEnvironmentID: existing,
		RequestedProfileDigest: profileDigest, TurnDigest: turnDigest}
	if err := admittedCredential(&a.intent, a.turn.Credential, a.credentialKey); err != nil {
		return err
	}
	if a.stage != nil {
		if *a.stage < 0 {
			return fmt.Errorf("%w: Stage %d is negative", ErrInvalidOptions, *a.stage)
		}
		if c := a.intent.CredentialStage; c != nil && *c != *a.stage {
			return fmt.Errorf("%w: the turn carries stage %d's credential request, not stage %d's", ErrInvalidOptions, *c, *a.stage)
		}
		k := *a.stage
		a.intent.Stage = &k
	}
	req, err := requestDigest(a.intent, envDigest)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidOptions, err)
	}
	a.intent.RequestDigest = req
	return nil
}

// requestDigest is the request digest of intent in (whatever its own
// RequestDigest) bound to the digest of the environment it asks for.
func requestDigest(in Intent, envDigest string) (string, error) {
	in.RequestDigest = ""
	return contract.DigestOf(struct {
		Intent      Intent `json:"intent"`
		Environment string `json:"environment"`
	}{in, envDigest})
}

// checkIntent refuses a replayed intent the options do not recompute.
func (a *admission) checkIntent(prior *Intent) error {
	if prior == nil || canonjson.Equal(mustValue(*prior), mustValue(a.intent)) {
		return nil
	}
	return mismatch("replayed intent", *prior, a.intent)
}

func mustValue(x any) canonjson.Value {
	v, err := canonjson.ToValue(x)
	if err != nil {
		return canonjson.NullValue()
	}
	return v
}

// recordCreateRefused records a provider's definite refusal of the
// create (a quota refusal: nothing was created), so that a recovery
// answers NotFound rather than Unverifiable. Another error says nothing
// definite and records nothing; a failed write is logged, the start's
// error stands.
func (a *admission) recordCreateRefused(ctx context.Context, err error) {
	var q *contract.QuotaRefusalError
	if !errors.As(err, &q) {
		return
	}
	rec := CreateRefusedRecord{Reason: err.Error(), At: a.now().UTC().Format(time.RFC3339Nano)}
	if q.RetryAfter != nil {
		rec.RetryAfterMS = new(q.RetryAfter.Milliseconds())
	}
	if uerr := a.update(context.WithoutCancel(ctx), func(d *document, _ *store.Run) error {
		if d.Environment == nil {
			d.CreateRefused = &rec
		}
		return nil
	}); uerr != nil {
		a.log.WarnContext(ctx, "retained: recording the refused create", "run", a.intent.RunID, "err", uerr)
	}
}

// digestTurn is the digest of a turn as the caller gave it, without its
// detach flag (a transport choice, not the turn).
func digestTurn(t *contract.TurnInput) (string, error) {
	v, err := canonjson.ToValue(t)
	if err != nil {
		return "", err
	}
	return contract.DigestOf(v.Without("detach"))
}

// run admits and dispatches, continuing from whatever is already durable.
func (a *admission) run(ctx context.Context) (*Run, error) {
	if err := checkRetainable(ctx, a.provider, nil); err != nil {
		return nil, err
	}
	doc, err := a.recordIntent(ctx)
	if err != nil {
		return nil, err
	}
	if err := a.deliver(ctx, Admission{Kind: AdmissionIntent, Intent: &doc.Intent}); err != nil {
		return nil, err
	}
	if doc.CreateRefused != nil && doc.Environment == nil {
		// This start creates again: until it is refused again, the
		// provider may hold what it creates.
		if err := a.update(ctx, func(d *document, _ *store.Run) error { d.CreateRefused = nil; return nil }); err != nil {
			return nil, err
		}
	}
	env, err := a.acquire(ctx)
	if err != nil {
		a.recordCreateRefused(ctx, err)
		return nil, err
	}
	if env.Provider() != a.intent.Provider {
		a.cleanUnrecorded(env)
		return nil, &MismatchError{What: "environment's provider", Field: "provider", Want: a.intent.Provider, Got: env.Provider()}
	}
	if err := checkRetainable(ctx, a.provider, env); err != nil {
		a.cleanUnrecorded(env)
		return nil, err
	}
	envRec := EnvironmentRecord{Provider: a.intent.Provider, EnvironmentID: env.ID(), IdempotencyKey: a.intent.IdempotencyKey,
		TurnID: a.intent.TurnID, SessionID: a.intent.SessionID, ExecutionID: a.intent.ExecutionID}
	if doc.Environment != nil && *doc.Environment != envRec {
		// The provider answered with another environment than the one
		// admitted: it holds no run of ours.
		a.cleanUnrecorded(env)
		return nil, mismatch("environment record", *doc.Environment, envRec)
	}
	if doc.Environment == nil {
		if err := a.update(ctx, func(d *document, r *store.Run) error {
			if d.Environment != nil && *d.Environment != envRec {
				return mismatch("environment record", *d.Environment, envRec)
			}
			d.Environment = &envRec
			return nil
		}); err != nil {
			a.cleanUnrecorded(env)
			return nil, err
		}
		a.log.InfoContext(ctx, "retained: environment admitted", "run", a.intent.RunID, "environment", env.ID())
	}
	if err := a.deliver(ctx, Admission{Kind: AdmissionEnvironment, Environment: &envRec}); err != nil {
		return nil, err
	}
	dispatched := doc.Dispatched
	if dispatched == nil {
		ref, err := a.dispatch(ctx, env)
		if err != nil {
			// The turn may have been dispatched: keep the environment.
			return nil, err
		}
		rec := DispatchedRecord{ControlRef: ref, IdempotencyKey: a.intent.IdempotencyKey, TurnID: a.intent.TurnID}
		if err := recordDispatched(ctx, a.store, a.intent.RunID, rec); err != nil {
			return nil, err
		}
		a.log.InfoContext(ctx, "retained: run dispatched", "run", a.intent.RunID, "providerRun", ref.RunID)
		dispatched = &rec
	}
	if err := a.deliver(ctx, Admission{Kind: AdmissionDispatched, Dispatched: dispatched}); err != nil {
		return nil, err
	}
	return attach(ctx, a.provider, a.store, env, ControlRef{Record: a.intent.RunID, Run: dispatched.ControlRef}, doc.Native, a.now, a.log)
}

// dispatch sends the turn detached under the run's identity and checks
// the control reference the provider returns names exactly that run.
func (a *admission) dispatch(ctx context.Context, env contract.Environment) (contract.ExactRunControlRef, error) {
	return dispatchTurn(ctx, env, a.turn, a.intent)
}

func dispatchTurn(ctx context.Context, env contract.Environment, turn contract.TurnInput, in Intent) (contract.ExactRunControlRef, error) {
	d, ok := env.(contract.Dispatcher)
	if !ok {
		return contract.ExactRunControlRef{}, fmt.Errorf("%w: environment %s cannot dispatch detached", ErrNotRetainable, env.ID())
	}
	detach := true
	turn.SessionID, turn.ExecutionID, turn.Detach = &in.SessionID, &in.ExecutionID, &detach
	ref, err := d.Dispatch(ctx, &turn)
	if err != nil {
		return contract.ExactRunControlRef{}, fmt.Errorf("retained: dispatching turn %s (its outcome is unknown; the environment is kept for recovery): %w", in.TurnID, err)
	}
	if ref == nil || ref.ControlRef == nil {
		return contract.ExactRunControlRef{}, fmt.Errorf("%w: dispatch returned no control reference", ErrNotRetainable)
	}
	return verifyRef(*ref.ControlRef, in, env.ID())
}

// verifyRef checks a provider's control reference is exact and names the
// run of in.
func verifyRef(ref contract.RunControlRef, in Intent, envID string) (contract.ExactRunControlRef, error) {
	if ref.SessionID == nil || ref.ExecutionID == nil || ref.RequestDigest == nil {
		return contract.ExactRunControlRef{}, fmt.Errorf("%w: the control reference of run %s is not exact", ErrNotRetainable, ref.RunID)
	}
	exact := contract.ExactRunControlRef{RunID: ref.RunID, Provider: ref.Provider, EnvironmentID: ref.EnvironmentID,
		SessionID: *ref.SessionID, ExecutionID: *ref.ExecutionID, RequestDigest: *ref.RequestDigest}
	if _, err := contract.Validate(contract.KindExactRunControlRef, contract.ExactRunControlRefSchema, exact); err != nil {
		return contract.ExactRunControlRef{}, fmt.Errorf("%w: %w", ErrNotRetainable, err)
	}
	want := Identity{SessionID: in.SessionID, ExecutionID: in.ExecutionID}
	got := Identity{SessionID: exact.SessionID, ExecutionID: exact.ExecutionID}
	switch {
	case exact.Provider != in.Provider:
		return exact, &MismatchError{What: "dispatched run's provider", Field: "provider", Want: in.Provider, Got: exact.Provider}
	case exact.EnvironmentID != envID:
		return exact, &MismatchError{What: "dispatched run's environment", Field: "environmentId", Want: envID, Got: exact.EnvironmentID}
	case got != want:
		return exact, mismatch("dispatched run's identity", want, got)
	}
	return exact, nil
}

// recordIntent creates the run record with the intent, or checks the one
// already there.
func (a *admission) recordIntent(ctx context.Context) (*document, error) {
	doc := &document{Intent: a.intent, Seat: a.seat}
	v, err := doc.value()
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, storeTimeout)
	_, err = a.store.CreateRun(cctx, store.Run{ID: a.intent.RunID, Kind: Kind, Status: store.StatusPending, Doc: v})
	cancel()
	if err == nil {
		a.log.InfoContext(ctx, "retained: intent admitted", "run", a.intent.RunID)
		return doc, nil
	}
	if !errors.Is(err, store.ErrExists) {
		return nil, storeFailure(ctx, a.intent.RunID, "record", err)
	}
	gctx, cancel := context.WithTimeout(ctx, storeTimeout)
	r, err := a.store.GetRun(gctx, a.intent.RunID)
	cancel()
	if err != nil {
		return nil, storeFailure(ctx, a.intent.RunID, "read", err)
	}
	prior, err := decodeDocument(r)
	if err != nil {
		return nil, err
	}
	if !canonjson.Equal(mustValue(prior.Intent), mustValue(a.intent)) {
		return nil, mismatch("intent recorded for run "+a.intent.RunID, prior.Intent, a.intent)
	}
	return prior, nil
}

// update applies fn to the run's document.
func (a *admission) update(ctx context.Context, fn func(*document, *store.Run) error) error {
	return updateDocument(ctx, a.store, a.intent.RunID, fn)
}

func updateDocument(ctx context.Context, s store.Store, id string, fn func(*document, *store.Run) error) error {
	cctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	var refused error // fn's own refusal, returned as it is
	_, err := s.UpdateRun(cctx, id, func(r *store.Run) error {
		d, err := decodeDocument(*r)
		if err != nil {
			refused = err
			return err
		}
		if err := fn(d, r); err != nil {
			refused = err
			return err
		}
		v, err := d.value()
		if err != nil {
			return err
		}
		r.Doc = v
		return nil
	})
	if err != nil && refused != nil && errors.Is(err, refused) {
		return fmt.Errorf("retained: recording run %s: %w", id, err)
	}
	return storeFailure(ctx, id, "record", err)
}

// recordDispatched makes the dispatched record durable (and the record
// running); an existing different one is a mismatch.
func recordDispatched(ctx context.Context, s store.Store, id string, rec DispatchedRecord) error {
	return updateDocument(ctx, s, id, func(d *document, r *store.Run) error {
		if d.Dispatched != nil {
			if !contract.SameRunControlRef(d.Dispatched.ControlRef, rec.ControlRef) {
				return mismatch("dispatched record", d.Dispatched.ControlRef, rec.ControlRef)
			}
			return nil
		}
		d.Dispatched = &rec
		if r.Status == store.StatusPending {
			r.Status = store.StatusRunning
		}
		return nil
	})
}

// deliver awaits the hook.
func (a *admission) deliver(ctx context.Context, adm Admission) error {
	if err := a.hook(ctx, adm); err != nil {
		return fmt.Errorf("retained: the %s admission hook failed (the provider state is kept for recovery): %w", adm.Kind, err)
	}
	return nil
}

// cleanUnrecorded destroys an environment this start created when the
// run record does not name it (read again, since a write whose outcome
// was unknown may have stored it): nothing was dispatched to it and no
// record leads to it. An environment whose creation is not proven, or
// that the record names, or whose record cannot be read, is kept.
func (a *admission) cleanUnrecorded(env contract.Environment) {
	if env.Creation() != contract.CreationCreated {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	r, err := a.store.GetRun(ctx, a.intent.RunID)
	if err != nil {
		a.log.WarnContext(ctx, "retained: keeping an environment whose record cannot be read", "environment", env.ID(), "error", err)
		return
	}
	if d, err := decodeDocument(r); err != nil || d.Environment != nil && d.Environment.EnvironmentID == env.ID() {
		return
	}
	if err := env.Destroy(ctx); err != nil {
		a.log.WarnContext(ctx, "retained: could not destroy an unused environment", "environment", env.ID(), "error", err)
	}
}

// cleanupTimeout bounds the destruction of an unused environment.
const cleanupTimeout = 30 * time.Second

// storeTimeout bounds each store call of a retained run — reading or
// writing an admission record, and every call its handle (Run) makes:
// a store that stops answering fails the start, the recovery or the
// handle's method with a *kernel.StoreError rather than hold it, even
// for a caller that set no deadline. A record write that timed out may
// still land; it is only ever read back, so starting again with the
// same options continues from what is durable.
const storeTimeout = 30 * time.Second

// checkRetainable refuses a provider (or, with env, an environment) that
// does not declare retained control with everything it requires.
func checkRetainable(ctx context.Context, p contract.Provider, env contract.Environment) error {
	var caps *contract.Capabilities
	if env != nil {
		caps = env.Capabilities()
	}
	if caps == nil {
		var err error
		if caps, err = p.Capabilities(ctx); err != nil {
			return fmt.Errorf("retained: reading %s's capabilities: %w", p.Name(), err)
		}
	}
	st := caps.Streaming
	if caps.RetainedControl == nil || !st.Replay || !st.Detach || !st.TurnIdempotency || !caps.Sessions.Continue {
		return fmt.Errorf("%w: %s must declare retainedControl, streaming.replay, streaming.detach, streaming.turnIdempotency and sessions.continue", ErrNotRetainable, p.Name())
	}
	if _, ok := p.(contract.EnvironmentGetter); !ok {
		return fmt.Errorf("%w: %s cannot find an environment by id", ErrNotRetainable, p.Name())
	}
	if env != nil {
		_, d := env.(contract.Dispatcher)
		_, s := env.(contract.SessionOpener)
		if !d || !s {
			return fmt.Errorf("%w: environment %s cannot dispatch detached and reopen sessions", ErrNotRetainable, env.ID())
		}
	}
	return nil
}
