package coordmcp_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentrt/agentrt/supervise"
)

// §3.6 stopRule, the external-harness arm: the rule is read after each
// root settlement there too, and a rule that panics fails the run
// driver-failed with a *supervise.StopRuleError, no winner picked —
// though the settled worker delivered — as in the router arm; the
// harness's turn ends with its manager.
func TestHarnessManagerStopRulePanicIsDriverFailed(t *testing.T) {
	relay := agentrtBinary(t)
	ctx := deadline(t)
	var reads atomic.Int64
	prov := standInHarness(t, func(ctx context.Context, cs *mcp.ClientSession) (string, error) {
		if _, err := callVerb(ctx, cs, supervise.VerbSpawnWorker, map[string]any{"profile": "writer", "task": "write alpha"}); err != nil {
			if ctx.Err() != nil {
				// The worker settled, the rule failed and the run ended
				// before the spawn's reply reached this turn.
				return "the manager ended", nil
			}
			return "", err
		}
		// The settlement reads the rule, which fails the run; this await
		// answers it or ends with the manager.
		_, _ = callVerb(ctx, cs, supervise.VerbAwaitEvent, map[string]any{"kinds": []string{"settled"}, "timeoutMs": 60000})
		<-ctx.Done()
		return "the manager ended", nil
	})
	manager := harnessManager(t)
	brain := harnessBrain(t, manager, prov, relay)
	o := runOptions(t, t.TempDir(), brain)
	o.StopRule = func(supervise.ProgressView) supervise.StopDecision { reads.Add(1); panic("the caller's rule broke") }
	res, err := supervise.Supervise(ctx, manager, "write alpha", o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != supervise.StatusNoWinner || res.Reason != supervise.ReasonDriverFailed || res.Error == nil ||
		res.Error.Name != "StopRuleError" || !strings.Contains(res.Error.Message, "the caller's rule broke") {
		t.Errorf("status %s reason %s error %+v winner %+v; want driver-failed with the StopRuleError", res.Status, res.Reason, res.Error, res.Winner)
	}
	if reads.Load() != 1 {
		t.Errorf("the rule was read %d times, want once (a failed rule is read no more)", reads.Load())
	}
}
