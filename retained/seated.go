package retained

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/store"
)

// SeatLink links one stage's retained run into the seat chain of a
// seated retained run (StartSeated): the run-store record of each stage
// tried holds it, beside its admission records. Ids, outcomes and
// reasons only, never a credential.
type SeatLink struct {
	// Logical is the seated run's id: the record id of the first stage
	// it tried. Node is its logical node (RG-11), the same for every
	// stage.
	Logical string `json:"logical"`
	Node    string `json:"node"`
	// Tried are the stages tried before this one, in order, and why the
	// chain moved on from each.
	Tried []kernel.StageAttempt `json:"tried,omitzero"`
	// MovedOn is how this stage ended when the chain moved on from it (a
	// typed quota refusal), and Next the record of the stage it moved on
	// to; both unset while this stage is the chain's last.
	MovedOn *kernel.StageAttempt `json:"movedOn,omitzero"`
	Next    string               `json:"next,omitzero"`
	// Continuation is the native continuation this stage sent to go on
	// in the session the refused stage before it left (its continuity
	// kernel.ContinuityNative), recorded with its intent before it was
	// sent: a start again sends the same request, which the provider
	// answers replayed, never as a second turn. Ids and digests only.
	Continuation *contract.NativeContextContinuationRequest `json:"continuation,omitzero"`
	// ContinuityReason is why this stage started a fresh session although
	// the stage before left one (the kernel's rule could not prove
	// native continuity); a start again keeps the decision.
	ContinuityReason string `json:"continuityReason,omitzero"`
}

// maxChain bounds the records Latest follows: a profile's seats are a
// short chain, and a longer one is a corrupt record.
const maxChain = 1 << 10

// StageKey is the idempotency key of stage k of a seated retained run
// started under key at stage first: key itself for the first stage (a
// run whose chain never moves on is the run StartRetainedRun would have
// admitted), a key derived from it and k for every later one, so each
// stage's create and record are its own and a start with the same key
// replays each of them.
func StageKey(key string, first, k int) string {
	if k == first {
		return key
	}
	return fmt.Sprintf("%s/stage-%d", key, k)
}

// StageRequest is the create and the turn of a retained run of task on
// seat stage k of prof under key and turnID: the create carries the
// stage's projection (profile.Project: the stage's harness, provider and
// model, without seats), and on a subscription profile the create and
// the turn carry the stage's credential request (RG-07), which nothing
// records. A nil prof asks for no profile; a stage prof does not have is
// an error.
func StageRequest(prof *profile.Profile, k int, key, turnID, task string) (*contract.CreateInput, contract.TurnInput, error) {
	var eff *profile.Profile
	if prof != nil {
		var err error
		if eff, err = profile.Project(prof, k); err != nil {
			return nil, contract.TurnInput{}, err
		}
	}
	return &contract.CreateInput{Profile: profile.Ref{Inline: eff}, IdempotencyKey: &key,
			Credential: contract.CredentialRequestFor(prof, k, contract.CredentialOnCreate)},
		contract.TurnInput{TurnID: &turnID, Prompt: &task,
			Credential: contract.CredentialRequestFor(prof, k, contract.CredentialOnTurn)}, nil
}

