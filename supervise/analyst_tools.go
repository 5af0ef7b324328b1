package supervise

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/tools"
)

// The trace tools an analyst's model is given (§9 define_analyst tool
// groups): the run's settled workers are the dataset, each worker one
// trace, and a trace's spans are its task, each model turn's streamed
// text (from its worker log, with a run dir), its output and its
// settlement.
const (
	ToolDatasetOverview = "getDatasetOverview"
	ToolQueryTraces     = "queryTraces"
	ToolCountTraces     = "countTraces"
	ToolViewTrace       = "viewTrace"
	ToolViewSpans       = "viewSpans"
	ToolSearchTrace     = "searchTrace"
	ToolSearchSpan      = "searchSpan"
)

// Trace tool bounds.
const (
	// maxAnalystTraces bounds the traces one analyst's dataset holds.
	maxAnalystTraces = 256
	// maxSpanText bounds one span's text as a tool returns it, and
	// maxViewChars what one viewTrace returns in all.
	maxSpanText  = 4000
	maxViewChars = 16000
	// maxPattern bounds a search pattern; maxMatches the matches one
	// search returns; maxPage the traces one query returns.
	maxPattern = 200
	maxMatches = 50
	maxPage    = 50
	// maxViewSpans bounds the spans one viewSpans returns.
	maxViewSpans = 20
)

// ToolGroupTools returns the trace tools group g mounts, in a fixed
// order: all seven for all; getDatasetOverview, queryTraces and
// countTraces for discovery (no deep reads); discovery plus viewTrace
// and viewSpans for discoveryAndRead; discovery plus searchTrace and
// searchSpan for discoveryAndSearch; getDatasetOverview, queryTraces,
// viewSpans and searchSpan for targeted; and getDatasetOverview,
// viewTrace, viewSpans, searchTrace and searchSpan for singleTrace,
// whose dataset is the analysed worker alone. An unknown group mounts
// nothing (ValidateLens refuses it before).
func ToolGroupTools(g ToolGroup) []string {
	switch g {
	case ToolGroupAll:
		return []string{ToolDatasetOverview, ToolQueryTraces, ToolCountTraces, ToolViewTrace, ToolViewSpans, ToolSearchTrace, ToolSearchSpan}
	case ToolGroupDiscovery:
		return []string{ToolDatasetOverview, ToolQueryTraces, ToolCountTraces}
	case ToolGroupDiscoveryAndRead:
		return []string{ToolDatasetOverview, ToolQueryTraces, ToolCountTraces, ToolViewTrace, ToolViewSpans}
	case ToolGroupDiscoveryAndSearch:
		return []string{ToolDatasetOverview, ToolQueryTraces, ToolCountTraces, ToolSearchTrace, ToolSearchSpan}
	case ToolGroupTargeted:
		return []string{ToolDatasetOverview, ToolQueryTraces, ToolViewSpans, ToolSearchSpan}
	case ToolGroupSingleTrace:
		return []string{ToolDatasetOverview, ToolViewTrace, ToolViewSpans, ToolSearchTrace, ToolSearchSpan}
	}
	return nil
}

// TraceSpan is one span of a trace as the trace tools return it.
type TraceSpan struct {
	Index   int    `json:"index"`
	Kind    string `json:"kind"`
	Text    string `json:"text"`
	Clipped bool   `json:"clipped,omitzero"`
}

// Span kinds.
const (
	SpanTask       = "task"
	SpanTurn       = "turn"
	SpanOutput     = "output"
	SpanSettlement = "settlement"
)

// analystTrace is one settled worker as an analyst's dataset holds it.
type analystTrace struct {
	id       NodeID
	label    string
	profile  string
	state    State
	reason   string
	hasError bool
	spans    []TraceSpan
}

// traceDataset is an analyst's dataset: a snapshot of the run's settled
// workers taken when the analyst starts, the analysed one first.
type traceDataset struct {
	analysed NodeID
	traces   []analystTrace
}

