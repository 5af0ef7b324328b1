package kernel

import (
	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/store"
)

// AmountValue is the JSON form of a measured amount: null when unknown,
// the number when exact, and {"atLeast": n} when only a floor is known.
func AmountValue[N int64 | float64](a ledger.Amount[N]) canonjson.Value {
	switch {
	case !a.Reported:
		return canonjson.NullValue()
	case !a.Complete:
		return canonjson.ObjectValue([]canonjson.Member{{Name: "atLeast", Value: canonjson.NumberValue(float64(a.Value))}})
	}
	return canonjson.NumberValue(float64(a.Value))
}

// UsageValue is the JSON form of a usage: every channel present, unknown
// ones null. Members are in canonical order, so canonicalizing it (every
// recorded body is) sorts nothing.
func UsageValue(u ledger.Usage) canonjson.Value {
	return canonjson.ObjectValue([]canonjson.Member{
		{Name: "cacheReadTokens", Value: AmountValue(u.CacheReadTokens)},
		{Name: "cacheWriteTokens", Value: AmountValue(u.CacheWriteTokens)},
		{Name: "costUsd", Value: AmountValue(u.CostUSD)},
		{Name: "inputTokens", Value: AmountValue(u.InputTokens)},
		{Name: "outputTokens", Value: AmountValue(u.OutputTokens)},
		{Name: "reasoningTokens", Value: AmountValue(u.ReasoningTokens)},
	})
}

func str(s string) canonjson.Value { return canonjson.StringValue(s) }

// doc is the run record's document (Record): what was requested, what
// ran, what was observed.
func (x *execution) doc() canonjson.Value {
	rec := x.typed()
	v, err := canonjson.ToValue(rec)
	if err != nil && rec.Output.IsValid() {
		// An output without a JSON form is left out rather than losing
		// the record.
		x.log.Warn("the run's output has no JSON form; not recorded", "run", x.req.RunID, "err", err)
		rec.Output = canonjson.Value{}
		v, err = canonjson.ToValue(rec)
	}
	if err != nil {
		x.log.Error("encoding the run record", "run", x.req.RunID, "err", err)
	}
	return v
}

// terminalValue is a run document's terminal state: its status and, for
// a run that did not complete, the reason and detail.
func terminalValue(status store.Status, reason, detail string) canonjson.Value {
	m := []canonjson.Member{{Name: "status", Value: str(string(status))}}
	if reason != "" {
		m = append(m, canonjson.Member{Name: "reason", Value: str(reason)})
	}
	if detail != "" {
		m = append(m, canonjson.Member{Name: "detail", Value: str(detail)})
	}
	return canonjson.ObjectValue(m)
}

// Ledger entry kinds. A turn's ledger holds a LedgerProgress entry each
// time its reported usage changes, with the usage so far as a floor (the
// turn was not over), and one LedgerTurn entry when it ends, with its
// usage as recorded; a tool loop's, a progress entry after each turn and
// one LedgerToolLoop entry at the end. A run's entries are snapshots,
// not increments: its spend is its last entry — the closing one, or for
// a run whose process died, the last progress it reported (a floor).
const (
	LedgerProgress = "progress"
	LedgerTurn     = "turn"
	// LedgerToolLoop is a tool loop's closing entry: the usage of all its
	// turns.
	LedgerToolLoop = "tool-loop"
)

// ledgerRecord is one cost-ledger entry: the turn's observed usage, with
// unknown channels null so sums over entries stay floors.
type ledgerRecord struct {
	Kind   string          `json:"kind"`
	Model  *string         `json:"servedModel,omitzero"`
	Usage  canonjson.Value `json:"usage"`
	Status string          `json:"status"`
}

// progressEntry is a LedgerProgress entry: usage so far as a floor, the
// served model when known. It is built directly (it is written once per
// turn on the tool loop's hot path).
func progressEntry(usage ledger.Usage, served string) canonjson.Value {
	m := make([]canonjson.Member, 0, 4)
	m = append(m, canonjson.Member{Name: "kind", Value: str(LedgerProgress)})
	if served != "" {
		m = append(m, canonjson.Member{Name: "servedModel", Value: str(served)})
	}
	m = append(m,
		canonjson.Member{Name: "status", Value: str(string(store.StatusRunning))},
		canonjson.Member{Name: "usage", Value: UsageValue(usage.Floor())})
	return canonjson.ObjectValue(m)
}

func ledgerEntry(r Result) ledgerRecord {
	return ledgerRecord{Kind: LedgerTurn, Model: optional(r.Served.Model), Usage: UsageValue(r.Usage), Status: string(r.Status)}
}

// optional is s for a document member that is null when unknown: nil
// when s is empty.
func optional(m string) *string {
	if m == "" {
		return nil
	}
	return &m
}
