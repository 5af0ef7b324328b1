package improve

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentrt/agentrt/candidate"
	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/store"
)

const isoMillis = "2006-01-02T15:04:05.000Z"

// The intents of an activation.
const (
	intentActivate = "activate-candidate"
	intentRestore  = "restore-baseline"
)

// Execution is the recorded outcome of an activation.
type Execution struct {
	RunID  string                                 `json:"runId"`
	Result *candidate.ImprovementActivationResult `json:"result"`
}

// ExecuteActivation executes a recorded activation at most once. It takes
// the activation's run (pending → running, compare-and-set, so a second
// caller is refused with ErrAlreadyExecuted), refuses an expired
// activation, and reads every target through Targets.
//
// An activate-candidate activation writes the candidate to each target
// when every target holds its expectedBaseDigest. A restore-baseline
// activation undoes one: when every target holds the candidate, it
// writes each target's expectedBaseDigest back. When every target already
// holds what the activation would write, nothing is written and the
// outcome is already-applied; any other mix is a conflict naming each
// target's current digest, and nothing is written either.
//
// Whatever happens after the run is taken is recorded as the
// activation's one AgentImprovementActivationResult, keyed by the
// activation digest; a later call returns that result with
// ErrAlreadyExecuted.
func (s *Service) ExecuteActivation(ctx context.Context, activationDigest string) (Execution, error) {
	id := RunID(activationDigest)
	attempted := s.now().UTC()
	var act candidate.ImprovementActivation
	run, err := s.Store.UpdateRun(ctx, id, func(r *store.Run) error {
		if r.Kind != KindActivationRun {
			return ErrUnknown
		}
		if r.Status != store.StatusPending {
			return ErrAlreadyExecuted
		}
		r.Status = store.StatusRunning
		r.Doc = r.Doc.With("attemptedAt", canonjson.StringValue(attempted.Format(isoMillis)))
		r.UpdatedAt = attempted
		return nil
	})
	switch {
	case errors.Is(err, ErrAlreadyExecuted):
		prev, _ := s.recorded(ctx, id)
		return prev, fmt.Errorf("activation %s: %w", activationDigest, ErrAlreadyExecuted)
	case err != nil:
		return Execution{}, fmt.Errorf("activation %s: %w", activationDigest, unknown(err))
	}
	if err := canonjson.FromValue(at(run.Doc, "activation"), &act); err != nil {
		return Execution{}, err
	}
	outcome, refusal := s.execute(ctx, id, &act, attempted)
	result := candidate.ImprovementActivationResult{
		Kind:           candidate.KindImprovementActivationResultValue,
		IdempotencyKey: activationDigest,
		AttemptedAt:    attempted.Format(isoMillis),
		CompletedAt:    s.now().UTC().Format(isoMillis),
		Outcome:        outcome,
	}
	if result.CompletedAt < result.AttemptedAt {
		result.CompletedAt = result.AttemptedAt
	}
	if result.Digest, err = candidate.SelfDigest(&result); err != nil {
		return Execution{}, err
	}
	v, err := canonjson.ToValue(&result)
	if err != nil {
		return Execution{}, err
	}
	if _, err := candidate.ParseImprovementActivationResult(canonjson.Marshal(v)); err != nil {
		return Execution{}, fmt.Errorf("activation %s: result: %w", activationDigest, err)
	}
	_, err = s.Store.UpdateRun(ctx, id, func(r *store.Run) error {
		r.Doc = r.Doc.With("result", v)
		r.Status = store.StatusFailed
		if outcome.Status == "applied" || outcome.Status == "already-applied" {
			r.Status = store.StatusCompleted
		}
		r.UpdatedAt = s.now()
		return nil
	})
	if err != nil {
		return Execution{}, fmt.Errorf("activation %s: recording the result (the targets may have changed): %w", activationDigest, err)
	}
	exec := Execution{RunID: id, Result: &result}
	if refusal != nil {
		return exec, fmt.Errorf("activation %s: %w", activationDigest, refusal)
	}
	return exec, nil
}