// datasetFor snapshots the dataset lens l's analyst over source sees:
// source alone for singleTrace, else the run's settled workers (not
// analysts), source first, at most maxAnalystTraces.
func (c *Coordinator) datasetFor(ctx context.Context, l Lens, source NodeID) *traceDataset {
	ds := &traceDataset{analysed: source}
	type pending struct {
		trace int
		label string
	}
	var reads []pending
	// The source first, then the others in admission order, read a page
	// at a time until the dataset is full: an analysis costs the same
	// however many nodes the run has.
	c.mu.Lock()
	consider := func(n NodeInfo) {
		if _, isAnalyst := c.analysts[n.ID]; isAnalyst || n.Settlement == nil || n.ID == c.scope.Root() {
			return
		}
		w := c.workers[n.ID]
		if w == nil {
			return
		}
		label := labelOf(n.Label, n.Profile)
		tr := analystTrace{id: n.ID, label: label, profile: n.Profile, state: n.State, reason: n.Settlement.Reason,
			hasError: n.State != StateDone || w.checkErr != ""}
		add := func(kind, text string) {
			tr.spans = append(tr.spans, TraceSpan{Index: len(tr.spans), Kind: kind, Text: text})
		}
		add(SpanTask, w.task)
		reads = append(reads, pending{trace: len(ds.traces), label: label})
		add(SpanOutput, w.text)
		settled := string(n.State)
		if n.Settlement.Reason != "" {
			settled += ": " + n.Settlement.Reason
		}
		if w.checkErr != "" {
			settled += "; check error: " + w.checkErr
		} else if w.verdict != nil {
			settled += fmt.Sprintf("; delivered %v", w.delivered)
			if w.verdict.Reason != "" {
				settled += " (" + w.verdict.Reason + ")"
			}
		}
		add(SpanSettlement, settled)
		ds.traces = append(ds.traces, tr)
	}
	if n, ok := c.scope.Node(source); ok {
		consider(n)
	}
	if l.ToolGroup != ToolGroupSingleTrace {
		for next := 0; len(ds.traces) < maxAnalystTraces; {
			var page []NodeInfo
			page, next = c.scope.nodesFrom(next, maxAnalystTraces)
			if len(page) == 0 {
				break
			}
			for _, n := range page {
				if len(ds.traces) >= maxAnalystTraces {
					break
				}
				if n.ID != source {
					consider(n)
				}
			}
		}
	}
	c.mu.Unlock()
	// The turns come from the worker logs, read without the lock, each
	// file once, at most maxDatasetLogs of them (the analysed worker's
	// first): a bounded read however large the run.
	logs := map[string][]StreamRecord{}
	for _, r := range reads {
		recs, ok := logs[r.label]
		if !ok {
			if len(logs) >= maxDatasetLogs {
				continue
			}
			recs = c.workerLog(ctx, r.label)
			logs[r.label] = recs
		}
		tr := &ds.traces[r.trace]
		turns := turnTexts(recs, tr.id)
		if len(turns) == 0 {
			continue
		}
		// Task, turns, output, settlement.
		spans := make([]TraceSpan, 0, len(tr.spans)+len(turns))
		spans = append(spans, tr.spans[0])
		for _, t := range turns {
			spans = append(spans, TraceSpan{Kind: SpanTurn, Text: t})
		}
		spans = append(spans, tr.spans[1:]...)
		for i := range spans {
			spans[i].Index = i
		}
		tr.spans = spans
	}
	return ds
}

// maxDatasetLogs bounds the worker logs one analyst's dataset reads.
const maxDatasetLogs = 4

// workerLog reads the log of the workers labelled label; without a run
// dir (or a log) it is empty.
func (c *Coordinator) workerLog(ctx context.Context, label string) []StreamRecord {
	if c.log.dir == "" {
		return nil
	}
	recs, _, err := ReadWorkerLog(ctx, c.log.dir, label)
	if err != nil {
		return nil
	}
	return recs
}

// turnTexts is node's turns in its worker log recs: each turn's
// streamed text and how it ended.
func turnTexts(recs []StreamRecord, node NodeID) []string {
	var out []string
	var b strings.Builder
	for _, r := range recs {
		if r.Node != node {
			continue
		}
		switch r.Kind {
		case StreamEvent:
			b.WriteString(r.Text)
		case StreamTurnEnded:
			fmt.Fprintf(&b, " [turn ended %s", cmpOr(r.Terminal, "without a terminal"))
			if r.InputTokens != nil && r.OutputTokens != nil {
				fmt.Fprintf(&b, ", %d tokens", *r.InputTokens+*r.OutputTokens)
			}
			b.WriteString("]")
			out = append(out, b.String())
			b.Reset()
		}
	}
	return out
}