// AdmittedRequest is the create and the turn of task that the admission
// in recorded, rebuilt from the authored profile prof (nil: the request
// named no profile), so that a recovery re-sends exactly what was
// admitted (RG-12) rather than what prof would ask for today: a run that
// recorded its stage (Intent.Stage) is StageRequest of that stage; an
// older admission, recorded before stages were, created its environment
// with the whole authored profile and carried the credential request of
// the stage its intent names (Intent.CredentialStage), if any — its turn
// relied on that creation-time profile. The rebuilt create is checked
// against the admitted profile digest (Intent.RequestedProfileDigest):
// a profile that is not the one the run was admitted with is a
// *MismatchError, before anything is sent. The stage's account selector
// is in neither digest: a profile whose selector for the stage changed
// since the admission rebuilds a request for another account, which
// RecoverRetainedRun refuses against the admitted credential digest
// (RecoverOptions.CredentialKey; a *CredentialChangedError).
func AdmittedRequest(prof *profile.Profile, in Intent, task string) (*contract.CreateInput, contract.TurnInput, error) {
	var create *contract.CreateInput
	var turn contract.TurnInput
	if in.Stage != nil || prof == nil {
		k := 0
		if in.Stage != nil {
			k = *in.Stage
		}
		var err error
		if create, turn, err = StageRequest(prof, k, in.IdempotencyKey, in.TurnID, task); err != nil {
			return nil, contract.TurnInput{}, fmt.Errorf("%w: %w", ErrInvalidOptions, err)
		}
	} else {
		key, turnID := in.IdempotencyKey, in.TurnID
		create = &contract.CreateInput{Profile: profile.Ref{Inline: prof}, IdempotencyKey: &key}
		turn = contract.TurnInput{TurnID: &turnID, Prompt: &task}
		if k := in.CredentialStage; k != nil {
			create.Credential = contract.CredentialRequestFor(prof, *k, contract.CredentialOnCreate)
			turn.Credential = contract.CredentialRequestFor(prof, *k, contract.CredentialOnTurn)
		}
	}
	if want := in.RequestedProfileDigest; want != nil {
		got, err := contract.DigestOf(create.Profile)
		if err != nil {
			return nil, contract.TurnInput{}, fmt.Errorf("%w: the profile has no identity: %w", ErrInvalidOptions, err)
		}
		if got != *want {
			return nil, contract.TurnInput{}, &MismatchError{What: "profile the run " + in.RunID + " was admitted with", Field: "requestedProfileDigest", Want: *want, Got: got}
		}
	}
	return create, turn, nil
}

// SeatedOptions configure StartSeated.
type SeatedOptions struct {
	// Accounts resolves each stage's provider (kernel.AccountManager);
	// the provider's account owner binds each stage's credential from
	// the request its create and turn carry (RG-10).
	Accounts kernel.AccountManager
	Store    store.Store
	// Profile is the authored profile, with its seats; Stage the first
	// stage to try.
	Profile *profile.Profile
	Stage   int
	// IdempotencyKey and TurnID derive the first stage's identity
	// (DeriveIdentity), and with StageKey every later stage's.
	IdempotencyKey, TurnID string
	Task                   string
	// Node is the seated run's logical node; "" is
	// kernel.SeatedNode(the seated run's id).
	Node string
	// OnAdmission is awaited after each admission record of each stage
	// is durable (StartOptions.OnAdmission).
	OnAdmission AdmissionHook
	// CredentialKey keys the digest of each stage's credential request
	// recorded with its intent (StartOptions.CredentialKey): recovering a
	// stage with the same key refuses a profile whose selector for it
	// changed since (a *CredentialChangedError), and starting again with
	// one is a *MismatchError, before anything is sent.
	CredentialKey []byte
	// Follow, when set, follows a dispatched stage's run to its end and
	// returns the error it ended with (nil: it succeeded); a typed quota
	// refusal (*contract.QuotaRefusalError) moves the chain on. Without
	// it the chain ends at the first stage dispatched: nobody is there
	// to see a later refusal.
	Follow func(ctx context.Context, run *Run, at kernel.StageAttempt) error
	// MovedOn, when set, is told each stage the chain moved on from,
	// once its record says so.
	MovedOn func(at kernel.StageAttempt)
	Logger  *slog.Logger
}

// SeatedRun is what StartSeated did.
type SeatedRun struct {
	// ID is the seated run's id (the first stage's record), Node its
	// logical node.
	ID, Node string
	// Stages are the stages tried, in order; the last one's Outcome is
	// kernel.StageRunning when it was dispatched and not followed.
	Stages []kernel.StageAttempt
	// Run is the last stage's run; nil when no stage was dispatched.
	Run *Run
}

