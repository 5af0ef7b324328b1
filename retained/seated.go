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
// from o.Stage on, each stage a retained run of its own (StartRetainedRun,
// its admission records intent → environment → dispatched durable in
// the store) of the stage's projection on the provider o.Accounts
// resolves for it, with the stage's credential request on its create
// and turn. Every stage from o.Stage on is resolved, and checked to be
// one its provider can honor, before any runs (PRF-07: a
// *kernel.SeatUnresolvedError or *kernel.StageUnsupportedError). A typed
// quota refusal of a stage — at its create, at its dispatch, or, when
// o.Follow follows it, part way through its turn — moves the chain on to
// the next authored stage under the same logical id, node and turn id
// and the caller's context (its deadline): the refused stage's record
// says how it ended and names the next one (SeatLink.MovedOn, Next), and
// the next stage's record names every stage tried before it. Each stage
// starts a fresh session in its own environment (continuity
// kernel.ContinuityFresh): the refused stage's environment is left to
// its provider, as a retained run's is. Every other end — success, a
// failure, or the last stage's refusal — ends the chain; the error is
// the stage's. Starting again with the same options replays each stage's
// admission.
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
	for k := o.Stage; k < len(seats); k++ {
		seat := seats[k]
		key := StageKey(o.IdempotencyKey, o.Stage, k)
		_, record, err := DeriveIdentity(key, o.TurnID)
		if err != nil {
			return res, err
		}
		at := kernel.StageAttempt{Stage: k, Node: node, Harness: string(seat.Harness), Provider: seat.Provider, Model: seat.Model, RunID: record}
		create, turn, err := StageRequest(o.Profile, k, key, o.TurnID, o.Task)
		if err != nil {
			return res, fmt.Errorf("%w: %w", ErrInvalidOptions, err)
		}
		stage := k
		run, err := StartRetainedRun(ctx, StartOptions{Provider: providers[k-o.Stage], Store: o.Store, Environment: create, Turn: turn,
			Stage: &stage, OnAdmission: o.OnAdmission, Logger: o.Logger,
			Seat: &SeatLink{Logical: logical, Node: node, Tried: slices.Clone(res.Stages)}})
		if err == nil {
			res.Run = run
			at.Continuity = kernel.ContinuityFresh
			if k > o.Stage {
				at.ContinuityReason = "each stage of a retained run starts a session of its own"
			}
			if o.Follow == nil {
				at.Outcome = kernel.StageRunning
				res.Stages = append(res.Stages, at)
				return res, nil
			}
			err = o.Follow(ctx, run, at)
		}
		outcome := kernel.EndStage(&at, err)
		res.Stages = append(res.Stages, at)
		if outcome != kernel.StageQuotaRefused || k == len(seats)-1 || ctx.Err() != nil {
			return res, err
		}
		_, next, err := DeriveIdentity(StageKey(o.IdempotencyKey, o.Stage, k+1), o.TurnID)
		if err != nil {
			return res, err
		}
		if err := moveOn(ctx, o.Store, record, at, next); err != nil {
			return res, err
		}
		if o.MovedOn != nil {
			o.MovedOn(at)
		}
	}
	return res, nil
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
