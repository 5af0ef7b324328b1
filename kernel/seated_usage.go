package kernel

import (
	"context"
	"fmt"

	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/store"
)

// SeatedUsage is what a seated run's stages spent together: the sum of
// each stage run's recorded spend (a floor where a stage's was cut, and
// unknown where one's was never reported), read from st — what each
// stage's own record says, so the two never disagree. A stage refused
// before anything was admitted (a quota refusal at create, Run nil)
// recorded its spend as zero: nothing was dispatched under it; a stage
// that never ran has no run. A seated run whose stages spent nothing is
// ledger.NoUsage. The last stage's result is not the run's spend: every
// stage before it may have spent too.
func SeatedUsage(ctx context.Context, st store.Store, stages []StageAttempt) (ledger.Usage, error) {
	total, any := ledger.NoUsage(), false
	for _, at := range stages {
		if at.RunID == "" {
			continue
		}
		rec, err := ReadRun(ctx, st, at.RunID)
		if err != nil {
			return ledger.Usage{}, fmt.Errorf("kernel: reading seat stage %d's run %s: %w", at.Stage, at.RunID, err)
		}
		if !any {
			total, any = rec.Spend, true
			continue
		}
		total = total.Plus(rec.Spend)
	}
	return total, nil
}
