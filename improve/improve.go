package improve

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentrt/agentrt/candidate"
	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/store"
)

// Refusals of the production path. Each step's error wraps one of them.
var (
	// ErrDigestMismatch: a record's carried digest is not its self-digest.
	ErrDigestMismatch = candidate.ErrDigestMismatch
	// ErrUnknown: the record a step names was never recorded.
	ErrUnknown = errors.New("improve: no such recorded improvement")
	// ErrBinding: a digest a record names does not bind the record before it.
	ErrBinding = errors.New("improve: the record does not bind its predecessor")
	// ErrKeyConflict: another request already used this step's key.
	ErrKeyConflict = errors.New("improve: a different request already holds this key")
	// ErrNotApproved: the proposal's review did not approve it.
	ErrNotApproved = errors.New("improve: the proposal is not approved")
	// ErrExpired: the activation's authorization has expired.
	ErrExpired = errors.New("improve: the activation has expired")
	// ErrBaseChanged: a target no longer holds the expected base.
	ErrBaseChanged = errors.New("improve: a target's base changed")
	// ErrAlreadyExecuted: the activation was executed (or is executing).
	ErrAlreadyExecuted = errors.New("improve: the activation already executed")
	// ErrUnsupported: the activation asks for something this path does
	// not do.
	ErrUnsupported = errors.New("improve: unsupported activation")
	// ErrApply: a target refused the write.
	ErrApply = errors.New("improve: applying a target failed")
)

// Run kinds and idempotency scopes of the path.
const (
	KindProposalRun   = "improve-proposal"
	KindActivationRun = "improve-activation"

	scopeProposal   = "improve/proposal"
	scopeReview     = "improve/review"
	scopeActivation = "improve/activation"
)

// Service is the production path over a run store and the caller's
// targets.
type Service struct {
	Store   store.Store
	Targets Targets
	// Now, when not nil, replaces time.Now.
	Now func() time.Time
}

// Recorded is what a step recorded: the record's digest and the run that
// holds it. Replayed is set when the same request had already been
// recorded and nothing new was written.
type Recorded struct {
	Digest   string `json:"digest"`
	RunID    string `json:"runId"`
	Replayed bool   `json:"replayed"`
}

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// RunID returns the id of the run that records the proposal or
// activation with this digest.
func RunID(digest string) string { return "improve-" + strings.TrimPrefix(digest, "sha256:") }

// parseSelfDigested decodes data, validates it with parse and checks that
// its carried digest is its self-digest.
func parseSelfDigested[T any](data []byte, parse func([]byte) (*T, error)) (*T, canonjson.Value, string, error) {
	doc, err := parse(data)
	if err != nil {
		return nil, canonjson.Value{}, "", err
	}
	v, err := canonjson.ToValue(doc)
	if err != nil {
		return nil, canonjson.Value{}, "", err
	}
	want, err := candidate.SelfDigestValue(v)
	if err != nil {
		return nil, canonjson.Value{}, "", err
	}
	got := str(v, "digest")
	if got != want {
		return nil, canonjson.Value{}, "", fmt.Errorf("%w: carried %s, recomputed %s", ErrDigestMismatch, got, want)
	}
	return doc, v, want, nil
}

// claim records one idempotent transition: a new key is claimed, the
// same request under the key replays, a different one conflicts.
func (s *Service) claim(ctx context.Context, scope, key, requestDigest string) (replayed bool, err error) {
	rec, created, err := s.Store.ClaimIdempotency(ctx, store.Idempotency{
		Scope: scope, Key: key, RequestDigest: requestDigest,
		Result: canonjson.ObjectValue([]canonjson.Member{{Name: "digest", Value: canonjson.StringValue(requestDigest)}}),
	})
	if err != nil {
		return false, err
	}
	if created {
		return false, nil
	}
	if rec.RequestDigest != requestDigest {
		return false, fmt.Errorf("%w: %s key %q is held by %s, not %s", ErrKeyConflict, scope, key, rec.RequestDigest, requestDigest)
	}
	return true, nil
}