// execute decides the outcome of a taken activation.
func (s *Service) execute(ctx context.Context, id string, a *candidate.ImprovementActivation, attempted time.Time) (candidate.ActivationOutcome, error) {
	expires, err := time.Parse(time.RFC3339Nano, a.ExpiresAt)
	if err != nil || !attempted.Before(expires) {
		return candidate.ActivationOutcome{Status: "expired"}, fmt.Errorf("%w at %s", ErrExpired, a.ExpiresAt)
	}
	current := make([]string, len(a.Targets))
	for i, t := range a.Targets {
		d, err := s.Targets.Base(ctx, t.Surface, t.Identity)
		if err != nil {
			return failure("failed", "BASE_UNREADABLE", fmt.Sprintf("reading %s %s: %v", t.Surface, t.Identity, err)), fmt.Errorf("%w: %w", ErrApply, err)
		}
		current[i] = d
	}
	// from and to are what a target holds before and after the write.
	from := func(t candidate.ActivationTarget) string { return t.ExpectedBaseDigest }
	to := func(candidate.ActivationTarget) string { return a.CandidateDigest }
	if a.Intent == intentRestore {
		from, to = to, from
	}
	ready, done := true, true
	for i, t := range a.Targets {
		ready = ready && current[i] == from(t)
		done = done && current[i] == to(t)
	}
	switch {
	case done && !ready:
		out := candidate.ActivationOutcome{Status: "already-applied"}
		for i, t := range a.Targets {
			out.Targets = append(out.Targets, candidate.ActivationOutcomeTarget{Surface: t.Surface, Identity: t.Identity, CurrentDigest: &current[i]})
		}
		return out, nil
	case !ready:
		out := candidate.ActivationOutcome{Status: "conflict"}
		for i, t := range a.Targets {
			out.Targets = append(out.Targets, candidate.ActivationOutcomeTarget{Surface: t.Surface, Identity: t.Identity, CurrentDigest: &current[i]})
		}
		return out, ErrBaseChanged
	}
	out := candidate.ActivationOutcome{Status: "applied", TransactionID: &id}
	for i, t := range a.Targets {
		after, err := s.Targets.Apply(ctx, t.Surface, t.Identity, to(t))
		if err != nil {
			status := "failed"
			if i > 0 {
				status = "indeterminate"
			}
			return failure(status, "APPLY_FAILED", fmt.Sprintf("applying %s %s: %v", t.Surface, t.Identity, err)), fmt.Errorf("%w: %w", ErrApply, err)
		}
		out.Targets = append(out.Targets, candidate.ActivationOutcomeTarget{Surface: t.Surface, Identity: t.Identity, BeforeDigest: &current[i], AfterDigest: &after})
	}
	return out, nil
}

func failure(status, code, message string) candidate.ActivationOutcome {
	if r := []rune(message); len(r) > 1000 {
		message = string(r[:1000]) // within the 2,000 UTF-16 units a message may hold
	}
	return candidate.ActivationOutcome{Status: status, Code: &code, Message: &message}
}

// recorded returns an activation's recorded result, if any.
func (s *Service) recorded(ctx context.Context, id string) (Execution, error) {
	run, err := s.Store.GetRun(ctx, id)
	if err != nil {
		return Execution{}, err
	}
	v, ok := run.Doc.Get("result")
	if !ok {
		return Execution{RunID: id}, nil
	}
	var r candidate.ImprovementActivationResult
	if err := canonjson.FromValue(v, &r); err != nil {
		return Execution{}, err
	}
	return Execution{RunID: id, Result: &r}, nil
}

// Record is a recorded proposal or activation as Show returns it.
type Record struct {
	RunID  string          `json:"runId"`
	Kind   string          `json:"kind"`
	Status store.Status    `json:"status"`
	Doc    canonjson.Value `json:"record"`
}

// Show returns the recorded proposal (with its review) or activation
// (with its result) whose digest is given.
func (s *Service) Show(ctx context.Context, digest string) (Record, error) {
	run, err := s.Store.GetRun(ctx, RunID(digest))
	if err != nil || (run.Kind != KindProposalRun && run.Kind != KindActivationRun) {
		return Record{}, fmt.Errorf("%s: %w", digest, unknown(err))
	}
	return Record{RunID: run.ID, Kind: run.Kind, Status: run.Status, Doc: run.Doc}, nil
}