// StartSeated starts a seated retained run: the profile's seat chain
// from o.Stage on, each stage a retained run of its own (its admission
// records intent → environment → dispatched durable in the store, and
// seen by o.OnAdmission, before anything of it is returned) on the
// provider o.Accounts resolves for it, with the stage's credential
// request on its create (or continuation) and turn. Every stage from
// o.Stage on is resolved, and checked to be one its provider can honor,
// before any runs (PRF-07: a *kernel.SeatUnresolvedError or
// *kernel.StageUnsupportedError). A typed quota refusal of a stage — at
// its create, at its dispatch, or, when o.Follow follows it, part way
// through its turn — moves the chain on to the next authored stage under
// the same logical id, node and turn id and the caller's context (its
// deadline): the refused stage's record says how it ended and names the
// next one (SeatLink.MovedOn, Next), and the next stage's record names
// every stage tried before it.
//
// A refusal that broke a turn off in a session the provider named keeps
// that session (kernel.RefusalKeepsSession). The next stage goes on in
// it natively when the kernel's rule proves it can
// (kernel.OpenNativeSession, kernel.ProveNativeBoundary: the same
// provider, a live environment, a proven boundary): its run is the
// native continuation of the refused one (ContinueNativeRetained, under
// the operation id "<stage key>/<turn id>" and the seated run's turn
// id), in the same environment and native session, with the stage's own
// model and credential request and no copied history (continuity
// kernel.ContinuityNative, RG-11). A stage whose account refuses the
// continuation before admitting it leaves the session to the stage after
// it. Otherwise the stage starts a fresh
// session in an environment of its own (kernel.ContinuityFresh, with the
// rule's reason when a session was left), and the refused stage's
// environment is left to its provider, as a retained run's is. Every
// other end — success, a failure, or the last stage's refusal — ends the
// chain; the error is the stage's.
//
// Starting again with the same options replays each stage's admission,
// a native one's included: the continuation recorded with its intent is
// sent again (the provider replays it), a recorded decision to start
// fresh is kept, and a continuation the chain moved on from before it
// was admitted keeps its recorded end (it is not sent into a session
// that has moved on).
func StartSeated(ctx context.Context, o SeatedOptions) (*SeatedRun, error) {
	if o.Accounts == nil || o.Store == nil || o.Profile == nil || o.OnAdmission == nil {
		return nil, fmt.Errorf("%w: Accounts, Store, Profile and OnAdmission are required", ErrInvalidOptions)
	}
	seats := o.Profile.Seats
	if len(seats) == 0 || o.Stage < 0 || o.Stage >= len(seats) {
		return nil, fmt.Errorf("%w: stage %d of a profile with %d seats", ErrInvalidOptions, o.Stage, len(seats))
	}
	_, logical, err := DeriveIdentity(o.IdempotencyKey, o.TurnID)
	if err != nil {
		return nil, err
	}
	node := cmp.Or(o.Node, kernel.SeatedNode(logical))
	providers := make([]contract.Provider, 0, len(seats)-o.Stage)
	for k := o.Stage; k < len(seats); k++ {
		p, err := o.Accounts.ProviderFor(ctx, k, seats[k])
		if err == nil && p == nil {
			err = errors.New("no provider")
		}
		if err != nil {
			return nil, &kernel.SeatUnresolvedError{Stage: k, Pointer: fmt.Sprintf("/seats/%d", k), Model: seats[k].Model, Provider: seats[k].Provider, Err: err}
		}
		providers = append(providers, p)
	}
	if err := kernel.CheckStages(ctx, o.Profile, o.Stage, providers); err != nil {
		return nil, err
	}
	res := &SeatedRun{ID: logical, Node: node}
	var (
		prev   *kernel.StageAttempt // the stage the chain moves on from
		prevID string               // its record
		from   *Run                 // the session it left, when its refusal kept one
	)
	for k := o.Stage; k < len(seats); k++ {
		seat := seats[k]
		key := StageKey(o.IdempotencyKey, o.Stage, k)
		_, freshID, err := DeriveIdentity(key, o.TurnID)
		if err != nil {
			return res, err
		}
		at := kernel.StageAttempt{Stage: k, Node: node, Harness: string(seat.Harness), Provider: seat.Provider, Model: seat.Model, RunID: freshID}
		link := SeatLink{Logical: logical, Node: node, Tried: slices.Clone(res.Stages)}
		stage := k
		var native *nativeStage
		if from != nil {
			if native, link.ContinuityReason, err = o.nativeRequest(ctx, from, prevID, freshID, k, providers[k-o.Stage]); err != nil {
				return res, err
			}
		}
		if prev != nil {
			next := freshID
			if native != nil {
				next = native.id
			}
			if err := moveOn(ctx, o.Store, prevID, *prev, next); err != nil {
				return res, err
			}
			if o.MovedOn != nil {
				o.MovedOn(*prev)
			}
		}
		var run *Run
		if native != nil {
			if ended, err := endedBeforeAdmission(ctx, o.Store, native.id); err != nil {
				return res, err
			} else if ended != nil {
				// A start before sent this continuation and the chain moved
				// on from it before the provider admitted anything: its
				// recorded end stands, and the session goes on to the next
				// stage as it was.
				res.Stages = append(res.Stages, *ended)
				prev, prevID = &res.Stages[len(res.Stages)-1], native.id
				continue
			}
			at.RunID, at.Continuity = native.id, kernel.ContinuityNative
			link.Continuation = native.req
			run, err = o.continueStage(ctx, from, native, &link, stage)
			var refused *nativeRefusedError
			if errors.As(err, &refused) {
				// The provider admitted nothing: the stage starts fresh
				// after all, and the chain now leads there.
				at.RunID, at.Continuity, link.Continuation, link.ContinuityReason = freshID, "", nil, refused.reason
				native = nil
				if err := moveOn(ctx, o.Store, prevID, *prev, freshID); err != nil {
					return res, err
				}
			} else if err != nil {
				if q, ok := errors.AsType[*contract.QuotaRefusalError](err); !ok || q.Run != nil {
					kernel.EndStage(&at, err)
					res.Stages = append(res.Stages, at)
					return res, err
				}
				// This stage's account refused the continuation before
				// admitting it: the session is as the stage before left
				// it, for the next stage.
			}
		}
		if native == nil {
			create, turn, err2 := StageRequest(o.Profile, k, key, o.TurnID, o.Task)
			if err2 != nil {
				return res, fmt.Errorf("%w: %w", ErrInvalidOptions, err2)
			}
			run, err = StartRetainedRun(ctx, StartOptions{Provider: providers[k-o.Stage], Store: o.Store, Environment: create, Turn: turn,
				Stage: &stage, OnAdmission: o.OnAdmission, Logger: o.Logger, Seat: &link, CredentialKey: o.CredentialKey})
			if err == nil {
				at.Continuity, at.ContinuityReason = kernel.ContinuityFresh, link.ContinuityReason
			}
		}
		if err == nil {
			res.Run = run
			at.NativeSessionID = run.nativeSessionID(ctx)
			if o.Follow == nil {
				at.Outcome = kernel.StageRunning
				res.Stages = append(res.Stages, at)
				return res, nil
			}
			err = o.Follow(ctx, run, at)
			if at.NativeSessionID == "" {
				at.NativeSessionID = run.nativeSessionID(ctx)
			}
		}
		outcome := kernel.EndStage(&at, err)
		res.Stages = append(res.Stages, at)
		if outcome != kernel.StageQuotaRefused || k == len(seats)-1 || ctx.Err() != nil {
			return res, err
		}
		switch {
		case run != nil:
			from = nil
			if ref, ok := kernel.RefusalKeepsSession(err, run.env); ok && contract.SameRunControlRef(ref.Ref(), run.ref.Run.Ref()) {
				from = run
			}
		case native == nil:
			// Refused at its create or dispatch: no session to go on in.
			from = nil
		}
		prev, prevID = &res.Stages[len(res.Stages)-1], at.RunID
	}
	return res, nil
}