func cmpOr(s, alt string) string {
	if s == "" {
		return alt
	}
	return s
}

func (ds *traceDataset) find(id NodeID) (*analystTrace, error) {
	for i := range ds.traces {
		if ds.traces[i].id == id {
			return &ds.traces[i], nil
		}
	}
	return nil, &VerbRefusal{Code: "unknown-trace", Reason: fmt.Sprintf("no trace %q in this dataset; list them with %s", id, ToolQueryTraces)}
}

// TraceFilter selects traces; an absent member matches all.
type TraceFilter struct {
	State     State  `json:"state,omitzero" jsonschema:"done, failed or cancelled"`
	Profile   string `json:"profile,omitzero"`
	Label     string `json:"label,omitzero"`
	HasErrors *bool  `json:"hasErrors,omitzero" jsonschema:"true: traces that failed or whose check failed to run"`
}

func (f TraceFilter) match(t analystTrace) bool {
	return (f.State == "" || t.state == f.State) && (f.Profile == "" || t.profile == f.Profile) &&
		(f.Label == "" || t.label == f.Label) && (f.HasErrors == nil || *f.HasErrors == t.hasError)
}

// DatasetOverview is getDatasetOverview's reply.
type DatasetOverview struct {
	AnalysedWorker NodeID          `json:"analysedWorkerId"`
	Traces         int             `json:"traces"`
	States         map[State]int   `json:"states"`
	Profiles       []string        `json:"profiles"`
	Labels         []string        `json:"labels"`
	WithErrors     int             `json:"withErrors"`
	SampleTraceIDs []NodeID        `json:"sampleTraceIds"`
	Tools          []string        `json:"tools"`
	Limits         AnalystLimitsOf `json:"limits"`
}

// AnalystLimitsOf is how much the analyst may still do.
type AnalystLimitsOf struct {
	ModelCalls int `json:"modelCalls"`
	ToolCalls  int `json:"toolCalls"`
}

// TraceSummary is one trace as queryTraces lists it.
type TraceSummary struct {
	TraceID   NodeID `json:"traceId"`
	Label     string `json:"label"`
	Profile   string `json:"profile"`
	State     State  `json:"state"`
	HasErrors bool   `json:"hasErrors"`
	Spans     int    `json:"spans"`
	Chars     int    `json:"chars"`
}

// TraceQuery is queryTraces' and countTraces' argument.
type TraceQuery struct {
	Filters TraceFilter `json:"filters,omitzero"`
	Offset  int         `json:"offset,omitzero" jsonschema:"traces to skip"`
	Limit   int         `json:"limit,omitzero" jsonschema:"at most 50 (default 20)"`
}

// TracePage is queryTraces' reply.
type TracePage struct {
	Traces     []TraceSummary `json:"traces"`
	Total      int            `json:"total"`
	NextOffset *int           `json:"nextOffset,omitzero"`
}

// TraceCount is countTraces' reply.
type TraceCount struct {
	Count int `json:"count"`
}

// ViewTraceArgs is viewTrace's argument.
type ViewTraceArgs struct {
	TraceID  NodeID `json:"traceId"`
	MaxChars int    `json:"maxChars,omitzero" jsonschema:"at most 16000 (default 8000)"`
}

// TraceView is viewTrace's reply.
type TraceView struct {
	TraceSummary
	Reason  string      `json:"reason,omitzero"`
	Spans   []TraceSpan `json:"spans"`
	Clipped bool        `json:"clipped,omitzero"`
}

// ViewSpansArgs is viewSpans' argument: spans From to To, inclusive.
type ViewSpansArgs struct {
	TraceID NodeID `json:"traceId"`
	From    int    `json:"from"`
	To      int    `json:"to" jsonschema:"inclusive; at most 20 spans"`
}

