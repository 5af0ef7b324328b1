package delegation_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/delegation"
	"github.com/agentrt/agentrt/supervise"
)

// holdOrFinish is a manager that ends at once, unless its intent says
// hold: then it thinks until its run is stopped.
func holdOrFinish(intent string) (supervise.Brain, error) {
	if strings.Contains(intent, "hold") {
		return holdingBrain(intent)
	}
	return supervise.BrainFunc(func(context.Context, *supervise.Coordinator, string) (supervise.BrainReport, error) {
		return supervise.BrainReport{}, nil
	}), nil
}

// TestMaxTerminalRecordsEvictsOldestEnded: §9 "maxTerminalRecords
// evicts oldest terminal" — on SQLite and PostgreSQL, with a cap of 2
// the delegations that ended longest ago are removed from the store with
// their run dirs and then read as unknown-delegation, while a running
// one is never evicted; the cap applies to what an earlier process left
// when a queue opens; an idempotency key whose delegation was evicted
// submits it anew (not reused).
func TestMaxTerminalRecordsEvictsOldestEnded(t *testing.T) {
	for _, sk := range stores() {
		t.Run(sk.name, func(t *testing.T) {
			ctx := deadline(t)
			s := sk.open(t)
			f := newFixture(t, s)
			cfg := f.config(t)
			cfg.Brain = holdOrFinish
			cfg.Concurrency = 2
			cfg.MaxTerminalRecords = 2
			q := open(t, cfg)

			held := must(q.Submit(ctx, delegation.Request{Intent: "hold on"}))(t)
			waitFor(t, ctx, "the held delegation to run", func() bool { return must(q.Get(ctx, held.TaskID))(t).State == delegation.StateRunning })
			var ended []delegation.Delegation
			for i, intent := range []string{"one", "two", "three", "four"} {
				req := delegation.Request{Intent: intent}
				if i == 0 {
					req.IdempotencyKey = "first"
				}
				sub := must(q.Submit(ctx, req))(t)
				ended = append(ended, settle(t, ctx, q, sub.TaskID))
			}
			gone := func(id string) bool {
				_, err := q.Get(ctx, id)
				r, ok := errors.AsType[*delegation.Refusal](err)
				return ok && r.Code == delegation.CodeUnknownDelegation
			}
			waitFor(t, ctx, "the two oldest ended delegations to be evicted", func() bool { return gone(ended[0].TaskID) && gone(ended[1].TaskID) })
			for _, d := range ended[:2] {
				if _, err := os.Stat(d.RunDir); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("the run dir of evicted %s: %v, want removed", d.TaskID, err)
				}
				st := callTool(t, ctx, q, delegation.ToolStatus, `{"taskId": "`+d.TaskID+`"}`)
				if st["error"] != delegation.CodeUnknownDelegation {
					t.Errorf("delegation_status of evicted %s: %v", d.TaskID, st)
				}
			}
			hist := must(q.History(ctx, delegation.HistoryOptions{}))(t)
			var ids []string
			for _, d := range hist {
				ids = append(ids, d.TaskID)
			}
			if want := []string{ended[3].TaskID, ended[2].TaskID, held.TaskID}; strings.Join(ids, " ") != strings.Join(want, " ") {
				t.Errorf("history %v, want %v (the two newest ended and the running one)", ids, want)
			}
			if d := must(q.Get(ctx, held.TaskID))(t); d.State != delegation.StateRunning {
				t.Errorf("the running delegation is %s", d.State)
			}

			// The key of an evicted delegation submits it anew.
			again := must(q.Submit(ctx, delegation.Request{Intent: "one", IdempotencyKey: "first"}))(t)
			if again.TaskID != ended[0].TaskID || again.Reused || again.Delegation.State != delegation.StatePending {
				t.Errorf("resubmitted under the evicted key: %s reused %v %s", again.TaskID, again.Reused, again.Delegation.State)
			}
			if d := settle(t, ctx, q, again.TaskID); d.State != delegation.StateCompleted && d.State != delegation.StateFailed || d.Attempts != 1 {
				t.Errorf("the new delegation: %s attempts %d (%s)", d.State, d.Attempts, d.Failure)
			}

			// A queue opened with a smaller cap applies it at once.
			cfg1 := f.config(t)
			cfg1.Brain = holdOrFinish
			cfg1.MaxTerminalRecords = 1
			q1 := open(t, cfg1)
			waitFor(t, ctx, "the new queue to apply its cap", func() bool {
				n := 0
				for _, d := range must(q1.History(ctx, delegation.HistoryOptions{}))(t) {
					if d.State.Terminal() {
						n++
					}
				}
				return n == 1
			})
			if d := must(q1.Get(ctx, held.TaskID))(t); d.State.Terminal() {
				t.Errorf("the running delegation was ended: %s", d.State)
			}
		})
	}
}
