package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/supervise"
)

// topJSONSchemaVersion versions the document agentrt top --json prints.
const topJSONSchemaVersion = 1

// The document agentrt top --json prints: one snapshot of what the frame
// shows. Every member is always present; a number or a text not known
// is null, never 0 or "" (docs/top.md "--json").
type (
	topJSONDoc struct {
		SchemaVersion int          `json:"schemaVersion"`
		Runs          []topJSONRun `json:"runs"`
		Errors        []string     `json:"errors"`
	}
	topJSONRun struct {
		ID         string             `json:"id"`
		Kind       string             `json:"kind"`
		Status     string             `json:"status"`
		Live       bool               `json:"live"`
		Task       *string            `json:"task"`
		RunDir     *string            `json:"runDir"`
		StartedAt  *string            `json:"startedAt"`
		Budget     *topJSONBudget     `json:"budget"`
		Spend      *topJSONSpend      `json:"spend"`
		Supervisor *topJSONSupervisor `json:"supervisor"`
		Resume     *string            `json:"resume"`
		Notes      []string           `json:"notes"`
		Workers    []topJSONWorker    `json:"workers"`
		Totals     *topJSONTotals     `json:"totals"`
		Tail       []string           `json:"tail"`
	}
	topJSONBudget struct {
		Tokens   *int64 `json:"tokens"`
		MicroUSD *int64 `json:"microUsd"`
	}
	topJSONSpend struct {
		Tokens       *int64 `json:"tokens"`
		InputTokens  *int64 `json:"inputTokens"`
		OutputTokens *int64 `json:"outputTokens"`
		MicroUSD     *int64 `json:"microUsd"`
		Floor        bool   `json:"floor"`
	}
	topJSONSupervisor struct {
		State  string  `json:"state"`
		PID    *int    `json:"pid"`
		Host   *string `json:"host"`
		Detail string  `json:"detail"`
	}
	topJSONWorker struct {
		ID        string         `json:"id"`
		Label     *string        `json:"label"`
		Parent    *string        `json:"parent"`
		Lead      *string        `json:"lead"`
		State     string         `json:"state"`
		Verdict   *string        `json:"verdict"`
		Task      *string        `json:"task"`
		LatencyMS *int64         `json:"latencyMs"`
		Budget    *topJSONBudget `json:"budget"`
		Spend     *topJSONSpend  `json:"spend"`
		TokensIn  *int64         `json:"tokensIn"`
		TokensOut *int64         `json:"tokensOut"`
	}
	topJSONTotals struct {
		Workers   int              `json:"workers"`
		States    map[string]int   `json:"states"`
		InFlight  int              `json:"inFlight"`
		Settled   int              `json:"settled"`
		TokensIn  *int64           `json:"tokensIn"`
		TokensOut *int64           `json:"tokensOut"`
		MicroUSD  *int64           `json:"microUsd"`
		Floor     bool             `json:"floor"`
		LatencyMS topJSONLatencies `json:"latencyMs"`
	}
	topJSONLatencies struct {
		N      int    `json:"n"`
		Min    *int64 `json:"min"`
		Median *int64 `json:"median"`
		P90    *int64 `json:"p90"`
		Max    *int64 `json:"max"`
	}
)

// writeTopJSON prints snap as the --json document.
func writeTopJSON(w io.Writer, snap topSnapshot) error {
	doc := topJSONDoc{SchemaVersion: topJSONSchemaVersion, Runs: []topJSONRun{}, Errors: orEmpty(snap.Errors)}
	for _, r := range snap.Runs {
		doc.Runs = append(doc.Runs, topRunJSON(r))
	}
	// encoding/json writes an unknown (nil) as null, where
	// canonjson.ToValue would leave the member out.
	data, err := json.Marshal(doc)
	if err != nil {
		return fmt.Errorf("top --json: %w", err)
	}
	v, err := canonjson.Decode(data)
	if err != nil {
		return fmt.Errorf("top --json: %w", err)
	}
	return writeJSON(w, v)
}