// nativeStage is a stage that goes on natively in a kept session: its
// record id and the continuation it sends.
type nativeStage struct {
	id   string
	req  *contract.NativeContextContinuationRequest
	turn contract.NativeContextContinuationTurn
}

// nativeRefusedError is a native continuation the provider refused
// without admitting anything (conflict, boundary_mismatch, …): the stage
// starts fresh instead, for reason.
type nativeRefusedError struct{ reason string }

func (e *nativeRefusedError) Error() string { return e.reason }

// nativeRequest decides how stage k, served by stageProvider, starts after
// the refused stage recorded as prevID left the session of from: the
// native continuation it sends (the one a start before recorded, or a
// new one when the kernel's rule proves continuity), or nil with why it
// starts fresh instead (the decision a start before recorded for
// freshID, or the rule's reason).
func (o *SeatedOptions) nativeRequest(ctx context.Context, from *Run, prevID, freshID string, k int, stageProvider contract.Provider) (*nativeStage, string, error) {
	provider := stageProvider.Name()
	parent, err := Load(ctx, o.Store, from.ref.Record)
	if err != nil {
		return nil, "", err
	}
	op := StageKey(o.IdempotencyKey, o.Stage, k) + "/" + o.TurnID
	id, err := NativeContinuationRecordID(parent.Intent.IdempotencyKey, op)
	if err != nil {
		return nil, "", err
	}
	task, model := o.Task, o.Profile.Seats[k].Model
	ns := &nativeStage{id: id, turn: contract.NativeContextContinuationTurn{Prompt: &task, Model: &model}}
	prev, err := Load(ctx, o.Store, prevID)
	if err != nil {
		return nil, "", err
	}
	if prev.Seat != nil && prev.Seat.Next != "" {
		next := prev.Seat.Next
		// A start before decided: keep its decision.
		rec, err := Load(ctx, o.Store, next)
		switch {
		case errors.Is(err, ErrNoRecord):
			// It died before the stage's intent was durable: decide again.
		case err != nil:
			return nil, "", err
		case next == id && rec.Seat != nil && rec.Seat.Continuation != nil:
			if d, err := contract.NativeContextContinuationTurnDigest(ns.turn); err != nil || d != rec.Seat.Continuation.TurnDigest {
				return nil, "", &MismatchError{What: fmt.Sprintf("stage %d's recorded native continuation", k), Field: "turnDigest", Want: rec.Seat.Continuation.TurnDigest, Got: d}
			}
			ns.req = rec.Seat.Continuation
			return ns, "", nil
		case next == freshID && rec.Seat != nil:
			return nil, rec.Seat.ContinuityReason, nil
		}
	}
	if !kernel.SameProvider(from.provider, stageProvider) {
		// Another provider of the same name (another endpoint or
		// account): the session's environment would take this stage's
		// turn to the provider that refused.
		return nil, fmt.Sprintf("the session is held by another %s provider than this stage's", provider), nil
	}
	_, nc, reason := kernel.OpenNativeSession(ctx, from.env, from.ref.Run, provider)
	if reason != "" {
		return nil, reason, nil
	}
	proof, reason := kernel.ProveNativeBoundary(ctx, nc, from.ref.Run)
	if reason != "" {
		return nil, reason, nil
	}
	if ns.req, err = contract.NewNativeContextContinuationRequest(op, ns.turn, from.ref.Run, *proof); err != nil {
		return nil, fmt.Sprintf("the continuation request is invalid: %v", err), nil
	}
	return ns, "", nil
}