// createRun stores a run unless it is already there (a replay after a
// crash between the claim and the run).
func (s *Service) createRun(ctx context.Context, id, kind string, doc canonjson.Value) error {
	now := s.now()
	_, err := s.Store.CreateRun(ctx, store.Run{ID: id, Kind: kind, Status: store.StatusPending, CreatedAt: now, UpdatedAt: now, Doc: doc})
	if errors.Is(err, store.ErrExists) {
		return nil
	}
	return err
}

// ProposeImprovement records a proposal: a valid AgentImprovementProposal
// (which carries a passing, sufficiently powered measured comparison)
// whose digest is its self-digest. The proposal's runId is the key: the
// same proposal replays, another proposal for that run conflicts.
func (s *Service) ProposeImprovement(ctx context.Context, data []byte) (Recorded, error) {
	p, v, digest, err := parseSelfDigested(data, candidate.ParseImprovementProposal)
	if err != nil {
		return Recorded{}, fmt.Errorf("proposal: %w", err)
	}
	replayed, err := s.claim(ctx, scopeProposal, p.RunID, digest)
	if err != nil {
		return Recorded{}, fmt.Errorf("proposal: %w", err)
	}
	id := RunID(digest)
	doc := canonjson.ObjectValue([]canonjson.Member{{Name: "proposal", Value: v}})
	if err := s.createRun(ctx, id, KindProposalRun, doc); err != nil {
		return Recorded{}, fmt.Errorf("proposal: %w", err)
	}
	return Recorded{Digest: digest, RunID: id, Replayed: replayed}, nil
}

// ReviewProposal records the one review of a recorded proposal. The
// review must name the proposal's digest. Approval lets the path go on;
// reject or request-changes ends it. The proposal digest is the key: the
// same review replays, a different one conflicts.
func (s *Service) ReviewProposal(ctx context.Context, data []byte) (Recorded, error) {
	r, v, digest, err := parseSelfDigested(data, candidate.ParseImprovementReview)
	if err != nil {
		return Recorded{}, fmt.Errorf("review: %w", err)
	}
	id := RunID(r.ProposalDigest)
	run, err := s.Store.GetRun(ctx, id)
	if err != nil || run.Kind != KindProposalRun {
		return Recorded{}, fmt.Errorf("review: proposal %s: %w", r.ProposalDigest, unknown(err))
	}
	replayed, err := s.claim(ctx, scopeReview, r.ProposalDigest, digest)
	if err != nil {
		return Recorded{}, fmt.Errorf("review: %w", err)
	}
	_, err = s.Store.UpdateRun(ctx, id, func(run *store.Run) error {
		if prev, ok := run.Doc.Get("review"); ok {
			if str(prev, "digest") != digest {
				return fmt.Errorf("%w: proposal %s already has review %s", ErrKeyConflict, r.ProposalDigest, str(prev, "digest"))
			}
			return nil
		}
		run.Doc = run.Doc.With("review", v)
		run.Status = store.StatusCancelled
		if r.Decision == "approve" {
			run.Status = store.StatusCompleted
		}
		run.UpdatedAt = s.now()
		return nil
	})
	if err != nil {
		return Recorded{}, fmt.Errorf("review: %w", err)
	}
	return Recorded{Digest: digest, RunID: id, Replayed: replayed}, nil
}