// SpanPage is viewSpans' reply.
type SpanPage struct {
	Spans []TraceSpan `json:"spans"`
}

// SearchTraceArgs is searchTrace's argument: an RE2 pattern searched in
// every span of TraceID, or of every trace.
type SearchTraceArgs struct {
	Pattern string `json:"pattern" jsonschema:"an RE2 regular expression (at most 200 characters)"`
	TraceID NodeID `json:"traceId,omitzero" jsonschema:"only this trace (default: all)"`
	Limit   int    `json:"limit,omitzero" jsonschema:"at most 50 (default 20)"`
}

// SearchSpanArgs is searchSpan's argument.
type SearchSpanArgs struct {
	TraceID NodeID `json:"traceId"`
	Span    int    `json:"span"`
	Pattern string `json:"pattern" jsonschema:"an RE2 regular expression (at most 200 characters)"`
	Limit   int    `json:"limit,omitzero" jsonschema:"at most 50 (default 20)"`
}

// SpanMatch is one match: where, and the text around it.
type SpanMatch struct {
	TraceID NodeID `json:"traceId"`
	Span    int    `json:"span"`
	Offset  int    `json:"offset"`
	Excerpt string `json:"excerpt"`
}

// SearchResult is searchTrace's and searchSpan's reply.
type SearchResult struct {
	Matches   []SpanMatch `json:"matches"`
	Truncated bool        `json:"truncated,omitzero"`
}

func pageLimit(n int) int {
	if n <= 0 {
		return 20
	}
	return min(n, maxPage)
}

func compilePattern(p string) (*regexp.Regexp, error) {
	switch {
	case p == "":
		return nil, &VerbRefusal{Code: "invalid-pattern", Reason: "the pattern is empty"}
	case utf8.RuneCountInString(p) > maxPattern:
		return nil, &VerbRefusal{Code: "invalid-pattern", Reason: fmt.Sprintf("the pattern is over %d characters", maxPattern)}
	}
	re, err := regexp.Compile(p)
	if err != nil {
		return nil, &VerbRefusal{Code: "invalid-pattern", Reason: err.Error()}
	}
	return re, nil
}

// search appends the matches of re in span s of trace t to res, up to
// limit.
func search(res *SearchResult, re *regexp.Regexp, t *analystTrace, s TraceSpan, limit int) {
	for _, loc := range re.FindAllStringIndex(s.Text, limit+1) {
		if len(res.Matches) >= limit {
			res.Truncated = true
			return
		}
		from, to := max(loc[0]-80, 0), min(loc[1]+80, len(s.Text))
		for from > 0 && !utf8.RuneStart(s.Text[from]) {
			from--
		}
		for to < len(s.Text) && !utf8.RuneStart(s.Text[to]) {
			to++
		}
		res.Matches = append(res.Matches, SpanMatch{TraceID: t.id, Span: s.Index, Offset: loc[0], Excerpt: s.Text[from:to]})
	}
}

func spanView(s TraceSpan, n int) TraceSpan {
	if len(s.Text) > n {
		s.Text, s.Clipped = clip(s.Text, n), true
	}
	return s
}

func (t *analystTrace) summary() TraceSummary {
	chars := 0
	for _, s := range t.spans {
		chars += len(s.Text)
	}
	return TraceSummary{TraceID: t.id, Label: t.label, Profile: t.profile, State: t.state, HasErrors: t.hasError, Spans: len(t.spans), Chars: chars}
}

// analystBudget counts an analyst's model and tool calls against its
// lens's limits.
type analystBudget struct {
	modelCalls, toolCalls       atomic.Int64
	maxModelCalls, maxToolCalls int64

	mu      sync.Mutex
	stopped string // the first limit the analyst reached
}

func (b *analystBudget) reached(what string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.stopped == "" {
		b.stopped = what
	}
}

func (b *analystBudget) stop() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.stopped
}

