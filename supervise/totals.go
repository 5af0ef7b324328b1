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
		var spent ledger.Spend
		kind := GapUnreported
		if n.Settlement != nil {
			spent = n.Settlement.Spent
		} else {
			kind = GapNeverSettled
		}
		var gaps []string
		add := func(ch string, total *int64, reserved, got *int64) {
			switch {
			case got != nil:
				*total += *got
			default:
				if reserved != nil {
					*total += *reserved
				}
				gaps = append(gaps, ch)
			}
		}
		add(ledger.ChannelTokens, &t.Spent.Tokens, n.Reserved.Tokens, spent.Tokens)
		add(ledger.ChannelIterations, &t.Spent.Iterations, n.Reserved.Iterations, spent.Iterations)
		add(ledger.ChannelUSD, &t.Spent.MicroUSD, n.Reserved.MicroUSD, spent.MicroUSD)
		if len(n.Reserved.Resources) > 0 || len(spent.Resources) > 0 {
			names := map[string]bool{}
			for name := range n.Reserved.Resources {
				names[name] = true
			}
			for name := range spent.Resources {
				names[name] = true
			}
			for _, name := range slices.Sorted(maps.Keys(names)) {
				var reserved *int64
				if v, ok := n.Reserved.Resources[name]; ok {
					reserved = &v
				}
				var sum int64
				add("resource:"+name, &sum, reserved, spent.Resources[name])
				t.Spent.Resources[name] += sum
			}
		}
		if len(gaps) == 0 {
			continue
		}
		for _, ch := range gaps {
			switch ch {
			case ledger.ChannelTokens:
				t.Spent.TokensKnown = false
			case ledger.ChannelIterations:
				t.Spent.IterationsKnown = false
			case ledger.ChannelUSD:
				t.Spent.USDKnown = false
			}
		}
		t.Gaps = append(t.Gaps, SpendGap{ID: n.ID, Label: labelOf(n.Label, n.Profile), Kind: kind, Channels: gaps})
	}
	return t
}