// CreateActivation records an activation of an approved proposal. It
// must name the proposal, its approving review, the measured experiment
// and its candidate; it may only target surfaces the proposal changes;
// and it must not have expired. The review and intent are the key: the
// same activation replays, another one conflicts.
func (s *Service) CreateActivation(ctx context.Context, data []byte) (Recorded, error) {
	a, v, digest, err := parseSelfDigested(data, candidate.ParseImprovementActivation)
	if err != nil {
		return Recorded{}, fmt.Errorf("activation: %w", err)
	}
	run, err := s.Store.GetRun(ctx, RunID(a.ProposalDigest))
	if err != nil || run.Kind != KindProposalRun {
		return Recorded{}, fmt.Errorf("activation: proposal %s: %w", a.ProposalDigest, unknown(err))
	}
	if err := checkBindings(a, run.Doc); err != nil {
		return Recorded{}, fmt.Errorf("activation: %w", err)
	}
	if a.Intent != intentActivate && a.Intent != intentRestore {
		return Recorded{}, fmt.Errorf("activation: %w: intent %q", ErrUnsupported, a.Intent)
	}
	expires, err := time.Parse(time.RFC3339Nano, a.ExpiresAt)
	if err != nil {
		return Recorded{}, fmt.Errorf("activation: expiresAt: %w", err)
	}
	if !s.now().Before(expires) {
		return Recorded{}, fmt.Errorf("activation: %w at %s", ErrExpired, a.ExpiresAt)
	}
	replayed, err := s.claim(ctx, scopeActivation, a.ReviewDigest+" "+a.Intent, digest)
	if err != nil {
		return Recorded{}, fmt.Errorf("activation: %w", err)
	}
	id := RunID(digest)
	doc := canonjson.ObjectValue([]canonjson.Member{{Name: "activation", Value: v}})
	if err := s.createRun(ctx, id, KindActivationRun, doc); err != nil {
		return Recorded{}, fmt.Errorf("activation: %w", err)
	}
	return Recorded{Digest: digest, RunID: id, Replayed: replayed}, nil
}

// checkBindings checks an activation against its recorded proposal and
// review.
func checkBindings(a *candidate.ImprovementActivation, doc canonjson.Value) error {
	review, ok := doc.Get("review")
	switch {
	case !ok:
		return fmt.Errorf("%w: proposal %s has no review", ErrNotApproved, a.ProposalDigest)
	case str(review, "digest") != a.ReviewDigest:
		return fmt.Errorf("%w: reviewDigest %s is not the proposal's review %s", ErrBinding, a.ReviewDigest, str(review, "digest"))
	case str(review, "decision") != "approve":
		return fmt.Errorf("%w: the review decided %s", ErrNotApproved, str(review, "decision"))
	}
	proposal, _ := doc.Get("proposal")
	eval := at(proposal, "evaluation")
	if str(at(eval, "decision"), "outcome") != "ship" {
		return fmt.Errorf("%w: the measured comparison did not pass", ErrNotApproved)
	}
	experiment := at(eval, "experiment")
	if got := str(experiment, "digest"); got != a.ExperimentDigest {
		return fmt.Errorf("%w: experimentDigest %s is not the measured experiment %s", ErrBinding, a.ExperimentDigest, got)
	}
	want := str(at(experiment, "candidate"), "digest")
	if str(eval, "kind") == candidate.KindProfileMeasuredComparisonValue {
		want = str(at(experiment, "candidate"), "stateDigest")
		ref, _ := experiment.Get("executionRef")
		if a.ExecutionRef != nil {
			got, err := canonjson.ToValue(a.ExecutionRef)
			if err != nil || !canonjson.Equal(got, ref) {
				return fmt.Errorf("%w: executionRef is not the measured runner", ErrBinding)
			}
		}
	}
	if a.CandidateDigest != want {
		return fmt.Errorf("%w: candidateDigest %s is not the measured candidate %s", ErrBinding, a.CandidateDigest, want)
	}
	changed := make([]string, 0)
	for _, s := range at(proposal, "changedSurfaces").Items() {
		changed = append(changed, s.Str())
	}
	for _, t := range a.Targets {
		if !slices.Contains(changed, t.Surface) {
			return fmt.Errorf("%w: target surface %s is not one the proposal changes (%s)", ErrBinding, t.Surface, strings.Join(changed, ", "))
		}
	}
	return nil
}

func unknown(err error) error {
	if err == nil || errors.Is(err, store.ErrNotFound) {
		return ErrUnknown
	}
	return err
}

func at(v canonjson.Value, names ...string) canonjson.Value {
	for _, n := range names {
		v, _ = v.Get(n)
	}
	return v
}

func str(v canonjson.Value, name string) string {
	m, _ := v.Get(name)
	return m.Str()
}
