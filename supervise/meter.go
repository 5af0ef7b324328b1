package supervise

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentrt/agentrt/canonjson"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/ledger"
)

// KindMetered is a journal record of the brain's own inference, charged
// to the run's pool as it happened (Spent; §3.6 "metered (driver own
// inference; twin of pool.observe)"). A resumed run charges it again, so
// a manager's spend survives a restart. A router manager's model turn
// whose answer is journaled has no metered record: the transcript record
// holding what the turn said carries its spend (Record.Spent), so the
// two are durable together.
const KindMetered = "metered"

// meter is the brain's own inference charged so far; guarded by
// Coordinator.mu.
type meter struct {
	charged    bool  // some spend was charged
	iterations int64 // iterations charged: 0, a manager's turns count none (driverSpend)
	// tokens is the turns' known tokens plus, once tokensUnknown, the
	// floors of the incomplete receipts (ledger.Spend.TokensFloor): what
	// is known to have been spent at least, as the pool debits it.
	tokens, microUSD  int64
	tokensUnknown     bool
	usdUnknown        bool
	iterationsUnknown bool // a turn charged an invalid iteration count (never a live one's)
}

// add charges sp to m. A quantity no turn can have spent — negative,
// above ledger.MaxQuantity, or one that would take the sum past it, as
// only a journal no brain wrote holds — is unknown, never added, as the
// pool's Observe takes it.
func (m *meter) add(sp ledger.Spend) {
	m.charged = true
	if sp.Iterations != nil && !addQuantity(&m.iterations, *sp.Iterations) {
		m.iterationsUnknown = true
	}
	m.addTokens(sp)
	if sp.MicroUSD == nil || !addQuantity(&m.microUSD, *sp.MicroUSD) {
		m.usdUnknown = true
	}
}

// addQuantity adds v to *sum when v is a quantity a spend can hold and
// the sum stays within ledger.MaxQuantity; it reports whether it did.
func addQuantity(sum *int64, v int64) bool {
	if v < 0 || v > ledger.MaxQuantity || *sum > ledger.MaxQuantity-v {
		return false
	}
	*sum += v
	return true
}

// addTokens adds sp's tokens to m: known tokens, or, for a turn that
// did not report them all, the floor its receipt shows (unknown, never
// dropped: ledger.Pool.Observe debits the same floor).
func (m *meter) addTokens(sp ledger.Spend) {
	if sp.Tokens != nil && addQuantity(&m.tokens, *sp.Tokens) {
		return
	}
	m.tokensUnknown = true
	if f := sp.TokensFloor; sp.Tokens == nil && f != nil && *f > 0 {
		addQuantity(&m.tokens, *f)
	}
}

// Meter charges one model turn of the brain's own inference to the run's
// pool as it happens, and journals it: a spawn after it sees the room it
// left. Unknown channels of u charge nothing now; the run's result then
// reports the manager's spend on them as a gap (unknown, never 0), and
// the pool's balance on them becomes unknown (a ceiling) without tainting
// it: only a worker's unreported dollars taint a dollar ceiling (spec §6
// reconcile). The router brain meters each turn; a caller's brain may
// too, leaving BrainReport.Metered for usage it did not meter.
func (c *Coordinator) Meter(ctx context.Context, u ledger.Usage) error {
	sp := driverSpend(u)
	c.chargeTurn(sp)
	return c.journalMetered(ctx, sp)
}

// meterTurn is Meter of a model turn of the router brain whose
// conversation j journals: the turn is charged at once, and its record
// is held for j's next checkpoint, which journals what the turn said
// (transcriptJournal.turnEnded).
func (c *Coordinator) meterTurn(ctx context.Context, u ledger.Usage, j *transcriptJournal) error {
	if j == nil {
		return c.Meter(ctx, u)
	}
	sp := driverSpend(u)
	c.chargeTurn(sp)
	return j.turnEnded(ctx, sp)
}

// chargeTurn charges one model turn's spend sp: a nested manager's to
// its node, settled with it (its reservation covers it); the root's to
// the run's pool.
func (c *Coordinator) chargeTurn(sp ledger.Spend) {
	if c.parent != nil {
		c.meterNested(sp)
		return
	}
	c.chargeDriver(sp)
}

// journalMetered journals one model turn's spend sp, charged already, as
// a metered record under the manager's node (a nested manager's so that
// a resumed run that drives it again still counts it). A record the
// journal refused is a loss.
func (c *Coordinator) journalMetered(ctx context.Context, sp ledger.Spend) error {
	if err := c.log.appendOrLose(ctx, Record{Kind: KindMetered, Node: c.self, Spent: spendRecord(sp)}); err != nil {
		if c.parent != nil {
			return fmt.Errorf("supervise: journaling the nested manager %s's spend: %w", c.self, err)
		}
		return fmt.Errorf("supervise: journaling the manager's spend: %w", err)
	}
	return nil
}

// driverSpend is the spend of one model turn of a manager's brain,
// usage u: its tokens and dollars, and no iteration. The iteration
// channel counts worker turns, never a manager's (the reference meters
// every driver turn, router or harness, at iterations 0: "driver turns
// never consume the child-iteration budget"), so a manager's turns
// neither draw on the run's iteration ceiling nor on its node's.
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
	c.meter.add(sp)
}

