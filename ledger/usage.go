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

// Floor returns a as a lower bound: unknown stays unknown, a reported
// amount is no longer complete.
func (a Amount[N]) Floor() Amount[N] {
	a.Complete = false
	return a
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

// NoUsage is the usage of work that certainly spent nothing (it was
// refused before anything was dispatched): every channel exactly zero.
func NoUsage() Usage {
	zero, cost := ExactAmount[int64](0), ExactAmount[float64](0)
	return Usage{InputTokens: zero, OutputTokens: zero, CacheReadTokens: zero, CacheWriteTokens: zero,
		ReasoningTokens: zero, CostUSD: cost}
}

// Floor returns u with every reported channel a lower bound: the usage
// of work that ended before it reported all it spent (a cut stream, a
// timeout, a cancellation, a process that died). Unknown channels stay
// unknown.
func (u Usage) Floor() Usage {
	return Usage{
		InputTokens:      u.InputTokens.Floor(),
		OutputTokens:     u.OutputTokens.Floor(),
		CacheReadTokens:  u.CacheReadTokens.Floor(),
		CacheWriteTokens: u.CacheWriteTokens.Floor(),
		ReasoningTokens:  u.ReasoningTokens.Floor(),
		CostUSD:          u.CostUSD.Floor(),
	}
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

// TurnUsage aggregates one turn's usage reports in stream order, following
// seed 000's usageMode: contract.UsageDelta adds new usage;
// contract.UsageCumulative includes earlier contributions and replaces the
// turn's total, so a repeated cumulative total adds nothing; no mode leaves
// the aggregation unknown, so the total can only be a floor (the larger of
// what was seen), never a sum. Events already seen (by id) are ignored, so
// a replayed or reconnected stream does not count twice. The zero value is
// an empty turn whose usage is unknown.
type TurnUsage struct {
	total Usage
	seen  bool
	ids   map[string]struct{}
}

// ObserveEvent folds one event's usage into the turn and reports whether
// it counted (false for an event without usage or with an id already
// seen).
func (t *TurnUsage) ObserveEvent(e contract.EnvironmentEvent) (bool, error) {
	u, mode, ok := e.UsageReport()
	if !ok {
		return false, nil
	}
	if e.ID != nil {
		if _, dup := t.ids[*e.ID]; dup {
			return false, nil
		}
		if t.ids == nil {
			t.ids = map[string]struct{}{}
		}
		t.ids[*e.ID] = struct{}{}
	}
	return true, t.Observe(u, mode)
}

// Observe folds one usage report into the turn according to its mode.
func (t *TurnUsage) Observe(u *contract.TokenUsage, mode contract.UsageMode) error {
	if u == nil {
		return nil
	}
	next := FromTokenUsage(u)
	switch mode {
	case contract.UsageDelta:
		if t.seen {
			t.total = t.total.Plus(next)
		} else {
			t.total = next // the turn had used nothing before its first report
		}
	case contract.UsageCumulative:
		t.total = next
	case "":
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
