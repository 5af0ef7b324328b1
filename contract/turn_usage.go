package contract

import "sync"

// TurnUsage aggregates the token usage that the events of one turn
// report, honoring each event's usage mode:
//
//   - a delta adds its counts to the turn total;
//   - a cumulative report includes every earlier contribution and replaces
//     the turn total (exact again), so a repeated cumulative total adds
//     nothing;
//   - a report without a mode has unknown aggregation semantics: it is
//     never summed; it only raises the total to at least its own counts,
//     and the total is no longer exact (it is a floor).
//
// Events with an id already seen are ignored, so a replayed stream does not
// count twice. A count that some contributing reports left out is not
// invented: the total keeps what was reported and is marked inexact. The
// zero value is ready to use and safe for concurrent use.
type TurnUsage struct {
	mu      sync.Mutex
	seen    map[string]struct{}
	total   *TokenUsage
	partial bool // a delta left out a count an earlier report had, or vice versa
	unknown bool // a report had no usage mode
}

// Add applies one event's usage and reports whether it changed the
// aggregation (false for events without usage and for replayed ids).
func (u *TurnUsage) Add(e EnvironmentEvent) bool {
	usage, mode, ok := e.UsageReport()
	if !ok {
		return false
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if e.ID != nil {
		if _, dup := u.seen[*e.ID]; dup {
			return false
		}
		if u.seen == nil {
			u.seen = map[string]struct{}{}
		}
		u.seen[*e.ID] = struct{}{}
	}
	u.apply(*usage, mode)
	return true
}

// AddUsage applies one usage report with its mode, without replay
// protection.
func (u *TurnUsage) AddUsage(usage TokenUsage, mode UsageMode) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.apply(usage, mode)
}

func (u *TurnUsage) apply(usage TokenUsage, mode UsageMode) {
	if u.total == nil {
		first := evCloneUsage(usage)
		u.total = &first
		if !mode.Known() {
			u.unknown = true
		}
		return
	}
	switch mode {
	case UsageCumulative:
		replaced := evCloneUsage(usage)
		u.total = &replaced
		u.partial, u.unknown = false, false
	case UsageDelta:
		u.total.InputTokens += usage.InputTokens
		u.total.OutputTokens += usage.OutputTokens
		for _, f := range evUsageCounts {
			t, d := f(u.total), f(&usage)
			switch {
			case *t != nil && *d != nil:
				v := **t + **d
				*t = &v
			case *t == nil && *d != nil:
				v := **d
				*t = &v
				u.partial = true
			case *t != nil && *d == nil:
				u.partial = true
			}
		}
		switch {
		case u.total.Cost != nil && usage.Cost != nil:
			c := *u.total.Cost + *usage.Cost
			u.total.Cost = &c
		case u.total.Cost == nil && usage.Cost != nil:
			c := *usage.Cost
			u.total.Cost = &c
			u.partial = true
		case u.total.Cost != nil && usage.Cost == nil:
			u.partial = true
		}
	default:
		u.unknown = true
		u.total.InputTokens = max(u.total.InputTokens, usage.InputTokens)
		u.total.OutputTokens = max(u.total.OutputTokens, usage.OutputTokens)
		for _, f := range evUsageCounts {
			t, d := f(u.total), f(&usage)
			if *d != nil && (*t == nil || **d > **t) {
				v := **d
				*t = &v
			}
		}
		if usage.Cost != nil && (u.total.Cost == nil || *usage.Cost > *u.total.Cost) {
			c := *usage.Cost
			u.total.Cost = &c
		}
	}
}

// Total returns the turn's usage (nil when no event reported any) and
// whether it is exact. An inexact total is a floor: the turn used at least
// this much.
func (u *TurnUsage) Total() (usage *TokenUsage, exact bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.total == nil {
		return nil, true
	}
	out := evCloneUsage(*u.total)
	return &out, !u.unknown && !u.partial
}

// evUsageCounts select the optional integer counts of a usage.
var evUsageCounts = []func(*TokenUsage) **int64{
	func(u *TokenUsage) **int64 { return &u.TotalTokens },
	func(u *TokenUsage) **int64 { return &u.CacheReadInputTokens },
	func(u *TokenUsage) **int64 { return &u.CacheCreationInputTokens },
	func(u *TokenUsage) **int64 { return &u.ReasoningTokens },
}

// evCloneUsage copies a usage without sharing its pointers.
func evCloneUsage(u TokenUsage) TokenUsage {
	out := u
	for _, f := range evUsageCounts {
		if p := *f(&u); p != nil {
			v := *p
			*f(&out) = &v
		}
	}
	if u.Cost != nil {
		c := *u.Cost
		out.Cost = &c
	}
	return out
}
