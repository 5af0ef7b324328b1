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

func optStr(s string) canonjson.Value {
	if s == "" {
		return canonjson.NullValue()
	}
	return canonjson.StringValue(s)
}

// doc is the run record's document: what was requested, what ran, what
// was observed.
func (x *execution) doc() canonjson.Value {
	r := x.res
	m := []canonjson.Member{
		{Name: "task", Value: str(x.req.Task)},
		{Name: "provider", Value: str(x.req.Provider.Name())},
		{Name: "stage", Value: canonjson.NumberValue(float64(x.req.Stage))},
		{Name: "authoredProfileDigest", Value: str(r.AuthoredDigest)},
		{Name: "effectiveProfileDigest", Value: optStr(r.EffectiveDigest)},
		{Name: "requestedModel", Value: optStr(r.RequestedModel)},
		{Name: "servedModel", Value: optStr(r.Served.Model)},
		{Name: "servedProvider", Value: optStr(r.Served.Provider)},
		{Name: "environmentId", Value: optStr(r.EnvironmentID)},
		{Name: "events", Value: canonjson.NumberValue(float64(r.Events))},
	}
	if x.req.Profile.Harness != "" {
		m = append(m, canonjson.Member{Name: "harness", Value: str(string(x.req.Profile.Harness))})
	}
	if r.Status.Terminal() {
		m = append(m,
			canonjson.Member{Name: "terminal", Value: terminalValue(r.Status, r.Reason, r.Detail)},
			canonjson.Member{Name: "usage", Value: UsageValue(r.Usage)},
			canonjson.Member{Name: "text", Value: str(r.Text)},
			canonjson.Member{Name: "delivered", Value: canonjson.BoolValue(r.Delivered)},
		)
		if r.Output.IsValid() {
			m = append(m, canonjson.Member{Name: "output", Value: r.Output})
		}
		if r.Verdict != nil {
			if v, err := canonjson.ToValue(r.Verdict); err == nil {
				m = append(m, canonjson.Member{Name: "verdict", Value: v})
			}
		}
		if r.CheckError != "" {
			m = append(m, canonjson.Member{Name: "checkError", Value: str(r.CheckError)})
		}
		if r.Receipt != nil {
			if v, err := canonjson.ToValue(r.Receipt); err == nil {
				m = append(m, canonjson.Member{Name: "failureReceipt", Value: v})
			}
		}
	}
	return canonjson.ObjectValue(m)
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

func ledgerEntry(r Result) ledgerRecord {
	return ledgerRecord{Kind: LedgerTurn, Model: optModel(r.Served.Model), Usage: UsageValue(r.Usage), Status: string(r.Status)}
}

// optModel is a served model for a ledger entry: nil when unknown.
func optModel(m string) *string {
	if m == "" {
		return nil
	}
	return &m
}
