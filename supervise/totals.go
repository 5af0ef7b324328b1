package supervise

import (
	"maps"
	"slices"

	"github.com/agentrt/agentrt/ledger"
)

// GapKind says why a node's spend is not fully known (§3.6 spendGaps).
type GapKind string

// Gap kinds.
const (
	// GapNeverSettled: the node has no terminal receipt (live, in doubt,
	// or live when the scope closed); it is charged at its ceiling on
	// every channel.
	GapNeverSettled GapKind = "never-settled"
	// GapUnreported: the node settled but did not report the named
	// channels; each is charged at the node's ceiling.
	GapUnreported GapKind = "unreported"
)

// SpendGap names one node whose spend is not fully known. Channels are
// ledger channel names: "tokens", "usd", "iterations",
// "resource:<name>".
type SpendGap struct {
	ID       NodeID
	Label    string
	Kind     GapKind
	Channels []string
}

// SpentTotal is the tree's spend. A quantity whose Known flag is false is
// a charge that includes ceilings for unmeasured work: a bound, not a
// measurement.
type SpentTotal struct {
	Tokens, Iterations, MicroUSD int64
	Resources                    map[string]int64
	TokensKnown                  bool
	IterationsKnown              bool
	USDKnown                     bool
}

// Totals is the spend of a tree and the gaps in what is known of it.
type Totals struct {
	Spent SpentTotal
	// Gaps lists nodes in seq order; empty exactly when every node
	// settled with a complete receipt.
	Gaps []SpendGap
}

// Totals returns the tree's spend so far: measured spend of settled
// nodes, ceilings for unreported channels and for nodes that have not
// settled.
func (s *Scope) Totals() Totals {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.totalsLocked()
}

func (s *Scope) totalsLocked() Totals {
	t := Totals{Spent: SpentTotal{Resources: map[string]int64{}, TokensKnown: true, IterationsKnown: true, USDKnown: true}}
	for _, n := range s.order {
		spent, gaps := NodeSpent(n.NodeInfo)
		t.Spent = addTotals(t.Spent, spent)
		if len(gaps) == 0 {
			continue
		}
		kind := GapUnreported
		if n.Settlement == nil {
			kind = GapNeverSettled
		}
		t.Gaps = append(t.Gaps, SpendGap{ID: n.ID, Label: labelOf(n.Label, n.Profile), Kind: kind, Channels: gaps})
	}
	return t
}

// NodeSpent is node n's spend as the run's totals count it: what its
// settlement measured, and its ceiling (Reserved) for every channel it
// did not report or, when it never settled, for every channel. gaps
// names those channels (ledger channel names, "resource:<name>"), the
// Known flags of the channels among them false.
func NodeSpent(n NodeInfo) (spent SpentTotal, gaps []string) {
	spent = SpentTotal{Resources: map[string]int64{}, TokensKnown: true, IterationsKnown: true, USDKnown: true}
	var got ledger.Spend
	if n.Settlement != nil {
		got = n.Settlement.Spent
	}
	add := func(ch string, total *int64, known *bool, reserved, measured *int64) {
		switch {
		case measured != nil:
			*total += *measured
		default:
			if reserved != nil {
				*total += *reserved
			}
			gaps = append(gaps, ch)
			if known != nil {
				*known = false
			}
		}
	}
	add(ledger.ChannelTokens, &spent.Tokens, &spent.TokensKnown, n.Reserved.Tokens, got.Tokens)
	add(ledger.ChannelIterations, &spent.Iterations, &spent.IterationsKnown, n.Reserved.Iterations, got.Iterations)
	add(ledger.ChannelUSD, &spent.MicroUSD, &spent.USDKnown, n.Reserved.MicroUSD, got.MicroUSD)
	if len(n.Reserved.Resources) > 0 || len(got.Resources) > 0 {
		names := map[string]bool{}
		for name := range n.Reserved.Resources {
			names[name] = true
		}
		for name := range got.Resources {
			names[name] = true
		}
		for _, name := range slices.Sorted(maps.Keys(names)) {
			var reserved *int64
			if v, ok := n.Reserved.Resources[name]; ok {
				reserved = &v
			}
			var sum int64
			add("resource:"+name, &sum, nil, reserved, got.Resources[name])
			spent.Resources[name] = sum
		}
	}
	return spent, gaps
}
