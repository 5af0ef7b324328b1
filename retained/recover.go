package retained

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/store"
)

// ReconnectOptions configure ReconnectRetainedRun.
type ReconnectOptions struct {
	Provider contract.Provider
	Store    store.Store
	// Ref is the claim ticket to re-attach with.
	Ref    ControlRef
	Now    func() time.Time
	Logger *slog.Logger
}

// ReconnectRetainedRun rebuilds the handle of a dispatched retained run
// from its claim ticket, in any process sharing the store and provider.
// The ticket must be exactly the run record's dispatched reference and
// the provider's session must be bound to exactly that run: any
// difference of provider, environment, session, execution, run or request
// digest is a *MismatchError (or the provider's refusal). An environment
// that no longer exists is ErrEnvironmentGone.
func ReconnectRetainedRun(ctx context.Context, o ReconnectOptions) (*Run, error) {
	if o.Provider == nil || o.Store == nil || o.Ref.Record == "" {
		return nil, fmt.Errorf("%w: Provider, Store and Ref are required", ErrInvalidOptions)
	}
	rec, err := Load(ctx, o.Store, o.Ref.Record)
	if err != nil {
		return nil, err
	}
	stored, err := rec.ControlRef()
	if err != nil {
		return nil, err
	}
	if !contract.SameRunControlRef(stored.Run, o.Ref.Run) {
		return nil, mismatch("control reference recorded for run "+rec.ID, stored.Run, o.Ref.Run)
	}
	if o.Ref.Run.Provider != o.Provider.Name() {
		return nil, &MismatchError{What: "control reference's provider", Field: "provider", Want: o.Ref.Run.Provider, Got: o.Provider.Name()}
	}
	env, err := lookup(ctx, o.Provider, o.Ref.Run.EnvironmentID)
	if err != nil {
		return nil, err
	}
	return attach(ctx, o.Provider, o.Store, env, o.Ref, rec.Native, o.Now, o.Logger)
}

// Attach re-attaches to a retained run by its run-store record id: it
// reads the record's claim ticket and reconnects with it.
func Attach(ctx context.Context, p contract.Provider, s store.Store, id string) (*Run, error) {
	rec, err := Load(ctx, s, id)
	if err != nil {
		return nil, err
	}
	ref, err := rec.ControlRef()
	if err != nil {
		return nil, err
	}
	return ReconnectRetainedRun(ctx, ReconnectOptions{Provider: p, Store: s, Ref: ref})
}

// RecoveryOutcome is what RecoverRetainedRun found.
type RecoveryOutcome string

// Recovery outcomes.
const (
	// Recovered: the run has a handle again (Recovery.Via says how).
	Recovered RecoveryOutcome = "recovered"
	// NotFound: there is nothing to re-attach to and nothing to clean up.
	NotFound RecoveryOutcome = "not_found"
	// Unverifiable: the environment may hold the run but the provider
	// could not prove it now. Nothing was destroyed: keep it and retry.
	Unverifiable RecoveryOutcome = "unverifiable"
)

// How a run was recovered.
const (
	// ViaReattached: the run was already dispatched; the handle follows it.
	ViaReattached = "reattached"
	// ViaResumed: the dispatch was uncertain and was sent again under the
	// same turn id, which the provider admits at most once.
	ViaResumed = "resumed"
)

// Recovery is the result of RecoverRetainedRun.
type Recovery struct {
	Outcome RecoveryOutcome
	// Via is ViaReattached or ViaResumed when Outcome is Recovered.
	Via string
	// Run is the handle when Outcome is Recovered.
	Run *Run
	// EnvironmentID is the environment concerned, when one was admitted.
	EnvironmentID string
	// Reason explains NotFound and Unverifiable.
	Reason string
	// Cause is the error behind Unverifiable, when there is one, for
	// errors.As: a *CredentialChangedError says the admitted stage's
	// account selector changed; nil otherwise.
	Cause error
}