func topRunJSON(r topRun) topJSONRun {
	out := topJSONRun{ID: r.ID, Kind: r.Kind, Status: r.Status, Live: r.Live, Task: known(r.Task),
		Budget: budgetJSON(r.budget), Spend: spendJSON(r.spend),
		Notes: orEmpty(r.Notes), Workers: []topJSONWorker{}, Tail: orEmpty(r.Tail)}
	if r.dir != "" {
		out.RunDir = new(r.dir)
	}
	if !r.started.IsZero() && !r.startGuessed {
		out.StartedAt = new(r.started.UTC().Format(time.RFC3339Nano))
	}
	if p := r.supervisor; p != nil {
		s := &topJSONSupervisor{State: p.State.String(), Detail: p.Why}
		if h := p.Holder; h != nil {
			s.PID, s.Host = new(h.PID), known(h.Host)
		}
		out.Supervisor = s
		if p.State == supervise.HolderGone {
			out.Resume = new(resumeHint(r.dir))
		}
	}
	for _, w := range r.Workers {
		out.Workers = append(out.Workers, topWorkerJSON(w))
	}
	if t := r.Totals; t != nil {
		out.Totals = totalsJSON(t, r.spend)
	}
	return out
}

func topWorkerJSON(w topWorker) topJSONWorker {
	out := topJSONWorker{ID: w.ID, Label: known(w.Label), Parent: known(w.Parent), Lead: known(w.Lead), State: w.State,
		Verdict: known(w.Verdict), Task: known(w.Task), Budget: budgetJSON(w.budget),
		TokensIn: w.tokIn.value(), TokensOut: w.tokOut.value()}
	if out.Parent == nil {
		// A spawn that names no parent is its node id's child: a
		// direct worker's, the run's root.
		if p, ok := supervise.NodeID(w.ID).Parent(); ok {
			out.Parent = new(string(p))
		}
	}
	if w.latency != nil {
		out.LatencyMS = new(w.latency.Milliseconds())
	}
	if s := w.spent; s != nil && (s.Tokens != nil || s.MicroUSD != nil) {
		out.Spend = &topJSONSpend{Tokens: s.Tokens, MicroUSD: s.MicroUSD}
	}
	return out
}

func totalsJSON(t *topTotals, spend *topSpend) *topJSONTotals {
	out := &topJSONTotals{States: map[string]int{}, InFlight: t.InFlight, Settled: t.Settled,
		TokensIn: t.TokIn.value(), TokensOut: t.TokOut.value(),
		Floor: t.InFlight > 0 || (t.TokIn.known && t.TokIn.partial) || (t.TokOut.known && t.TokOut.partial)}
	for s, n := range t.States {
		out.Workers += n
		out.States[s] = n
	}
	if t.usd != nil {
		out.MicroUSD = new(t.usd.micro)
		out.Floor = out.Floor || t.usd.floor
	}
	l := t.Latencies
	out.LatencyMS.N = len(l)
	if len(l) > 0 {
		ms := func(d time.Duration) *int64 { return new(d.Milliseconds()) }
		out.LatencyMS.Min, out.LatencyMS.Median, out.LatencyMS.P90, out.LatencyMS.Max = ms(l[0]), ms(t.rank(0.5)), ms(t.rank(0.9)), ms(l[len(l)-1])
	}
	return out
}

// orEmpty is l, or an empty list for none: a list member is [] when
// empty, never null.
func orEmpty(l []string) []string {
	if l == nil {
		return []string{}
	}
	return l
}

// known is s, or nil when s is empty or "unknown".
func known(s string) *string {
	if s == "" || s == "unknown" {
		return nil
	}
	return &s
}

func budgetJSON(b *supervise.BudgetRecord) *topJSONBudget {
	if b == nil {
		return nil
	}
	return &topJSONBudget{Tokens: b.Tokens, MicroUSD: b.MicroUSD}
}

func spendJSON(s *topSpend) *topJSONSpend {
	if s == nil {
		return nil
	}
	return &topJSONSpend{Tokens: s.Tokens, InputTokens: s.InputTokens, OutputTokens: s.OutputTokens, MicroUSD: s.MicroUSD, Floor: s.Floor}
}