// traceTools builds the tools of group g over ds, each call counted
// against b: past the tool-call limit a call is refused as a tool
// result (tool-call-limit), and the analyst answers with what it found.
func traceTools(g ToolGroup, ds *traceDataset, b *analystBudget) ([]contract.Tool, error) {
	var out []contract.Tool
	var errs []error
	add := func(t contract.Tool, err error) {
		if err != nil {
			errs = append(errs, err)
			return
		}
		out = append(out, t)
	}
	for _, name := range ToolGroupTools(g) {
		switch name {
		case ToolDatasetOverview:
			add(traceTool(b, name, "Overview of the dataset: how many traces (settled workers), their states, profiles, labels, which failed, sample trace ids, your tools and limits. Call it first.",
				func(_ context.Context, _ struct{}) (DatasetOverview, error) {
					o := DatasetOverview{AnalysedWorker: ds.analysed, Traces: len(ds.traces), States: map[State]int{}, Profiles: []string{}, Labels: []string{},
						SampleTraceIDs: []NodeID{}, Tools: ToolGroupTools(g),
						Limits: AnalystLimitsOf{ModelCalls: int(b.maxModelCalls - b.modelCalls.Load()), ToolCalls: int(b.maxToolCalls - b.toolCalls.Load())}}
					for _, t := range ds.traces {
						o.States[t.state]++
						if !slices.Contains(o.Profiles, t.profile) {
							o.Profiles = append(o.Profiles, t.profile)
						}
						if !slices.Contains(o.Labels, t.label) {
							o.Labels = append(o.Labels, t.label)
						}
						if t.hasError {
							o.WithErrors++
						}
						if len(o.SampleTraceIDs) < 5 {
							o.SampleTraceIDs = append(o.SampleTraceIDs, t.id)
						}
					}
					return o, nil
				}))
		case ToolQueryTraces:
			add(traceTool(b, name, "List traces matching filters (state, profile, label, hasErrors), a page at a time.",
				func(_ context.Context, q TraceQuery) (TracePage, error) {
					p := TracePage{Traces: []TraceSummary{}}
					limit := pageLimit(q.Limit)
					for i := range ds.traces {
						t := &ds.traces[i]
						if !q.Filters.match(*t) {
							continue
						}
						if p.Total >= q.Offset && len(p.Traces) < limit {
							p.Traces = append(p.Traces, t.summary())
						}
						p.Total++
					}
					if next := q.Offset + len(p.Traces); next < p.Total {
						p.NextOffset = &next
					}
					return p, nil
				}))
		case ToolCountTraces:
			add(traceTool(b, name, "Count the traces matching filters.",
				func(_ context.Context, q TraceQuery) (TraceCount, error) {
					n := 0
					for _, t := range ds.traces {
						if q.Filters.match(t) {
							n++
						}
					}
					return TraceCount{Count: n}, nil
				}))
		case ToolViewTrace:
			add(traceTool(b, name, "Read one trace: its task, each model turn's text, its output and how it settled, clipped to maxChars.",
				func(_ context.Context, a ViewTraceArgs) (TraceView, error) {
					t, err := ds.find(a.TraceID)
					if err != nil {
						return TraceView{}, err
					}
					budget := a.MaxChars
					if budget <= 0 {
						budget = maxViewChars / 2
					}
					budget = min(budget, maxViewChars)
					v := TraceView{TraceSummary: t.summary(), Reason: t.reason, Spans: []TraceSpan{}}
					for _, s := range t.spans {
						n := min(maxSpanText, budget)
						if n <= 0 {
							v.Clipped = true
							break
						}
						sv := spanView(s, n)
						v.Clipped = v.Clipped || sv.Clipped
						budget -= len(sv.Text)
						v.Spans = append(v.Spans, sv)
					}
					return v, nil
				}))
		case ToolViewSpans:
			add(traceTool(b, name, "Read spans from..to (inclusive, at most 20) of one trace.",
				func(_ context.Context, a ViewSpansArgs) (SpanPage, error) {
					t, err := ds.find(a.TraceID)
					if err != nil {
						return SpanPage{}, err
					}
					if a.From < 0 || a.To < a.From || a.From >= len(t.spans) {
						return SpanPage{}, &VerbRefusal{Code: "invalid-range", Reason: fmt.Sprintf("trace %s has spans 0..%d", t.id, len(t.spans)-1)}
					}
					to := min(a.To, len(t.spans)-1, a.From+maxViewSpans-1)
					p := SpanPage{Spans: []TraceSpan{}}
					for _, s := range t.spans[a.From : to+1] {
						p.Spans = append(p.Spans, spanView(s, maxSpanText))
					}
					return p, nil
				}))
		case ToolSearchTrace:
			add(traceTool(b, name, "Search the spans of one trace, or of every trace, for an RE2 regular expression; returns where it matched with the text around.",
				func(_ context.Context, a SearchTraceArgs) (SearchResult, error) {
					re, err := compilePattern(a.Pattern)
					if err != nil {
						return SearchResult{}, err
					}
					res := SearchResult{Matches: []SpanMatch{}}
					limit := pageLimit(a.Limit)
					for i := range ds.traces {
						t := &ds.traces[i]
						if a.TraceID != "" && t.id != a.TraceID {
							continue
						}
						for _, s := range t.spans {
							search(&res, re, t, s, limit)
						}
					}
					if a.TraceID != "" {
						if _, err := ds.find(a.TraceID); err != nil {
							return SearchResult{}, err
						}
					}
					return res, nil
				}))
		case ToolSearchSpan:
			add(traceTool(b, name, "Search one span of one trace for an RE2 regular expression.",
				func(_ context.Context, a SearchSpanArgs) (SearchResult, error) {
					t, err := ds.find(a.TraceID)
					if err != nil {
						return SearchResult{}, err
					}
					if a.Span < 0 || a.Span >= len(t.spans) {
						return SearchResult{}, &VerbRefusal{Code: "invalid-range", Reason: fmt.Sprintf("trace %s has spans 0..%d", t.id, len(t.spans)-1)}
					}
					re, err := compilePattern(a.Pattern)
					if err != nil {
						return SearchResult{}, err
					}
					res := SearchResult{Matches: []SpanMatch{}}
					search(&res, re, t, t.spans[a.Span], pageLimit(a.Limit))
					return res, nil
				}))
		}
	}
	return out, errors.Join(errs...)
}