// driverTotal is the brain's charged spend and, when some of it is
// unknown, the manager's spend gap.
func (c *Coordinator) driverTotal() (SpentTotal, *SpendGap) {
	c.mu.Lock()
	m := c.meter
	c.mu.Unlock()
	t := SpentTotal{Resources: map[string]int64{}, TokensKnown: !m.tokensUnknown, IterationsKnown: !m.iterationsUnknown, USDKnown: !m.usdUnknown,
		Tokens: m.tokens, Iterations: m.iterations, MicroUSD: m.microUSD}
	if !m.tokensUnknown && !m.usdUnknown && !m.iterationsUnknown {
		return t, nil
	}
	gap := &SpendGap{ID: c.scope.Root(), Label: "manager", Kind: GapUnreported}
	if m.tokensUnknown {
		gap.Channels = append(gap.Channels, ledger.ChannelTokens)
	}
	if m.iterationsUnknown {
		gap.Channels = append(gap.Channels, ledger.ChannelIterations)
	}
	if m.usdUnknown {
		gap.Channels = append(gap.Channels, ledger.ChannelUSD)
	}
	return t, gap
}

// BrainObserver is implemented by an Options.Observer that also watches
// the manager's own model turns (spec §10: driver turns as inference
// spans): the tool loop of a brain that uses TurnMeter reports to the
// kernel.Observer BrainObserver returns (nil: none) as well.
type BrainObserver interface {
	BrainObserver() kernel.Observer
}

// TurnMeter returns a kernel.Observer for a brain's own tool loop
// (kernel.ToolLoopOptions.Observer) that meters each model turn's usage
// through Meter as the turn ends, and passes every hook on to the run's
// Options.Observer when it is a BrainObserver; the router brain uses it.
// A brain that uses it leaves BrainReport.Metered nil, or its turns count
// twice.
func (c *Coordinator) TurnMeter() kernel.Observer { return c.turnMeter(nil) }

// turnMeter is TurnMeter for a brain whose conversation j journals (nil:
// none), which holds each turn's record for its next checkpoint.
func (c *Coordinator) turnMeter(j *transcriptJournal) kernel.Observer {
	if c.parent != nil {
		c.mu.Lock()
		defer c.mu.Unlock()
		return nestedMeter{c: c, passObserver: passObserver{c.turnObs}, journal: j}
	}
	m := turnMeter{c: c, stream: c.log.streams, journal: j}
	if c.obs != nil {
		if b, ok := c.obs.o.(BrainObserver); ok {
			m.inner = b.BrainObserver()
		}
	}
	return m
}

// turnMeter meters each model turn's usage as the turn ends, after
// passing each hook on to inner (the run observer's view of the brain).
type turnMeter struct {
	c *Coordinator
	passObserver
	// stream, with a run dir, gets the manager's turns, events and tool
	// calls (root-stream.jsonl).
	stream *streams
	// journal, when set, journals the brain's conversation and carries
	// each turn's spend (meterTurn).
	journal *transcriptJournal
}

var _ kernel.ToolObserver = turnMeter{}

func (m turnMeter) TurnStarted(ctx context.Context, t kernel.TurnStart) (context.Context, error) {
	m.stream.add("", StreamRecord{Kind: StreamTurnStarted, Run: t.RunID, Model: t.RequestedModel})
	return m.passObserver.TurnStarted(ctx, t)
}

func (m turnMeter) Event(ctx context.Context, e contract.EnvironmentEvent) error {
	m.stream.add("", eventRecord("", e))
	return m.passObserver.Event(ctx, e)
}

func (m turnMeter) TurnEnded(ctx context.Context, t kernel.TurnEnd) error {
	m.stream.add("", turnEndRecord("", t))
	err := m.passObserver.TurnEnded(ctx, t)
	return errors.Join(err, m.c.meterTurn(context.WithoutCancel(ctx), t.Usage, m.journal))
}

func (m turnMeter) ToolStarted(ctx context.Context, call kernel.ToolCallStart) (context.Context, error) {
	if m.stream != nil {
		args := ""
		if call.Call.Args.IsValid() {
			if b, err := canonjson.Canonical(call.Call.Args); err == nil {
				args = string(b)
			}
		}
		m.stream.add("", StreamRecord{Kind: StreamToolStarted, Run: call.RunID, Tool: call.Call.Name, CallID: call.Call.ID}.withText(args))
		// The verb itself need not record the call again (streamed).
		ctx = context.WithValue(ctx, streamedCallKey{}, true)
	}
	return m.passObserver.ToolStarted(ctx, call)
}

func (m turnMeter) ToolEnded(ctx context.Context, call kernel.ToolCallEnd) error {
	if m.stream != nil {
		m.stream.add("", StreamRecord{Kind: StreamToolEnded, Run: call.RunID, Tool: call.Call.Name, CallID: call.Call.ID,
			OK: new(call.Outcome.OK), Code: call.Outcome.Code}.withText(call.Outcome.Message))
	}
	return m.passObserver.ToolEnded(ctx, call)
}
