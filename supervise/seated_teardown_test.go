package supervise_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/supervise"
)

// failingDestroy is a provider whose environments cannot be destroyed.
type failingDestroy struct{ contract.Provider }

func (p failingDestroy) Create(ctx context.Context, in *contract.CreateInput) (contract.Environment, error) {
	env, err := p.Provider.Create(ctx, in)
	if err != nil {
		return nil, err
	}
	return failingEnv{env}, nil
}

type failingEnv struct{ contract.Environment }

func (failingEnv) Destroy(context.Context) error {
	return errors.New("the provider's destroy endpoint answered 503")
}

// A seated worker's teardown is confirmed or reported (spec behaviour
// 51, in-process): its first stage's account runs out mid-turn, its
// second stage is served by another provider and starts fresh, and the
// session the first stage left cannot be destroyed. The worker still
// delivers on its second stage, and the supervised run names the worker
// among the teardowns not confirmed — not only in a log line.
func TestSeatedWorkerTeardownUnconfirmedIsReported(t *testing.T) {
	script := func(src string) *scripted.Script {
		var s scripted.Script
		if err := json.Unmarshal([]byte(src), &s); err != nil {
			t.Fatal(err)
		}
		return &s
	}
	first := failingDestroy{scripted.New(script(`{"accounts":{"team-a":{}},"turns":[
 {"match":"write alpha","servedModel":"scripted/first","steps":[{"text":"a draft"}],"end":"quota","error":"the window is used up"}]}`), scripted.Options{})}
	second := scripted.New(script(`{"accounts":{"team-b":{}},"turns":[{"match":"write alpha","servedModel":"scripted/second","steps":[{"text":"alpha: DONE"}]}]}`), scripted.Options{Name: "elsewhere"})
	exec := &supervise.KernelExecutor{Store: newStore(t), Accounts: kernel.AccountManagerFunc(func(_ context.Context, k int, _ profile.Seat) (contract.Provider, error) {
		return []contract.Provider{first, second}[k], nil
	})}
	manager := scripted.NewChatModel(scripted.ChatScript{Turns: []scripted.ChatTurn{
		turn(call("c1", supervise.VerbSpawnWorker, map[string]any{"profile": "writer", "task": "write alpha", "label": "a"}), managerUsage(10, 5, 0.0001)),
		turn(call("c2", supervise.VerbAwaitEvent, map[string]any{"timeoutMs": 60000}), managerUsage(10, 5, 0.0001)),
		turn(scripted.Text("alpha delivered"), managerUsage(10, 5, 0.0001)),
	}})
	o := baseOptions(t, exec, manager)
	o.Profiles = map[string]*profile.Profile{"writer": mustProfile(t, seatedWriter)}
	res, err := supervise.Supervise(t.Context(), managerProfile(t, supervise.VerbSpawnWorker, supervise.VerbAwaitEvent), "ship a note", o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Winner == nil || res.Winner.Node != "run1:s1" || res.Winner.Text != "alpha: DONE" {
		t.Fatalf("status %s reason %s winner %+v; want run1:s1 delivering the second stage's note", res.Status, res.Reason, res.Winner)
	}
	if len(res.TeardownUnconfirmed) != 1 || res.TeardownUnconfirmed[0].ID != "run1:s1" {
		t.Fatalf("teardown unconfirmed %+v; want the seated worker run1:s1", res.TeardownUnconfirmed)
	}
	if d := res.TeardownUnconfirmed[0]; !strings.Contains(d.Detail, "not confirmed destroyed") || !strings.Contains(d.Detail, "503") {
		t.Errorf("teardown detail %+v; want the environment and the destroy's failure", d)
	}
}