// traceTool makes one trace tool: its refusals are tool results, and a
// call past the analyst's tool-call limit is refused without running.
func traceTool[In, Out any](b *analystBudget, name, desc string, fn func(context.Context, In) (Out, error)) (contract.Tool, error) {
	return tools.NewTool(name, desc, func(ctx context.Context, in In) (any, error) {
		if n := b.toolCalls.Add(1); n > b.maxToolCalls {
			b.reached("maxToolCalls")
			return RefusalResult{Error: "tool-call-limit", Reason: fmt.Sprintf("this analyst may make %d tool calls and made them; answer now with what you found", b.maxToolCalls)}, nil
		}
		out, err := fn(ctx, in)
		if err != nil {
			if r, ok := refusalOf(err); ok {
				return r, nil
			}
			return nil, err
		}
		return out, nil
	})
}

// LensLimitError ends an analyst's loop at a lens limit: Limit names it
// (maxLlmCalls, or maxIterations when that is the smaller) and Max its value.
type LensLimitError struct {
	Limit string
	Max   int64
}

func (e *LensLimitError) Error() string {
	return fmt.Sprintf("supervise: the analyst reached its lens's %s limit of %d", e.Limit, e.Max)
}

// limitedModel refuses the model calls past the analyst's limit: the
// call fails with a *LensLimitError before the model is asked.
type limitedModel struct {
	inner contract.ChatModel
	b     *analystBudget
	limit string
}

func (m limitedModel) Turn(ctx context.Context, messages []contract.ChatMessage, ts []contract.Tool) iter.Seq2[contract.ChatEvent, error] {
	if n := m.b.modelCalls.Add(1); n > m.b.maxModelCalls {
		m.b.modelCalls.Add(-1)
		m.b.reached(m.limit)
		return func(yield func(contract.ChatEvent, error) bool) {
			yield(contract.ChatEvent{}, &LensLimitError{Limit: m.limit, Max: m.b.maxModelCalls})
		}
	}
	return m.inner.Turn(ctx, messages, ts)
}