// RecoverOptions configure RecoverRetainedRun.
type RecoverOptions struct {
	Provider contract.Provider
	Store    store.Store
	// RunID is the run-store record id of the retained run.
	RunID string
	// Turn, when given, lets a run whose dispatch was uncertain resume:
	// it must be the turn that was admitted (its digest is the intent's).
	// When the admitted turn carried a seat stage's credential request
	// (Intent.CredentialStage), Turn carries that stage's request, or
	// Profile supplies it; a request for another stage is refused. When
	// it carried none, the turn is re-sent with none, whatever Turn
	// carries (RG-12).
	Turn *contract.TurnInput
	// Profile is the authored profile with its seats: when Turn carries
	// no credential request, the admitted stage's is rebuilt from it
	// (contract.CredentialRequestFor), so a recovery in another process
	// re-sends it (RG-09) although no record holds it.
	Profile *profile.Profile
	// Environment, when given, is the create input the run was started
	// with (StartOptions.Environment). A run whose intent was recorded
	// but not its environment — the starter may have died after the
	// provider created one under the idempotency key — is then recovered
	// by replaying that keyed create (ENV-10): the provider answers with
	// the environment it holds under the key, which recovery records and
	// continues from. Without it such a run is Unverifiable. When the
	// admission carried a seat stage's credential request and Environment
	// carries none, the create's is rebuilt from Profile (RG-09).
	Environment *contract.CreateInput
	// CredentialKey is the key the run was admitted with
	// (StartOptions.CredentialKey). When the intent recorded a
	// credential digest (Intent.CredentialDigest), the credential request
	// recovery would send — Turn's or Environment's, or the one rebuilt
	// from Profile — must digest to it under this key: a request that
	// asks for another account (the profile's selector for the stage
	// changed since the admission) is Unverifiable with a
	// *CredentialChangedError as its Cause, nothing sent and nothing
	// destroyed, and so is one that cannot be checked for want of the
	// key. A record without a digest is recovered as before.
	CredentialKey []byte
	// OnAdmission, when set, is awaited after an environment or
	// dispatched record that recovery writes is durable.
	OnAdmission AdmissionHook
	Now         func() time.Time
	Logger      *slog.Logger
}

