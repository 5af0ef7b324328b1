package kernel_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/memory"
)

// stuckDestroy is a provider whose environments' Destroy fails, or,
// with hang, does not answer until its context ends; destroys counts
// the attempts.
type stuckDestroy struct {
	contract.Provider
	hang     bool
	destroys *atomic.Int64
}

func (p stuckDestroy) Create(ctx context.Context, in *contract.CreateInput) (contract.Environment, error) {
	env, err := p.Provider.Create(ctx, in)
	if err != nil {
		return nil, err
	}
	return stuckEnv{Environment: env, p: p}, nil
}

type stuckEnv struct {
	contract.Environment
	p stuckDestroy
}

func (e stuckEnv) Destroy(ctx context.Context) error {
	e.p.destroys.Add(1)
	if e.p.hang {
		<-ctx.Done()
		return ctx.Err()
	}
	return errors.New("the provider's destroy endpoint answered 503")
}

// Truthful teardown of a seated run: the session a quota refusal left
// (stage 0's environment, which stage 1 — on another provider — cannot
// continue) is destroyed by the seated run, and stage 1's own
// environment by its run. When either Destroy fails or does not answer
// within the cleanup timeout, the result and the seated record say the
// teardown is not confirmed, naming the environment — not only a log
// line — and the run's outcome stands.
func TestSeatedTeardownUnconfirmedIsReported(t *testing.T) {
	for _, tc := range []struct {
		name string
		hang bool
		// which provider's destroy is stuck: the kept session's (stage
		// 0's) or stage 1's own environment's.
		keptStuck bool
		want      string
	}{
		{"kept session's destroy fails", false, true, "503"},
		{"kept session's destroy hangs", true, true, "deadline exceeded"},
		{"a stage's own destroy fails", false, false, "503"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var destroys atomic.Int64
			var first, second contract.Provider = scripted.New(mustScript(t, midTurnQuota), scripted.Options{}),
				scripted.New(mustScript(t, `{"servedModel":"scripted/second","turns":[{"steps":[{"text":"a fresh note"}]}]}`), scripted.Options{Name: "elsewhere"})
			if tc.keptStuck {
				first = stuckDestroy{Provider: first, hang: tc.hang, destroys: &destroys}
			} else {
				second = stuckDestroy{Provider: second, hang: tc.hang, destroys: &destroys}
			}
			accounts := kernel.AccountManagerFunc(func(_ context.Context, k int, _ profile.Seat) (contract.Provider, error) {
				return []contract.Provider{first, second}[k], nil
			})
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			st := memory.New(nil)
			res, err := kernel.ExecuteSeated(ctx, kernel.SeatedRequest{Accounts: accounts, Request: kernel.Request{
				Profile: mustProfile(t, seatWriter), Task: "write a note", Store: st, Check: nonEmpty, RunID: "writer-t",
				CleanupTimeout: 300 * time.Millisecond}})
			if err != nil {
				t.Fatalf("the run's outcome changed: %v", err)
			}
			if res.Final == nil || res.Final.Text != "a fresh note" || len(res.Stages) != 2 || res.Stages[1].Continuity != kernel.ContinuityFresh {
				t.Fatalf("result %+v, stages %+v", res.Final, res.Stages)
			}
			if destroys.Load() != 1 {
				t.Fatalf("%d destroys of the stuck environment; want 1", destroys.Load())
			}
			stuckStage := "writer-t.stage-1"
			if tc.keptStuck {
				stuckStage = "writer-t.stage-0"
			}
			stage, err := kernel.ReadRun(context.Background(), st, stuckStage)
			if err != nil || stage.Exact == nil {
				t.Fatalf("stage run %s: %+v (%v)", stuckStage, stage, err)
			}
			env := string(stage.Exact.EnvironmentID)
			got := res.TeardownUnconfirmed
			if !strings.Contains(got, "environment "+env+" was not confirmed destroyed") || !strings.Contains(got, tc.want) {
				t.Errorf("TeardownUnconfirmed %q; want environment %s named, with %q", got, env, tc.want)
			}
			rec, err := kernel.ReadRun(context.Background(), st, "writer-t")
			if err != nil || rec.Seated == nil || rec.Status != store.StatusCompleted || rec.Seated.TeardownUnconfirmed != got {
				t.Errorf("seated record %+v (%v); want completed, recording %q", rec.Seated, err, got)
			}
		})
	}
}

// The control: when every environment is destroyed, nothing is reported.
func TestSeatedTeardownConfirmedReportsNothing(t *testing.T) {
	first := scripted.New(mustScript(t, midTurnQuota), scripted.Options{})
	second := scripted.New(mustScript(t, `{"servedModel":"scripted/second","turns":[{"steps":[{"text":"a fresh note"}]}]}`), scripted.Options{Name: "elsewhere"})
	accounts := kernel.AccountManagerFunc(func(_ context.Context, k int, _ profile.Seat) (contract.Provider, error) {
		return []contract.Provider{first, second}[k], nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := kernel.ExecuteSeated(ctx, kernel.SeatedRequest{Accounts: accounts, Request: kernel.Request{
		Profile: mustProfile(t, seatWriter), Task: "write a note", Store: memory.New(nil), Check: nonEmpty, RunID: "writer-ok"}})
	if err != nil || res.TeardownUnconfirmed != "" {
		t.Fatalf("err %v, TeardownUnconfirmed %q; want none", err, res.TeardownUnconfirmed)
	}
}
