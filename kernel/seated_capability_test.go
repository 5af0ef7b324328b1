package kernel_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/memory"
)

// seatToolsLater is a two-stage chain whose second stage replaces the
// tools map: only a provider that applies tools can honor stage 1.
const seatToolsLater = `{"name":"writer","harness":"cli-base","model":{"provider":"scripted","default":"scripted/first"},
 "seats":[{"harness":"cli-base","provider":"scripted","model":"scripted/first","selector":{"kind":"all-eligible"}},
          {"harness":"cli-base","provider":"scripted","model":"scripted/second","selector":{"kind":"seat","id":"team-b"},
           "tools":{"read":true}}]}`

// noToolsProvider declares that it cannot apply a tools map.
type noToolsProvider struct{ *spyProvider }

func (p noToolsProvider) Capabilities(ctx context.Context) (*contract.Capabilities, error) {
	c, err := p.spyProvider.Capabilities(ctx)
	if err != nil {
		return nil, err
	}
	cc := *c
	cc.Profile.Tools = false
	return &cc, nil
}

// PRF-07 (capabilities): every stage's projection is checked against its
// provider before the first turn. Stage 0 could run and spend; stage 1's
// provider cannot apply the tools map stage 1 authors. The run is refused
// with a *kernel.StageUnsupportedError naming stage 1 and /tools before
// stage 0 is created or sent anything, and nothing is reserved.
func TestSeatedPreflightRefusesUnsupportedLaterStage(t *testing.T) {
	first := spyOn(t, "scripted/first", false)
	second := noToolsProvider{spyOn(t, "scripted/second", false)}
	accounts := &chain{providers: []contract.Provider{first, second}}
	pool := testPool(t)
	before := pool.Readout()
	st := memory.New(nil)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := kernel.ExecuteSeated(ctx, kernel.SeatedRequest{Accounts: accounts, Request: kernel.Request{
		Profile: mustProfile(t, seatToolsLater), Task: "write a note", Store: st, Check: nonEmpty, RunID: "caps",
		Budget: pool, Reserve: ledger.Budget{Tokens: ptr(int64(100)), Iterations: ptr(int64(1))},
	}})
	re, ok := errors.AsType[*kernel.RunError](err)
	if !ok || re.Reason != kernel.ReasonRefused || !errors.Is(err, kernel.ErrRefused) {
		t.Fatalf("err %T %v; want the run refused", err, err)
	}
	su, ok := errors.AsType[*kernel.StageUnsupportedError](err)
	if !ok {
		t.Fatalf("err %v; want a *kernel.StageUnsupportedError", err)
	}
	if diff := cmp.Diff(kernel.StageUnsupportedError{Stage: 1, Pointer: "/seats/1", Provider: "scripted", Model: "scripted/second", Missing: []string{"/tools"}},
		*su, cmpIgnoreErr); diff != "" {
		t.Errorf("refusal (-want +got):\n%s", diff)
	}
	if !errors.Is(err, contract.ErrUnsupported) {
		t.Errorf("err %v; want it to match contract.ErrUnsupported", err)
	}
	if _, seen := first.seen(); len(seen) != 0 {
		t.Errorf("stage 0 was created or sent %v; want nothing before the refusal", seen)
	}
	if _, seen := second.seen(); len(seen) != 0 {
		t.Errorf("stage 1 was created or sent %v; want nothing", seen)
	}
	if diff := cmp.Diff(before, pool.Readout()); diff != "" {
		t.Errorf("the budget moved (-before +after):\n%s", diff)
	}
	if len(res.Stages) != 1 || res.Stages[0].Stage != 1 || res.Stages[0].Outcome != kernel.StageUnsupported {
		t.Errorf("stages %+v; want one unsupported attempt naming stage 1", res.Stages)
	}
	rec, err := kernel.ReadRun(context.Background(), st, "caps")
	if err != nil || rec.Status != store.StatusFailed || rec.Seated == nil || rec.Seated.Terminal == nil || rec.Seated.Terminal.Reason != kernel.ReasonRefused {
		t.Fatalf("record %+v (%v); want a refused seated run", rec, err)
	}
	if runs, err := st.ListRuns(context.Background(), store.ListOptions{}); err == nil {
		for _, r := range runs {
			if r.ID != "caps" {
				t.Errorf("stage run %s was recorded; want none", r.ID)
			}
		}
	}
}

// ProjectStage is the one check: a stage its provider can honor yields
// the stage's projection; each missing capability is named by its path.
func TestProjectStage(t *testing.T) {
	prof := mustProfile(t, seatToolsLater)
	caps, err := spyOn(t, "scripted/first", false).Capabilities(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	noTools := *caps
	noTools.Profile.Tools = false
	for _, tc := range []struct {
		name    string
		caps    *contract.Capabilities
		stage   int
		model   string
		missing []string
	}{
		{"stage 0 on a tool-less provider", &noTools, 0, "scripted/first", nil},
		{"stage 1 on a tool-less provider", &noTools, 1, "scripted/second", []string{"/tools"}},
		{"stage 1 on a provider with tools", caps, 1, "scripted/second", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			eff, err := kernel.ProjectStage(tc.caps, prof, tc.stage)
			if eff == nil || eff.Model == nil || eff.Model.Default == nil || *eff.Model.Default != tc.model || len(eff.Seats) != 0 {
				t.Fatalf("projection %+v; want stage %d's, without seats", eff, tc.stage)
			}
			su, _ := errors.AsType[*kernel.StageUnsupportedError](err)
			if (tc.missing == nil) != (err == nil) || su == nil && tc.missing != nil {
				t.Fatalf("err %v; want missing %v", err, tc.missing)
			}
			if su != nil {
				if diff := cmp.Diff(tc.missing, su.Missing); diff != "" {
					t.Errorf("missing (-want +got):\n%s", diff)
				}
			}
		})
	}
	if _, err := kernel.ProjectStage(caps, prof, 2); err == nil {
		t.Error("stage 2 of a two-stage chain was projected; want an error")
	}
	if _, err := kernel.ProjectStage(caps, &profile.Profile{Name: prof.Name, Harness: prof.Harness}, 1); err == nil {
		t.Error("stage 1 of a profile without seats was projected; want an error")
	}
}

// cmpIgnoreErr compares a StageUnsupportedError without its joined
// refusal (its text is the profile package's).
var cmpIgnoreErr = cmp.Comparer(func(a, b kernel.StageUnsupportedError) bool {
	a.Err, b.Err = nil, nil
	return cmp.Equal(a.Missing, b.Missing) && a.Stage == b.Stage && a.Pointer == b.Pointer && a.Provider == b.Provider && a.Model == b.Model
})
