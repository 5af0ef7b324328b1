package kernel

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/harness"
	"github.com/agentrt/agentrt/profile"
)

// StageUnsupportedError is a seat stage whose provider cannot honor the
// stage's projection (profile.Project): a seated run refuses with it (a
// *RunError's cause, ErrRefused) before any stage runs (PRF-07), and so
// does a retained run of a seated profile before anything is admitted.
type StageUnsupportedError struct {
	// Stage is the stage's index in the profile's seats; Pointer its
	// JSON pointer in the profile ("/seats/1"), "" for a profile without
	// seats (stage 0 is the profile itself).
	Stage   int
	Pointer string
	// Provider and Model are the seat's.
	Provider string
	Model    string
	// Missing lists the JSON pointers, in the stage's projection, of
	// what the provider cannot honor ("/tools", "/model/reasoningEffort").
	Missing []string
	// Err is the refusal: one *profile.UnsupportedError per feature,
	// joined.
	Err error
}

func (e *StageUnsupportedError) Error() string {
	if e.Pointer == "" {
		return fmt.Sprintf("the profile (%s on %s): the provider cannot honor %s: %v; give the run a provider that can, or change the profile",
			e.Model, e.Provider, strings.Join(e.Missing, ", "), e.Err)
	}
	return fmt.Sprintf("stage %d (%s: %s on %s): the provider cannot honor %s: %v; give the stage a provider that can, or change the stage",
		e.Stage, e.Pointer, e.Model, e.Provider, strings.Join(e.Missing, ", "), e.Err)
}

// Unwrap returns the refusal.
func (e *StageUnsupportedError) Unwrap() error { return e.Err }

// ProjectStage returns the provider-facing profile of seat stage k of p
// (profile.Project; for a profile without seats, k must be 0) after
// checking that a provider with capabilities caps can honor it: its
// profile capabilities, the harness's reasoning effort and the harness's
// model. It is the one check every run makes before any spend — an exact
// run at its start, a seated run for every stage before the first runs,
// a retained run before its admission. A stage the provider cannot honor
// is a *StageUnsupportedError naming the stage and every missing
// capability; a stage that does not exist is a plain error.
func ProjectStage(caps *contract.Capabilities, p *profile.Profile, k int) (*profile.Profile, error) {
	if p == nil {
		return nil, errors.New("kernel: no profile")
	}
	if len(p.Seats) == 0 && k != 0 {
		return nil, fmt.Errorf("the profile has no seats; stage %d does not exist", k)
	}
	eff, err := profile.Project(p, k)
	if err != nil {
		return nil, err
	}
	if caps == nil {
		return nil, errors.New("kernel: the provider declared no capabilities")
	}
	var errs []error
	if err := contract.CheckProfileSupport(&caps.Profile, eff); err != nil {
		errs = append(errs, err)
	}
	model := ""
	if eff.Model != nil && eff.Model.Default != nil {
		model = *eff.Model.Default
	}
	if e := effortOf(eff); e != "" && eff.Harness != "" {
		if !slices.Contains(harness.ReasoningEfforts(eff.Harness), e) || !harness.HonorsEffort(eff.Harness) {
			errs = append(errs, &profile.UnsupportedError{Path: "/model/reasoningEffort",
				Reason: fmt.Sprintf("harness %s cannot express reasoning effort %q", eff.Harness, e)})
		}
	}
	if eff.Harness != "" && model != "" && !harness.SupportsModel(eff.Harness, model) {
		errs = append(errs, &profile.UnsupportedError{Path: "/model/default",
			Reason: fmt.Sprintf("harness %s cannot run model %s", eff.Harness, model)})
	}
	if len(errs) == 0 {
		return eff, nil
	}
	e := &StageUnsupportedError{Stage: k, Pointer: "", Provider: derefOr(modelProvider(eff), ""), Model: model,
		Missing: missingPaths(errs), Err: errors.Join(errs...)}
	if len(p.Seats) > 0 {
		e.Pointer = fmt.Sprintf("/seats/%d", k)
	}
	return eff, e
}

// CheckStages checks, before any spend, that each seat stage from k0 on
// can be honored by its provider: providers[i] runs stage k0+i. The first
// stage that cannot is a *StageUnsupportedError; a provider whose
// capabilities cannot be read fails the check with that error, naming the
// stage.
func CheckStages(ctx context.Context, p *profile.Profile, k0 int, providers []contract.Provider) error {
	for i, prov := range providers {
		k := k0 + i
		caps, err := prov.Capabilities(ctx)
		if err != nil {
			return fmt.Errorf("stage %d (/seats/%d): reading %s's capabilities: %w", k, k, prov.Name(), err)
		}
		if _, err := ProjectStage(caps, p, k); err != nil {
			return err
		}
	}
	return nil
}

// missingPaths lists the JSON pointers of the refusals in errs, each
// once, in order.
func missingPaths(errs []error) []string {
	var out []string
	var walk func(error)
	walk = func(err error) {
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			if _, typed := err.(contract.Unsupported); !typed {
				for _, e := range j.Unwrap() {
					walk(e)
				}
				return
			}
		}
		path := "/"
		if ue, ok := errors.AsType[*profile.UnsupportedError](err); ok {
			path = ue.Path
		}
		if !slices.Contains(out, path) {
			out = append(out, path)
		}
	}
	for _, e := range errs {
		walk(e)
	}
	return out
}

func modelProvider(p *profile.Profile) *string {
	if p.Model == nil {
		return nil
	}
	return p.Model.Provider
}