// continueStage sends stage k's native continuation of from's session,
// admitted as a retained run with link (ContinueNativeRetained), and
// returns the continued run's handle. A refusal that admitted nothing is
// a *nativeRefusedError, its record ended failed; a quota refusal of the
// stage's account is returned as it is (a *contract.QuotaRefusalError
// without a run).
func (o *SeatedOptions) continueStage(ctx context.Context, from *Run, ns *nativeStage, link *SeatLink, k int) (*Run, error) {
	cont, err := from.continueNativeRetained(ctx, NativeContinueOptions{Request: ns.req, OnAdmission: o.OnAdmission, CredentialKey: o.CredentialKey,
		Continuation: contract.NativeContinuationOptions{Turn: ns.turn,
			Credential: contract.CredentialRequestFor(o.Profile, k, contract.CredentialOnTurn)}}, link, &k, o.TurnID)
	if err != nil {
		return nil, err
	}
	if !cont.Result.Succeeded() {
		ack := cont.Result.Acknowledgement
		if ack.Status == contract.ContinuationStatusTransportFailure {
			return nil, fmt.Errorf("retained: continuing run %s natively (outcome unknown): %s", from.ref.Run.RunID, derefOr(ack.Message, ack.Status))
		}
		reason := "the provider refused the native continuation: " + ack.Status
		if err := updateDocument(ctx, o.Store, ns.id, func(_ *document, r *store.Run) error {
			if !r.Status.Terminal() {
				r.Status = store.StatusFailed
			}
			return nil
		}); err != nil {
			return nil, err
		}
		return nil, &nativeRefusedError{reason: reason}
	}
	return attach(ctx, from.provider, o.Store, from.env, cont.ControlRef, nil, from.now, from.log)
}

