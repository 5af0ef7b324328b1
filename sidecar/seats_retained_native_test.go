package sidecar_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/retained"
	"github.com/agentrt/agentrt/store"
)

// followRetained follows a retained stage to its end: the error its
// events end with (a mid-turn quota refusal, as it crossed the wire),
// else its result's failure.
func followRetained(ctx context.Context, run *retained.Run, _ kernel.StageAttempt) error {
	for _, err := range run.Events(ctx, retained.Cursor{}) {
		if err != nil {
			return err
		}
	}
	res, err := run.Result(ctx)
	if err != nil {
		return err
	}
	if !res.Success {
		return errors.New("the run failed")
	}
	return nil
}

// RG-08, RG-10, RG-11 for a seated retained run across the wire (`agentrt
// serve`'s server, reached through providers/remote): stage 0's served
// turn runs out of quota part way, the typed refusal crosses the wire
// naming its run, and stage 1 goes on natively in the same served
// session — one environment created, one native continuation served,
// stage 1's credential request on the continued turn — recorded
// ContinuityNative with stage 0's native session id. Another client and
// store connection starting the run again replays every stage: the
// served provider answers the recorded continuation replayed. On SQLite
// and PostgreSQL.
func TestServedRetainedSeatedRunContinuesTheNativeSession(t *testing.T) {
	forEachStore(t, func(t *testing.T, open func(t *testing.T) store.Store) {
		ctx := testCtx(t)
		p, url := serveMidTurn(t)
		o := retained.SeatedOptions{Profile: midTurnSeatsProfile(), IdempotencyKey: "k-served-native", TurnID: "turn-1",
			Task: "write a note", OnAdmission: admitted, Follow: followRetained}
		start := func() (*retained.SeatedRun, error) {
			c := client(t, ctx, url)
			o.Accounts = kernel.AccountManagerFunc(func(context.Context, int, profile.Seat) (contract.Provider, error) { return c, nil })
			o.Store = open(t)
			return retained.StartSeated(ctx, o)
		}
		res, err := start()
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Stages) != 2 || res.Run == nil {
			t.Fatalf("seated run %+v", res)
		}
		s0, s1 := res.Stages[0], res.Stages[1]
		if s0.Outcome != kernel.StageQuotaRefused || s0.NativeSessionID == "" ||
			s1.Outcome != kernel.StageCompleted || s1.Continuity != kernel.ContinuityNative || s1.NativeSessionID != s0.NativeSessionID || s1.Node != s0.Node {
			t.Fatalf("stages %+v", res.Stages)
		}
		if p.Creates() != 1 || p.Counters().NativeContinuations != 1 {
			t.Errorf("%d environments created, %d native continuations served; want 1 and 1", p.Creates(), p.Counters().NativeContinuations)
		}
		if got, want := strings.Join(credentialTrail(p), " "), "0/create 0/turn 1/turn"; got != want {
			t.Errorf("credential requests served %q; want %q (no second create)", got, want)
		}
		again, err := start()
		if err != nil || again.Run == nil || again.Run.ControlRef() != res.Run.ControlRef() {
			t.Fatalf("started again from another client: %+v (%v); want run %+v", again, err, res.Run.ControlRef())
		}
		if p.Creates() != 1 || p.Counters().NativeContinuations != 1 {
			t.Errorf("started again: %d environments created, %d native continuations served; want still 1 and 1", p.Creates(), p.Counters().NativeContinuations)
		}
	})
}
