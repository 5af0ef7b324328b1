package retained_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/retained"
	"github.com/agentrt/agentrt/store"
)

// twoSeats is a subscription profile: stage 0 on account team-a, stage 1
// on team-b.
const twoSeats = `{"name":"writer","harness":"cli-base","model":{"provider":"scripted","default":"scripted/first"},
 "seats":[{"harness":"cli-base","provider":"scripted","model":"scripted/first","selector":{"kind":"seat","id":"team-a"}},
          {"harness":"cli-base","provider":"scripted","model":"scripted/second","selector":{"kind":"seat","id":"team-b"}}]}`

func seatedScripted(t *testing.T, src string) *scripted.Provider {
	t.Helper()
	var s scripted.Script
	if err := json.Unmarshal([]byte(src), &s); err != nil {
		t.Fatal(err)
	}
	return scripted.New(&s, scripted.Options{})
}

// PRF-11, RG-07, RG-08, RG-11 for retained runs: StartSeated on a chain
// whose stage 0 is refused for quota at its create moves on to stage 1,
// whose retained run has its own admission records, each delivered to
// the hook once durable: stage 0's intent (its create was refused, so
// nothing more), then stage 1's intent → environment → dispatched. Stage
// 1's identity derives from the stage key; both stages are the seated
// run's logical node. Started again with the same options, every stage's
// admission replays and no second environment is made.
func TestStartSeatedAdmitsEachStage(t *testing.T) {
	forEachStore(t, func(t *testing.T, open func(t *testing.T) store.Store) {
		ctx := testCtx(t)
		s := open(t)
		p := seatedScripted(t, `{"accounts":{"team-a":{"exhausted":true},"team-b":{}},"turns":[{"repeat":true,"steps":[{"text":"done"}]}]}`)
		prof, err := profile.Parse([]byte(twoSeats))
		if err != nil {
			t.Fatal(err)
		}
		rec := &recorder{}
		var movedOn []kernel.StageAttempt
		o := retained.SeatedOptions{Accounts: kernel.AccountManagerFunc(func(context.Context, int, profile.Seat) (contract.Provider, error) { return p, nil }),
			Store: s, Profile: prof, IdempotencyKey: "k-seats", TurnID: "turn-1", Task: "write it", OnAdmission: rec.hook,
			MovedOn: func(at kernel.StageAttempt) { movedOn = append(movedOn, at) },
			Follow: func(ctx context.Context, run *retained.Run, _ kernel.StageAttempt) error {
				res, err := run.Result(ctx)
				if err != nil {
					return err
				}
				if !res.Success {
					return errors.New("the run failed")
				}
				return nil
			}}
		res, err := retained.StartSeated(ctx, o)
		if err != nil {
			t.Fatal(err)
		}
		_, first, _ := retained.DeriveIdentity("k-seats", "turn-1")
		_, second, _ := retained.DeriveIdentity(retained.StageKey("k-seats", 0, 1), "turn-1")
		node := kernel.SeatedNode(first)
		if res.ID != first || res.Node != node || res.Run == nil || res.Run.ControlRef().Record != second {
			t.Fatalf("seated run %+v; want %s, node %s, its run stage 1's %s", res, first, node, second)
		}
		want := []retained.AdmissionKind{retained.AdmissionIntent, retained.AdmissionIntent, retained.AdmissionEnvironment, retained.AdmissionDispatched}
		if diff := cmp.Diff(want, rec.kinds()); diff != "" {
			t.Errorf("admission records delivered (-want +got):\n%s", diff)
		}
		if rec.seen[0].Intent.RunID != first || *rec.seen[0].Intent.Stage != 0 || rec.seen[1].Intent.RunID != second || *rec.seen[1].Intent.Stage != 1 {
			t.Errorf("intents %+v, %+v; want stage 0's then stage 1's", rec.seen[0].Intent, rec.seen[1].Intent)
		}
		if len(res.Stages) != 2 || res.Stages[0].Outcome != kernel.StageQuotaRefused || res.Stages[1].Outcome != kernel.StageCompleted ||
			res.Stages[0].Node != node || res.Stages[1].Node != node || len(movedOn) != 1 || movedOn[0].Stage != 0 {
			t.Errorf("stages %+v, moved on from %+v", res.Stages, movedOn)
		}
		latest, err := retained.Latest(ctx, s, first)
		if err != nil || latest.ID != second {
			t.Errorf("Latest(%s) = %+v (%v); want stage 1's record", first, latest, err)
		}
		creates := p.Creates()
		again, err := retained.StartSeated(ctx, o)
		if err != nil || again.Run == nil || again.Run.ControlRef() != res.Run.ControlRef() {
			t.Fatalf("started again: %+v (%v); want the same run", again, err)
		}
		if p.Creates() != creates {
			t.Errorf("started again made %d environments", p.Creates()-creates)
		}
	})
}

// PRF-07 for retained runs: a stage no account resolves refuses the
// seated run before any stage is admitted.
func TestStartSeatedRefusesAnUnresolvedStage(t *testing.T) {
	ctx := testCtx(t)
	forEachStore(t, func(t *testing.T, open func(t *testing.T) store.Store) {
		s := open(t)
		p := seatedScripted(t, `{"accounts":{"team-a":{},"team-b":{}},"turns":[{"repeat":true,"steps":[{"text":"done"}]}]}`)
		prof, err := profile.Parse([]byte(twoSeats))
		if err != nil {
			t.Fatal(err)
		}
		rec := &recorder{}
		_, err = retained.StartSeated(ctx, retained.SeatedOptions{Accounts: kernel.AccountManagerFunc(func(_ context.Context, k int, _ profile.Seat) (contract.Provider, error) {
			if k == 1 {
				return nil, errors.New("no account serves stage 1")
			}
			return p, nil
		}), Store: s, Profile: prof, IdempotencyKey: "k-unresolved", TurnID: "turn-1", Task: "write it", OnAdmission: rec.hook})
		if ue, ok := errors.AsType[*kernel.SeatUnresolvedError](err); !ok || ue.Stage != 1 {
			t.Fatalf("err %v; want stage 1 unresolved", err)
		}
		if len(rec.kinds()) != 0 || p.Creates() != 0 {
			t.Errorf("admitted %v, created %d; want nothing", rec.kinds(), p.Creates())
		}
	})
}
