package kernel_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/store/memory"
)

// stageZeroQuota refuses every create for quota and says stage 0,
// whichever stage it serves: a provider that does not know its stage.
type stageZeroQuota struct{ contract.Provider }

func (p stageZeroQuota) Create(context.Context, *contract.CreateInput) (contract.Environment, error) {
	return nil, &contract.QuotaRefusalError{Provider: p.Name(), Message: "the window is used up"}
}

// PRF-11: a quota refusal names the stage the runtime ran, not the one
// the provider guessed: stage 1's refusal says stage 1 in the record and
// in the error the run ends with.
func TestQuotaRefusalNamesTheStageThatRan(t *testing.T) {
	first := newSeatProvider(t, "scripted/first", true)
	last := stageZeroQuota{newSeatProvider(t, "scripted/second", false)}
	accounts := kernel.AccountManagerFunc(func(_ context.Context, k int, _ profile.Seat) (contract.Provider, error) {
		return []contract.Provider{first, last}[k], nil
	})
	res, err := kernel.ExecuteSeated(t.Context(), kernel.SeatedRequest{Accounts: accounts, Request: kernel.Request{
		Profile: mustProfile(t, seatWriter), Task: "write a note", Store: memory.New(nil), Check: nonEmpty, RunID: "stages"}})
	quota, ok := errors.AsType[*contract.QuotaRefusalError](err)
	if !ok || quota.Stage != 1 {
		t.Fatalf("ExecuteSeated = %v; want the last stage's quota refusal naming stage 1", err)
	}
	if len(res.Stages) != 2 || !strings.Contains(res.Stages[1].Reason, "stage 1") || res.Stages[1].Stage != 1 {
		t.Errorf("stages %+v; want stage 1's refusal to say stage 1", res.Stages)
	}
}
