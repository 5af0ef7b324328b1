package supervise_test

import (
	"context"
	"testing"

	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/supervise"
)

// releasingExec is an executor that keeps its workers' sessions
// (SessionReleaser) and can confirm no teardown: each settlement's
// teardown is unconfirmed, and so is the release at the run's end.
type releasingExec struct{ supervise.ExecutorFunc }

func (releasingExec) ReleaseSessions(_ context.Context, _ string, _ map[supervise.NodeID]*supervise.SessionRef) []supervise.UnreleasedSession {
	return []supervise.UnreleasedSession{{Node: "os16:s1", Detail: "release timed out"}}
}

// A worker whose settlement's teardown went unconfirmed and whose kept
// session's release at the run's end did too is named once in
// teardownUnconfirmed, with what was said first (§3.6 "Teardown &
// retained environments", §15 behaviour 51): it was named twice.
func TestTeardownUnconfirmedNamesAWorkerOnce(t *testing.T) {
	exec := supervise.ExecutorFunc(func(context.Context, supervise.Work) (supervise.WorkResult, error) {
		return supervise.WorkResult{Text: "ok", Spent: ledger.Spend{Tokens: os16i(10), Iterations: os16i(1), MicroUSD: os16i(10)},
			TeardownUnconfirmed: "destroy timed out"}, nil
	})
	brain := func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		if _, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "w", Task: "t"}); err != nil {
			return supervise.BrainReport{}, err
		}
		if err := os16AwaitSettled(ctx, c, 1); err != nil {
			return supervise.BrainReport{}, err
		}
		return supervise.BrainReport{Text: "done", Metered: os16Usage()}, nil
	}
	o := os16Opts(t, t.TempDir(), brain, nil)
	o.Executor = releasingExec{exec}
	res, err := supervise.Supervise(context.Background(), os16Manager(t), "t", o)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.TeardownUnconfirmed) != 1 || res.TeardownUnconfirmed[0].ID != "os16:s1" || res.TeardownUnconfirmed[0].Detail != "destroy timed out" {
		t.Fatalf("teardownUnconfirmed %+v, want os16:s1 once, with its settlement's detail", res.TeardownUnconfirmed)
	}
}
