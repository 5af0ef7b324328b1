package supervise

import (
	"context"
	"fmt"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/ledger"
)

// KindMetered is a journal record of the brain's own inference, charged
// to the run's pool as it happened (Spent; §3.6 "metered (driver own
// inference; twin of pool.observe)"). A resumed run charges it again, so
// a manager's spend survives a restart.
const KindMetered = "metered"

// meter is the brain's own inference charged so far; guarded by
// Coordinator.mu.
type meter struct {
	charged          bool // some spend was charged
	tokens, microUSD int64
	tokensUnknown    bool
	usdUnknown       bool
}

// Meter charges one model turn of the brain's own inference to the run's
// pool as it happens, and journals it: a spawn after it sees the room it
// left. Unknown channels of u charge nothing now; the run's result then
// reports the manager's spend on them as a gap (unknown, never 0), and
// unknown dollars under a dollar ceiling taint the pool as any unknown
// spend does. The router brain meters each turn; a caller's brain may
// too, leaving BrainReport.Metered for usage it did not meter.
func (c *Coordinator) Meter(ctx context.Context, u ledger.Usage) error {
	sp := driverSpend(u)
	c.chargeDriver(sp)
	if err := c.log.append(ctx, Record{Kind: KindMetered, Node: c.scope.Root(), Spent: spendRecord(sp)}); err != nil {
		return fmt.Errorf("supervise: journaling the manager's spend: %w", err)
	}
	return nil
}

// driverSpend is the spend of the brain's usage u: its turns are not
// worker iterations.
func driverSpend(u ledger.Usage) ledger.Spend {
	sp := SpendOf(u)
	zero := int64(0)
	sp.Iterations = &zero
	return sp
}

// chargeDriver debits sp from the pool and adds it to the brain's total.
func (c *Coordinator) chargeDriver(sp ledger.Spend) {
	c.pool.Observe(sp)
	c.mu.Lock()
	defer c.mu.Unlock()
	m := &c.meter
	m.charged = true
	if sp.Tokens == nil {
		m.tokensUnknown = true
	} else {
		m.tokens += *sp.Tokens
	}
	if sp.MicroUSD == nil {
		m.usdUnknown = true
	} else {
		m.microUSD += *sp.MicroUSD
	}
}

// driverTotal is the brain's charged spend and, when some of it is
// unknown, the manager's spend gap.
func (c *Coordinator) driverTotal() (SpentTotal, *SpendGap) {
	c.mu.Lock()
	m := c.meter
	c.mu.Unlock()
	t := SpentTotal{Resources: map[string]int64{}, TokensKnown: !m.tokensUnknown, IterationsKnown: true, USDKnown: !m.usdUnknown,
		Tokens: m.tokens, MicroUSD: m.microUSD}
	if !m.tokensUnknown && !m.usdUnknown {
		return t, nil
	}
	gap := &SpendGap{ID: c.scope.Root(), Label: "manager", Kind: GapUnreported}
	if m.tokensUnknown {
		gap.Channels = append(gap.Channels, ledger.ChannelTokens)
	}
	if m.usdUnknown {
		gap.Channels = append(gap.Channels, ledger.ChannelUSD)
	}
	return t, gap
}

// TurnMeter returns a kernel.Observer for a brain's own tool loop
// (kernel.ToolLoopOptions.Observer) that meters each model turn's usage
// through Meter as the turn ends; the router brain uses it. A brain that
// uses it leaves BrainReport.Metered nil, or its turns count twice.
func (c *Coordinator) TurnMeter() kernel.Observer { return turnMeter{c} }

// turnMeter meters each model turn's usage as the turn ends.
type turnMeter struct {
	c *Coordinator
}

func (m turnMeter) RunStarted(ctx context.Context, _ kernel.RunStart) (context.Context, error) {
	return ctx, nil
}

func (m turnMeter) TurnStarted(ctx context.Context, _ kernel.TurnStart) (context.Context, error) {
	return ctx, nil
}

func (m turnMeter) Event(context.Context, contract.EnvironmentEvent) error { return nil }

func (m turnMeter) TurnEnded(ctx context.Context, t kernel.TurnEnd) error {
	return m.c.Meter(context.WithoutCancel(ctx), t.Usage)
}

func (m turnMeter) RunEnded(context.Context, kernel.Result) error { return nil }
