package supervise

import (
	"maps"
	"slices"
	"strings"

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
	infos := make([]NodeInfo, len(s.order))
	for i, n := range s.order {
		infos[i] = n.NodeInfo
	}
	counted, gapsOf := TreeCharged(infos)
	for i, n := range s.order {
		spent, gaps := counted[i], gapsOf[i]
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
// did not report (tokens: the larger of the ceiling and the settlement's
// TokensFloor) or, when it never settled, for every channel. gaps
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
	if f := got.TokensFloor; got.Tokens == nil && f != nil && *f > 0 && *f <= ledger.MaxQuantity {
		// Unreported tokens are charged the ceiling, or what the
		// incomplete receipt shows was spent at least when more
		// (ledger.Pool.Settle charges the same).
		var ceiling int64
		if n.Reserved.Tokens != nil {
			ceiling = *n.Reserved.Tokens
		}
		if *f > ceiling {
			spent.Tokens += *f - ceiling
		}
	}
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

// TreeCharged returns what the run's totals count for each of nodes (a
// whole tree, in admission order) and the channels each left unknown:
// NodeSpent, except for a nested manager whose children drew on its
// carved pool (carve.go). Its ticket is charged its whole subtree, which
// its descendants' own counts already hold, so on a channel charged at
// its ceiling (unreported, or never settled) it counts only what of that
// ceiling its children's subtrees leave, at least 0. The counts then
// sum to what the run's pool charged.
func TreeCharged(nodes []NodeInfo) (counted []SpentTotal, gaps [][]string) {
	idx := make(map[NodeID]int, len(nodes))
	for i, n := range nodes {
		idx[n.ID] = i
	}
	counted, gaps = make([]SpentTotal, len(nodes)), make([][]string, len(nodes))
	kids := make([]map[string]int64, len(nodes)) // children's subtree sums, per channel
	// holds: the node's ticket is open — it is live, or it settled while
	// its children still held tickets in its carved pool (its ticket
	// holds its ceiling until they settle).
	holds := make([]bool, len(nodes))
	for i := len(nodes) - 1; i >= 0; i-- {
		n := nodes[i]
		spent, g := NodeSpent(n)
		holds[i] = holds[i] || live(n)
		if k := kids[i]; k != nil && carvable(n.Reserved) {
			adjust := g
			if holds[i] {
				adjust = []string{ledger.ChannelTokens, ledger.ChannelIterations, ledger.ChannelUSD}
				for name := range n.Reserved.Resources {
					adjust = append(adjust, "resource:"+name)
				}
			}
			for _, ch := range adjust {
				left := int64(0) // an uncapped channel of an open ticket holds nothing yet
				if c := ceilingOf(n.Reserved, ch); c != nil {
					left = max(0, *c-k[ch])
				}
				if ch == ledger.ChannelTokens && !holds[i] {
					// Its own incomplete receipt's floor is spent on top of
					// its children's: the pool charged its subtree at least
					// that much more (subtreeSpendLocked).
					left = max(left, ownTokensFloor(n))
				}
				setChannel(&spent, ch, left)
			}
		}
		counted[i], gaps[i] = spent, g
		j, ok := idx[n.Parent]
		if !ok {
			continue
		}
		// An open ticket holds its carver's open: its parent's, or
		// through an uncarvable parent that of the parent's carver.
		if holds[i] {
			holds[j] = true
		}
		if kids[j] == nil {
			kids[j] = map[string]int64{}
		}
		kids[j][ledger.ChannelTokens] += spent.Tokens + kids[i][ledger.ChannelTokens]
		kids[j][ledger.ChannelIterations] += spent.Iterations + kids[i][ledger.ChannelIterations]
		kids[j][ledger.ChannelUSD] += spent.MicroUSD + kids[i][ledger.ChannelUSD]
		for name, v := range spent.Resources {
			kids[j]["resource:"+name] += v + kids[i]["resource:"+name]
		}
	}
	return counted, gaps
}

// ownTokensFloor is the valid TokensFloor of n's settlement when its
// tokens are unreported, else 0.
func ownTokensFloor(n NodeInfo) int64 {
	if n.Settlement == nil || n.Settlement.Spent.Tokens != nil {
		return 0
	}
	return tokensAtLeast(n.Settlement.Spent)
}

// ceilingOf is b's ceiling on ledger channel ch, nil when it has none.
func ceilingOf(b ledger.Budget, ch string) *int64 {
	switch ch {
	case ledger.ChannelTokens:
		return b.Tokens
	case ledger.ChannelIterations:
		return b.Iterations
	case ledger.ChannelUSD:
		return b.MicroUSD
	}
	if name, ok := strings.CutPrefix(ch, "resource:"); ok {
		if v, ok := b.Resources[name]; ok {
			return &v
		}
	}
	return nil
}

// setChannel sets t's count on ledger channel ch to v.
func setChannel(t *SpentTotal, ch string, v int64) {
	switch ch {
	case ledger.ChannelTokens:
		t.Tokens = v
	case ledger.ChannelIterations:
		t.Iterations = v
	case ledger.ChannelUSD:
		t.MicroUSD = v
	default:
		if name, ok := strings.CutPrefix(ch, "resource:"); ok {
			t.Resources[name] = v
		}
	}
}
