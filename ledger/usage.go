package ledger

import (
	"fmt"
	"strconv"

	"github.com/agentrt/agentrt/contract"
)

// Amount is a measured quantity that remembers how much is known about it:
// Unknown when nothing was reported, Exact when every part was reported,
// and a Floor (Value is a lower bound) when some parts were reported and
// some were not, or when the aggregation of what was reported is unknown.
// The zero Amount is unknown, never zero.
type Amount[N int64 | float64] struct {
	Value N
	// Reported is true once any part was reported.
	Reported bool
	// Complete is true while every part was reported exactly.
	Complete bool
}

// ExactAmount returns a fully known amount.
func ExactAmount[N int64 | float64](v N) Amount[N] {
	return Amount[N]{Value: v, Reported: true, Complete: true}
}

// Known reports whether the amount is exact.
func (a Amount[N]) Known() bool { return a.Reported && a.Complete }

// Plus returns the sum of two amounts. The sum is exact only when both are.
func (a Amount[N]) Plus(b Amount[N]) Amount[N] {
	if !a.Reported && !b.Reported {
		return Amount[N]{}
	}
	return Amount[N]{Value: a.Value + b.Value, Reported: true, Complete: a.Complete && b.Complete}
}

// String renders the amount for people: "unknown", "≥ 12" or "12".
func (a Amount[N]) String() string {
	switch {
	case !a.Reported:
		return "unknown"
	case !a.Complete:
		return "≥ " + format(a.Value)
	}
	return format(a.Value)
}

func format[N int64 | float64](v N) string {
	switch x := any(v).(type) {
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	}
	return fmt.Sprint(v)
}

// Usage is token usage and cost with every channel's knowledge kept.
// Reasoning tokens count as output; they are also reported on their own
// when the provider separates them.
type Usage struct {
	InputTokens      Amount[int64]
	OutputTokens     Amount[int64]
	CacheReadTokens  Amount[int64]
	CacheWriteTokens Amount[int64]
	ReasoningTokens  Amount[int64]
	CostUSD          Amount[float64]
}

// Plus adds two usages channel by channel.
func (u Usage) Plus(v Usage) Usage {
	return Usage{
		InputTokens:      u.InputTokens.Plus(v.InputTokens),
		OutputTokens:     u.OutputTokens.Plus(v.OutputTokens),
		CacheReadTokens:  u.CacheReadTokens.Plus(v.CacheReadTokens),
		CacheWriteTokens: u.CacheWriteTokens.Plus(v.CacheWriteTokens),
		ReasoningTokens:  u.ReasoningTokens.Plus(v.ReasoningTokens),
		CostUSD:          u.CostUSD.Plus(v.CostUSD),
	}
}

// FromTokenUsage converts a provider's report: its required counts are
// exact, an optional count it left out is unknown (not zero). A nil report
// is entirely unknown.
func FromTokenUsage(t *contract.TokenUsage) Usage {
	if t == nil {
		return Usage{}
	}
	opt := func(p *int64) Amount[int64] {
		if p == nil {
			return Amount[int64]{}
		}
		return ExactAmount(*p)
	}
	u := Usage{
		InputTokens:      ExactAmount(t.InputTokens),
		OutputTokens:     ExactAmount(t.OutputTokens),
		CacheReadTokens:  opt(t.CacheReadInputTokens),
		CacheWriteTokens: opt(t.CacheCreationInputTokens),
		ReasoningTokens:  opt(t.ReasoningTokens),
	}
	if t.Cost != nil {
		u.CostUSD = ExactAmount(*t.Cost)
	}
	return u
}

// Usage modes, as providers declare them on usage events.
const (
	// ModeDelta: the event's usage is new usage, added to the turn.
	ModeDelta = "delta"
	// ModeCumulative: the event's usage includes earlier contributions and
	// replaces the turn's total; a repeated cumulative total adds nothing.
	ModeCumulative = "cumulative"
	// ModeUnknown ("" on the wire: no usageMode) leaves the aggregation
	// unknown, so the turn's total can only be a floor.
	ModeUnknown = ""
)

// TurnUsage aggregates one turn's usage events in stream order. The zero
// value is an empty turn (usage unknown).
type TurnUsage struct {
	total Usage
	seen  bool
}

// Observe folds one usage report into the turn according to its mode.
func (t *TurnUsage) Observe(u *contract.TokenUsage, mode string) error {
	if u == nil {
		return nil
	}
	next := FromTokenUsage(u)
	switch mode {
	case ModeDelta:
		if t.seen {
			t.total = t.total.Plus(next)
		} else {
			t.total = next // the turn had used nothing before its first report
		}
	case ModeCumulative:
		t.total = next
	case ModeUnknown:
		// Delta or cumulative? Either way the true total is at least the
		// larger of what we have and what was reported; it is a floor.
		if !t.seen {
			t.total = Usage{}
		}
		t.total = floorOf(t.total, next)
	default:
		return fmt.Errorf("ledger: unknown usage mode %q", mode)
	}
	t.seen = true
	return nil
}

func floorOf(a, b Usage) Usage {
	max := func(x, y Amount[int64]) Amount[int64] {
		if !x.Reported && !y.Reported {
			return Amount[int64]{}
		}
		v := x.Value
		if y.Value > v {
			v = y.Value
		}
		return Amount[int64]{Value: v, Reported: true}
	}
	maxf := func(x, y Amount[float64]) Amount[float64] {
		if !x.Reported && !y.Reported {
			return Amount[float64]{}
		}
		v := x.Value
		if y.Value > v {
			v = y.Value
		}
		return Amount[float64]{Value: v, Reported: true}
	}
	return Usage{
		InputTokens: max(a.InputTokens, b.InputTokens), OutputTokens: max(a.OutputTokens, b.OutputTokens),
		CacheReadTokens: max(a.CacheReadTokens, b.CacheReadTokens), CacheWriteTokens: max(a.CacheWriteTokens, b.CacheWriteTokens),
		ReasoningTokens: max(a.ReasoningTokens, b.ReasoningTokens), CostUSD: maxf(a.CostUSD, b.CostUSD),
	}
}

// Total returns the turn's usage: unknown on every channel when no usage
// was reported at all.
func (t *TurnUsage) Total() Usage { return t.total }

// Reported reports whether the turn saw any usage report.
func (t *TurnUsage) Reported() bool { return t.seen }