// RecoverRetainedRun recovers a retained run after the process that
// started it died, from its admission records. It never destroys
// anything: an environment the provider cannot vouch for now is
// Unverifiable (keep it, retry later); NotFound means there is nothing
// left to destroy. A run whose environment was not recorded may still
// have one under its idempotency key: it is Unverifiable unless
// o.Environment replays the keyed create, whose environment is then
// recorded and the run continues. A run whose dispatch was not recorded
// is re-attached when the provider's session proves it exists under the
// run's identity, or resumed when o.Turn is the admitted turn; otherwise
// it is Unverifiable.
func RecoverRetainedRun(ctx context.Context, o RecoverOptions) (Recovery, error) {
	if o.Provider == nil || o.Store == nil || o.RunID == "" {
		return Recovery{}, fmt.Errorf("%w: Provider, Store and RunID are required", ErrInvalidOptions)
	}
	rec, err := Load(ctx, o.Store, o.RunID)
	if errors.Is(err, ErrNoRecord) {
		return Recovery{Outcome: NotFound, Reason: "the run store holds no retained run " + o.RunID}, nil
	}
	if err != nil {
		return Recovery{}, err
	}
	if rec.Intent.Provider != o.Provider.Name() {
		return Recovery{}, &MismatchError{What: "recorded provider", Field: "provider", Want: rec.Intent.Provider, Got: o.Provider.Name()}
	}
	var envID string
	unverifiable := func(why string, err error) (Recovery, error) {
		if err != nil {
			why += ": " + err.Error()
		}
		return Recovery{Outcome: Unverifiable, EnvironmentID: envID, Reason: why, Cause: err}, nil
	}
	if nc := rec.Intent.NativeContinuation; nc != nil && rec.Dispatched == nil {
		// A native continuation is sent again only as the request the
		// caller persisted; recovery never creates, dispatches or
		// destroys anything for it.
		if rec.Environment != nil {
			envID = rec.Environment.EnvironmentID
		}
		return unverifiable("the native continuation "+nc.OperationID+" of run "+nc.Continues+" was not recorded dispatched: send the persisted request again with ContinueNativeRetained (the provider replays it)", nil)
	}
	var env contract.Environment
	switch {
	case rec.Environment == nil && rec.Intent.ExistingEnvironmentID != nil:
		// Started in an environment that existed before it: the run
		// created nothing.
		return Recovery{Outcome: NotFound, Reason: "no environment was admitted for the run; start it again with the same idempotency key and turn id"}, nil
	case rec.Environment == nil && rec.CreateRefused != nil:
		// The provider refused the create: it holds nothing of the run.
		return Recovery{Outcome: NotFound, Reason: "the provider refused the run's create (" + rec.CreateRefused.Reason +
			"); nothing was created: start it again with the same idempotency key and turn id"}, nil
	case rec.Environment == nil:
		// The starter may have died after the provider created the
		// environment under the key and before its record was written:
		// only a replay of the keyed create can tell.
		if env, err = replayCreate(ctx, o, rec.Intent); err != nil {
			return unverifiable("the environment was not recorded, and the provider may hold one created under the run's idempotency key", err)
		}
		envID = env.ID()
		envRec := EnvironmentRecord{Provider: rec.Intent.Provider, EnvironmentID: envID, IdempotencyKey: rec.Intent.IdempotencyKey,
			TurnID: rec.Intent.TurnID, SessionID: rec.Intent.SessionID, ExecutionID: rec.Intent.ExecutionID}
		if err := updateDocument(ctx, o.Store, rec.ID, func(d *document, _ *store.Run) error {
			if d.Environment != nil && *d.Environment != envRec {
				return mismatch("environment record", *d.Environment, envRec)
			}
			d.Environment = &envRec
			return nil
		}); err != nil {
			return Recovery{}, err
		}
		if o.OnAdmission != nil {
			if err := o.OnAdmission(ctx, Admission{Kind: AdmissionEnvironment, Environment: &envRec}); err != nil {
				return Recovery{}, fmt.Errorf("retained: the environment admission hook failed (the provider state is kept): %w", err)
			}
		}
	default:
		envID = rec.Environment.EnvironmentID
		g, ok := o.Provider.(contract.EnvironmentGetter)
		if !ok {
			return unverifiable("the provider cannot look environments up", nil)
		}
		if env, err = g.Get(ctx, envID); err != nil {
			return unverifiable("looking up the environment failed", err)
		}
		if env == nil {
			return Recovery{Outcome: NotFound, EnvironmentID: envID, Reason: "the environment no longer exists; nothing is left to clean up"}, nil
		}
	}
	if rec.Dispatched != nil {
		run, err := attach(ctx, o.Provider, o.Store, env, ControlRef{Record: rec.ID, Run: rec.Dispatched.ControlRef}, rec.Native, o.Now, o.Logger)
		if err != nil {
			return unverifiable("the provider did not confirm the dispatched run", err)
		}
		return Recovery{Outcome: Recovered, Via: ViaReattached, Run: run, EnvironmentID: envID}, nil
	}
	// The dispatch was not recorded: it may or may not have happened.
	via, ref, err := findOrResume(ctx, env, rec.Intent, o)
	if err != nil {
		return unverifiable("the dispatch was not recorded and could not be proven or resumed", err)
	}
	disp := DispatchedRecord{ControlRef: ref, IdempotencyKey: rec.Intent.IdempotencyKey, TurnID: rec.Intent.TurnID}
	if err := recordDispatched(ctx, o.Store, rec.ID, disp); err != nil {
		return Recovery{}, err
	}
	if o.OnAdmission != nil {
		if err := o.OnAdmission(ctx, Admission{Kind: AdmissionDispatched, Dispatched: &disp}); err != nil {
			return Recovery{}, fmt.Errorf("retained: the dispatched admission hook failed (the provider state is kept): %w", err)
		}
	}
	run, err := attach(ctx, o.Provider, o.Store, env, ControlRef{Record: rec.ID, Run: ref}, rec.Native, o.Now, o.Logger)
	if err != nil {
		return unverifiable("the provider did not confirm the recovered run", err)
	}
	return Recovery{Outcome: Recovered, Via: via, Run: run, EnvironmentID: envID}, nil
}

