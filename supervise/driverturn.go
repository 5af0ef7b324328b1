package supervise

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/ledger"
)

// Journal records of a brain's turn whose usage arrives as the turn goes
// (an external harness's: OpenDriverTurn). A turn opened (KindDriverTurn)
// and not ended (KindDriverTurnEnded) by the time its process died is,
// on resume, a turn of unknown tokens and dollars (and, as every
// manager turn, no iteration): the manager's spend gap, never 0. The
// model calls it reported before it died are metered records
// (KindMetered) carrying the turn's key, charged once.
const (
	KindDriverTurn      = "driver-turn"
	KindDriverTurnEnded = "driver-turn-ended"
)

// ErrDriverTurnNested: OpenDriverTurn was asked of a nested manager's
// coordinator; a nested manager meters its turns through TurnMeter.
var ErrDriverTurnNested = errors.New("supervise: a driver turn meters the root manager only")

// DriverTurn is one turn of the root manager's brain whose model usage
// is reported while the turn runs — an external harness's turn, which
// may make many model calls (coordmcp.HarnessBrain). Each reported call
// is charged to the run's pool and journaled as it arrives (Meter); End
// charges what the turn's final report adds. Like every manager turn
// it counts no iteration (driverSpend). A brain that uses it leaves
// BrainReport.Metered nil.
type DriverTurn struct {
	c   *Coordinator
	key string

	mu       sync.Mutex
	tokens   int64 // tokens metered so far
	microUSD int64 // dollars metered so far
	ended    bool
}

// OpenDriverTurn journals that the root manager's brain starts a turn
// and returns it. The journal holds the opening before any of the
// turn's usage, so a process that dies before End leaves a turn that a
// resume charges as unknown spend.
func (c *Coordinator) OpenDriverTurn(ctx context.Context) (*DriverTurn, error) {
	if c.parent != nil {
		return nil, fmt.Errorf("%w (%s)", ErrDriverTurnNested, c.self)
	}
	t := &DriverTurn{c: c, key: kernel.NewID("turn")}
	if err := c.log.appendOrLose(ctx, Record{Kind: KindDriverTurn, Node: c.self, Key: t.key}); err != nil {
		return nil, fmt.Errorf("supervise: journaling the manager's turn: %w", err)
	}
	return t, nil
}

// Meter charges one model call of the turn, u as the harness reported
// it, and journals it under the turn's key. Its unknown channels charge
// nothing now: the turn's end reports them. Its dollars, when unknown,
// are left to the turn's end too.
func (t *DriverTurn) Meter(ctx context.Context, u ledger.Usage) error {
	sp := SpendOf(u)
	zero := int64(0)
	sp.Iterations = &zero
	if sp.Tokens == nil {
		sp.Tokens = &zero
	}
	if sp.MicroUSD == nil {
		sp.MicroUSD = &zero
	}
	t.mu.Lock()
	if t.ended {
		t.mu.Unlock()
		return nil
	}
	t.tokens += *sp.Tokens
	t.microUSD += *sp.MicroUSD
	t.mu.Unlock()
	t.c.chargeDriver(sp)
	if err := t.c.log.appendOrLose(ctx, Record{Kind: KindMetered, Node: t.c.self, Key: t.key, Spent: spendRecord(sp)}); err != nil {
		return fmt.Errorf("supervise: journaling the manager's spend: %w", err)
	}
	return nil
}

// PoolSpent reports whether the run's pool is spent for its manager: a
// capped token, iteration or dollar channel has nothing free and no live
// worker holds any of it. Nothing the manager could do next would be
// admitted and no work of the run is left to wait for; its model calls
// would only spend on. A harness that meters its calls while its turn
// runs is ended there (its turn, unlike the router brain's, has no
// boundary to stop at until it returns). While a worker holds a
// reservation the manager may still be waiting for its result: its
// spend past the pool is then a budget violation, not a stop.
func (t *DriverTurn) PoolSpent() bool {
	r := t.c.pool.Readout()
	for _, ch := range []string{ledger.ChannelTokens, ledger.ChannelIterations, ledger.ChannelUSD} {
		if b, ok := r.Channels[ch]; ok && b.Capped && b.Free <= 0 && b.Reserved == 0 {
			return true
		}
	}
	return false
}

// End closes the turn with its total usage as the harness finally
// reported it (nil: none, as when the turn failed): what it adds to the
// calls already metered is charged and journaled, with no iteration (a
// manager's turn counts none). A channel the total does not know is the
// manager's spend gap. A second End does nothing.
func (t *DriverTurn) End(ctx context.Context, total *ledger.Usage) error {
	t.mu.Lock()
	if t.ended {
		t.mu.Unlock()
		return nil
	}
	t.ended = true
	tokens, microUSD := t.tokens, t.microUSD
	t.mu.Unlock()
	zero := int64(0)
	sp := ledger.Spend{Iterations: &zero}
	if total != nil {
		all := SpendOf(*total)
		if all.Tokens != nil {
			rest := max(*all.Tokens-tokens, 0)
			sp.Tokens = &rest
		} else if f := all.TokensFloor; f != nil && *f-tokens > 0 {
			// An incomplete total: unknown, but at least its floor.
			rest := *f - tokens
			sp.TokensFloor = &rest
		}
		if all.MicroUSD != nil {
			rest := max(*all.MicroUSD-microUSD, 0)
			sp.MicroUSD = &rest
		}
	}
	t.c.chargeDriver(sp)
	if err := t.c.log.appendOrLose(ctx, Record{Kind: KindDriverTurnEnded, Node: t.c.self, Key: t.key, Spent: spendRecord(sp)}); err != nil {
		return fmt.Errorf("supervise: journaling the end of the manager's turn: %w", err)
	}
	return nil
}

// unendedTurnSpend is what a resume charges for a driver turn its
// journal opened and never ended: tokens and dollars unknown, no
// iteration (a manager's turn counts none).
func unendedTurnSpend() ledger.Spend {
	zero := int64(0)
	return ledger.Spend{Iterations: &zero}
}