// endedBeforeAdmission is how the native stage recorded as id ended when
// the chain moved on from it before the provider admitted its
// continuation (a quota refusal of the stage's account); nil when there
// is no such record.
func endedBeforeAdmission(ctx context.Context, s store.Store, id string) (*kernel.StageAttempt, error) {
	rec, err := Load(ctx, s, id)
	if errors.Is(err, ErrNoRecord) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if rec.Seat == nil || rec.Seat.MovedOn == nil || rec.Dispatched != nil || rec.Intent.NativeContinuation == nil {
		return nil, nil
	}
	at := *rec.Seat.MovedOn
	return &at, nil
}

// nativeSessionID is the native session the run's record names (NSO-02);
// "" when none was observed or the record cannot be read now.
// A session that reports one the record does not name yet is bound to
// the record first.
func (r *Run) nativeSessionID(ctx context.Context) string {
	for range 2 {
		rec, err := Load(ctx, r.store, r.ref.Record)
		if err != nil {
			return ""
		}
		if rec.Native != nil {
			return rec.Native.NativeSessionID
		}
		if err := r.bindNative(ctx, nil); err != nil {
			r.log.WarnContext(ctx, "retained: could not record the run's native session", "run", r.ref.Record, "error", err)
			return ""
		}
	}
	return ""
}

func derefOr(s *string, or string) string {
	if s == nil || *s == "" {
		return or
	}
	return *s
}

// moveOn records that the chain moved on from the stage recorded as id
// (how it ended: at) to the stage recorded as next. A record that has
// not ended ends failed: the stage was refused. The record must be a
// stage of a seated run.
func moveOn(ctx context.Context, s store.Store, id string, at kernel.StageAttempt, next string) error {
	return updateDocument(ctx, s, id, func(d *document, r *store.Run) error {
		if d.Seat == nil {
			return fmt.Errorf("%w: run %s is no stage of a seated run", ErrInvalidOptions, id)
		}
		a := at
		d.Seat.MovedOn, d.Seat.Next = &a, next
		if !r.Status.Terminal() {
			r.Status = store.StatusFailed
		}
		return nil
	})
}

// Latest is the record of the stage a seated retained run is on: from
// the record id names, the chain's records are followed (SeatLink.Next)
// to the last one admitted. A record of no seated run is its own latest.
// A chain longer than its profile could have is an error.
func Latest(ctx context.Context, s store.Store, id string) (*Record, error) {
	rec, err := Load(ctx, s, id)
	if err != nil {
		return nil, err
	}
	for range maxChain {
		if rec.Seat == nil || rec.Seat.Next == "" {
			return rec, nil
		}
		next, err := Load(ctx, s, rec.Seat.Next)
		if errors.Is(err, ErrNoRecord) {
			// The chain moved on and the process died before the next
			// stage's intent was durable: this is the last one admitted.
			return rec, nil
		}
		if err != nil {
			return nil, err
		}
		rec = next
	}
	return nil, fmt.Errorf("retained: the seat chain from run %s is longer than %d stages", id, maxChain)
}