// findOrResume proves an unrecorded dispatch: the run's session, if the
// provider has it under the run's identity, else a re-dispatch of the
// admitted turn.
func findOrResume(ctx context.Context, env contract.Environment, in Intent, o RecoverOptions) (string, contract.ExactRunControlRef, error) {
	turn := o.Turn
	if opener, ok := env.(contract.SessionOpener); ok {
		if sess, err := opener.Session(ctx, in.SessionID, nil); err == nil {
			if ref := sess.ControlRef(); ref != nil {
				if exact, err := verifyRef(*ref, in, env.ID()); err == nil {
					return ViaReattached, exact, nil
				}
			}
		}
	}
	if turn == nil {
		return "", contract.ExactRunControlRef{}, errors.New("no session of the run exists under its identity and no turn was given to resume it")
	}
	d, err := digestTurn(turn)
	if err != nil {
		return "", contract.ExactRunControlRef{}, err
	}
	if d != in.TurnDigest {
		return "", contract.ExactRunControlRef{}, &MismatchError{What: "turn to resume", Field: "turnDigest", Want: in.TurnDigest, Got: d}
	}
	resend, err := withCredential(*turn, in, o.Profile, o.CredentialKey)
	if err != nil {
		return "", contract.ExactRunControlRef{}, err
	}
	ref, err := dispatchTurn(ctx, env, resend, in)
	if err != nil {
		return "", contract.ExactRunControlRef{}, err
	}
	return ViaResumed, ref, nil
}

// withCredential is the turn to re-dispatch with the credential request
// of the seat stage its admission carried: the one the caller gave, or
// the profile's for that stage, checked to be the admitted one
// (checkAdmittedCredential: the same stage and, when the admission
// recorded its digest, the same account). A request for another stage
// or account, or none where the admission carried one, is refused
// before any dispatch. An admission that carried none — among them
// every one recorded before credential stages were, which relied on the
// environment's creation-time profile — is re-sent with none (RG-12):
// the replay is the admitted request, never one re-derived from the
// profile as it is read now.
func withCredential(turn contract.TurnInput, in Intent, prof *profile.Profile, key []byte) (contract.TurnInput, error) {
	if in.CredentialStage == nil {
		turn.Credential = nil
		return turn, nil
	}
	var err error
	turn.Credential, err = resendCredential(in, turn.Credential, prof, key, contract.CredentialOnTurn, "Turn.Credential")
	return turn, err
}

// replayCreate replays the keyed create of the run of in with
// o.Environment, which must be the create it was admitted with (its
// request digest is the intent's), carrying the admitted stage's
// credential request. The provider answers with the environment it
// holds under the key (replayed) or, when it holds none, one it creates
// now; either is the run's environment from then on.
func replayCreate(ctx context.Context, o RecoverOptions, in Intent) (contract.Environment, error) {
	if o.Environment == nil {
		return nil, errors.New("no create input was given to replay the keyed create with")
	}
	if k := o.Environment.IdempotencyKey; k == nil || *k != in.IdempotencyKey {
		got := ""
		if k != nil {
			got = *k
		}
		return nil, &MismatchError{What: "create input's idempotency key", Field: "idempotencyKey", Want: in.IdempotencyKey, Got: got}
	}
	create, envDigest, _, err := keyedCreateInput(o.Environment)
	if err != nil {
		return nil, err
	}
	if d, err := requestDigest(in, envDigest); err != nil {
		return nil, err
	} else if d != in.RequestDigest {
		return nil, &MismatchError{What: "create input to replay", Field: "requestDigest", Want: in.RequestDigest, Got: d}
	}
	if in.CredentialStage != nil {
		if create.Credential, err = resendCredential(in, create.Credential, o.Profile, o.CredentialKey, contract.CredentialOnCreate, "Environment.Credential"); err != nil {
			return nil, err
		}
	}
	env, err := o.Provider.Create(ctx, &create)
	if err != nil {
		return nil, fmt.Errorf("retained: replaying the keyed create: %w", err)
	}
	if env.Provider() != in.Provider {
		return nil, &MismatchError{What: "environment's provider", Field: "provider", Want: in.Provider, Got: env.Provider()}
	}
	if err := checkRetainable(ctx, o.Provider, env); err != nil {
		return nil, err
	}
	return env, nil
}