// lensLimits resolves l's limits, an absent one being its maximum.
func lensLimits(l Lens) (iterations, llmCalls, toolCalls, output int) {
	iterations, llmCalls, toolCalls, output = MaxLensIterations, MaxLensLLMCalls, MaxLensToolCalls, MaxLensOutput
	if m := l.Limits; m != nil {
		if m.Iterations != nil {
			iterations = *m.Iterations
		}
		if m.LLMCalls != nil {
			llmCalls = *m.LLMCalls
		}
		if m.ToolCalls != nil {
			toolCalls = *m.ToolCalls
		}
		if m.OutputChars != nil {
			output = *m.OutputChars
		}
	}
	return iterations, llmCalls, toolCalls, output
}

// toolAnalyst runs lens l's analyst over source in process, on model
// (Options.AnalystModel): a tool loop whose tools are l's tool group
// over the run's settled workers, whose model calls are at most the
// smaller of the lens's maxLlmCalls and maxIterations, whose tool calls past
// maxToolCalls are refused, and whose output is clipped to maxOutputChars at
// settlement. A loop stopped by a limit settles done with what it
// produced and the limit named (truncation, not failure); each model
// call is one iteration of the analyst.
type toolAnalyst struct {
	c      *Coordinator
	model  contract.ChatModel
	lens   Lens
	source NodeID
}

// Runtime reports RuntimeAnalyst.
func (a toolAnalyst) Runtime() string { return RuntimeAnalyst }

// PropagatesTrace reports true: the loop runs in this process under its
// node's span.
func (a toolAnalyst) PropagatesTrace() bool { return true }

// Execute runs the analyst's loop.
func (a toolAnalyst) Execute(ctx context.Context, w Work) (WorkResult, error) {
	iterations, llmCalls, toolCalls, _ := lensLimits(a.lens)
	b := &analystBudget{maxModelCalls: int64(min(iterations, llmCalls)), maxToolCalls: int64(toolCalls)}
	limit := "maxLlmCalls"
	if iterations < llmCalls {
		limit = "maxIterations"
	}
	ds := a.c.datasetFor(ctx, a.lens, a.source)
	ts, err := traceTools(a.lens.ToolGroup, ds, b)
	if err != nil {
		return WorkResult{}, fmt.Errorf("supervise: the analyst's tools: %w", err)
	}
	system := a.lens.Instructions + "\n\nYou have these tools over the run's settled workers (each worker is a trace): " +
		strings.Join(ToolGroupTools(a.lens.ToolGroup), ", ") + fmt.Sprintf(". You may make at most %d model calls and %d tool calls; then answer.", b.maxModelCalls, b.maxToolCalls)
	res, err := kernel.RunToolLoop(ctx, kernel.ToolLoopOptions{Model: limitedModel{inner: a.model, b: b, limit: limit}, System: system,
		User: w.Task, Tools: ts, MaxToolTurns: int(b.maxModelCalls), RequestedModel: a.lens.Model, Observer: w.Observer,
		Logger: a.c.logger, Now: a.c.now})
	out := WorkResult{}
	if res != nil {
		out.Text, out.Usage = res.FinalText, &res.Usage
		out.Spent = SpendOf(res.Usage)
		turns := int64(max(b.modelCalls.Load(), 1))
		out.Spent.Iterations = &turns
		if len(res.ServedModels) > 0 {
			out.ServedModel = res.ServedModels[len(res.ServedModels)-1]
		}
		if res.StopReason == kernel.StopBackstop {
			b.reached(limit)
		}
	}
	var le *LensLimitError
	if errors.As(err, &le) {
		err = nil
	}
	stop := ""
	switch {
	case b.stop() != "":
		stop = "stopped at the lens's " + b.stop() + " limit"
	case res != nil && res.StopReason != kernel.StopCompleted && err == nil:
		stop = "the analyst's loop stopped: " + string(res.StopReason)
	}
	if stop != "" {
		a.c.mu.Lock()
		a.c.analystStops[w.Node] = stop
		a.c.mu.Unlock()
	}
	if res == nil && err == nil {
		err = errors.New("supervise: the analyst's loop returned nothing")
	}
	if err != nil && res == nil {
		one := int64(1)
		out.Spent = ledger.Spend{Iterations: &one}
	}
	return out, err
}
