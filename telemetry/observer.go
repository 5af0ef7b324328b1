package telemetry

import (
	"cmp"
	"context"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/store"
)

// Span names and attribute keys. The gen_ai.* keys are the current
// OpenTelemetry GenAI semantic conventions; tangle.* are the reference's
// own (spec runtime §10).
const (
	// SpanInference is the span name of a turn: one model call as the
	// kernel sees it.
	SpanInference = "gen_ai.client.inference"
	// SpanToolCall is the span name of a tool call a turn reported.
	SpanToolCall = "agent.tool_call"
	// SpanRunPrefix starts the span name of a run: "invoke_agent" and,
	// when the profile has one, a space and the agent's name.
	SpanRunPrefix = "invoke_agent"

	KeyOperation     = "gen_ai.operation.name"
	KeyAgentName     = "gen_ai.agent.name"
	KeyConversation  = "gen_ai.conversation.id"
	KeyRequestModel  = "gen_ai.request.model"
	KeyResponseModel = "gen_ai.response.model"
	KeyProviderName  = "gen_ai.provider.name"
	KeyInputTokens   = "gen_ai.usage.input_tokens"
	KeyOutputTokens  = "gen_ai.usage.output_tokens"
	KeyFinishReasons = "gen_ai.response.finish_reasons"
	KeyToolName      = "gen_ai.tool.name"
	KeyToolCallID    = "gen_ai.tool.call.id"
	KeyErrorType     = "error.type"

	KeyRunID         = "tangle.run.id"
	KeyRunKind       = "tangle.run.kind"
	KeyRunStatus     = "tangle.run.status"
	KeyRunReason     = "tangle.run.reason"
	KeyDelivered     = "tangle.run.delivered"
	KeyEnvironmentID = "tangle.environment.id"
	KeyCostUSD       = "tangle.cost.usd"
	KeyTokensKnown   = "tangle.tokens_known"
	KeyCostKnown     = "tangle.cost_known"
	KeyMCPServer     = "mcp.server"
	KeyMCPToolName   = "mcp.tool.name"
)

// Operation names (gen_ai.operation.name).
const (
	OpInvokeAgent = "invoke_agent"
	OpChat        = "chat"
	OpExecuteTool = "execute_tool"
)

// Observer returns a kernel.Observer that traces one run — an exact run
// (kernel.Request.Observer) or a tool loop (kernel.ToolLoopOptions.
// Observer, whose calls it traces as a kernel.ToolObserver); give each
// run its own. A nil Tracing returns nil: tracing off.
func (t *Tracing) Observer() kernel.Observer {
	if t == nil {
		return nil
	}
	return &runObserver{t: t, tools: map[string]trace.Span{}}
}

// AttemptObserver returns a kernel.Observer that traces one attempt of
// run runID, an attempt being a kernel run of its own id executing
// runID's work (a fleet run's attempt): the attempt's invoke_agent span
// roots in run runID's trace (TraceID(runID)) with runID as its
// gen_ai.conversation.id, so every attempt of the run, whichever process
// executes it, lands in one trace; tangle.run.id is the attempt's. When
// the context the attempt runs under carries a remote span context (the
// span that submitted the run in another process, as a fleet worker
// restores it from the run's record: a supervise node's), the attempt's
// span is that span's child in its trace instead. Give each attempt its
// own. A nil Tracing returns nil: tracing off.
func (t *Tracing) AttemptObserver(runID string) kernel.Observer {
	if t == nil {
		return nil
	}
	return &runObserver{t: t, traceRun: runID, tools: map[string]trace.Span{}}
}

// runObserver traces one run. The kernel calls it on the run's
// goroutine, one hook at a time.
type runObserver struct {
	t *Tracing
	// parent, when set, is the workflow span the run belongs to: the
	// run's span is its child, in its trace.
	parent trace.Span
	// traceRun, when set, is the run this run is an attempt of: the
	// run's span roots in its trace (AttemptObserver).
	traceRun  string
	runID     string
	run, turn trace.Span
	tools     map[string]trace.Span
	toolOrder []string
	// loopTool is the span of the tool loop call running (ToolStarted).
	loopTool     trace.Span
	conversation attribute.KeyValue
	// kind is the run's kind; turnStart and requested are when the turn
	// started and the model it requested (for the metrics).
	kind      string
	turnStart time.Time
	requested string
}

var (
	_ kernel.Observer     = (*runObserver)(nil)
	_ kernel.ToolObserver = (*runObserver)(nil)
)

// RunStarted starts the run's span as the root of the run's own trace
// (TraceID) — a span the caller's context carries is linked, not parent —
// or, for a workflow's run, as the workflow span's child.
func (o *runObserver) RunStarted(ctx context.Context, s kernel.RunStart) (context.Context, error) {
	o.runID, o.kind = s.RunID, s.Kind
	traceRun := s.RunID
	if o.traceRun != "" {
		traceRun = o.traceRun
	}
	o.conversation = attribute.String(KeyConversation, traceRun)
	name, attrs := SpanRunPrefix, []attribute.KeyValue{
		attribute.String(KeyOperation, OpInvokeAgent), o.conversation,
		attribute.String(KeyRunID, s.RunID), attribute.String(KeyRunKind, s.Kind),
	}
	if s.Profile != nil && s.Profile.Name != nil && *s.Profile.Name != "" {
		name += " " + *s.Profile.Name
		attrs = append(attrs, attribute.String(KeyAgentName, *s.Profile.Name))
	}
	if o.parent != nil {
		ctx, o.run = o.t.tracer.Start(trace.ContextWithSpan(ctx, o.parent), name, trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
		return ctx, nil
	}
	if sc := trace.SpanContextFromContext(ctx); o.traceRun != "" && sc.IsValid() && sc.IsRemote() {
		// An attempt of a run submitted under a span in another process
		// (a supervise node's): the attempt continues that span's trace.
		ctx, o.run = o.t.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
		return ctx, nil
	}
	ctx, o.run = o.t.startRoot(ctx, traceRun, name, attrs...)
	return ctx, nil
}

// TurnStarted starts the turn's gen_ai.client.inference span under the
// run's; the context it returns carries it to the provider.
func (o *runObserver) TurnStarted(ctx context.Context, s kernel.TurnStart) (context.Context, error) {
	o.turnStart, o.requested = time.Now(), s.RequestedModel
	attrs := []attribute.KeyValue{attribute.String(KeyOperation, OpChat), o.conversation, attribute.String(KeyRunID, s.RunID)}
	if s.RequestedModel != "" {
		attrs = append(attrs, attribute.String(KeyRequestModel, s.RequestedModel))
	}
	if s.EnvironmentID != "" {
		attrs = append(attrs, attribute.String(KeyEnvironmentID, s.EnvironmentID))
	}
	ctx, o.turn = o.t.tracer.Start(ctx, SpanInference, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	return ctx, nil
}

// Event opens a tool call's span the first time the turn reports it and
// ends it when the call completes or fails. Its arguments and output are
// never recorded.
func (o *runObserver) Event(ctx context.Context, e contract.EnvironmentEvent) error {
	n := e.Normalized
	if n == nil || n.MessagePartUpdated == nil || !n.MessagePartUpdated.Part.IsTool() {
		return nil
	}
	p := n.MessagePartUpdated.Part
	id := p.ID
	if p.CallID != nil && *p.CallID != "" {
		id = *p.CallID
	}
	span, open := o.tools[id]
	if !open {
		attrs := []attribute.KeyValue{attribute.String(KeyOperation, OpExecuteTool), o.conversation, attribute.String(KeyToolCallID, id)}
		if p.Tool != nil && *p.Tool != "" {
			attrs = append(attrs, attribute.String(KeyToolName, *p.Tool))
			if server, tool, ok := mcpTool(*p.Tool); ok {
				attrs = append(attrs, attribute.String(KeyMCPServer, server), attribute.String(KeyMCPToolName, tool))
			}
		}
		_, span = o.t.tracer.Start(ctx, SpanToolCall, trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
		o.tools[id] = span
		o.toolOrder = append(o.toolOrder, id)
	}
	if p.State == nil {
		return nil
	}
	switch p.State.Status {
	case contract.ToolStatusCompleted:
		span.SetStatus(codes.Ok, "")
	case contract.ToolStatusError, contract.ToolStatusFailed:
		span.SetAttributes(attribute.String(KeyErrorType, "tool_error"))
		span.SetStatus(codes.Error, "the tool call failed")
	default:
		return nil
	}
	span.End()
	delete(o.tools, id)
	return nil
}

// ToolStarted starts the span of a call a tool loop runs (see
// kernel.ToolObserver), under the run's span; the context it returns
// carries it to the tool. Its arguments are never recorded.
func (o *runObserver) ToolStarted(ctx context.Context, c kernel.ToolCallStart) (context.Context, error) {
	attrs := []attribute.KeyValue{attribute.String(KeyOperation, OpExecuteTool), o.conversation, attribute.String(KeyToolName, c.Call.Name)}
	if c.Call.ID != "" {
		attrs = append(attrs, attribute.String(KeyToolCallID, c.Call.ID))
	}
	if server, tool, ok := mcpTool(c.Call.Name); ok {
		attrs = append(attrs, attribute.String(KeyMCPServer, server), attribute.String(KeyMCPToolName, tool))
	}
	ctx, span := o.t.tracer.Start(ctx, SpanToolCall, trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
	o.loopTool = span
	return ctx, nil
}

// ToolEnded ends a tool loop call's span with its outcome: a failed call
// is an error whose type is the outcome's code (its message is never
// exported).
func (o *runObserver) ToolEnded(ctx context.Context, c kernel.ToolCallEnd) error {
	span := o.loopTool
	if span == nil {
		return nil
	}
	o.loopTool = nil
	if c.Outcome.OK {
		span.SetStatus(codes.Ok, "")
	} else {
		span.SetAttributes(attribute.String(KeyErrorType, cmp.Or(c.Outcome.Code, "tool_error")))
		span.SetStatus(codes.Error, "the tool call failed")
	}
	span.End()
	return nil
}

// mcpTool splits an MCP tool name of the form mcp__server__tool.
func mcpTool(name string) (server, tool string, ok bool) {
	rest, ok := strings.CutPrefix(name, "mcp__")
	if !ok {
		return "", "", false
	}
	server, tool, ok = strings.Cut(rest, "__")
	return server, tool, ok && server != "" && tool != ""
}

// TurnEnded ends the turn's span with the served model, its usage as far
// as it is known, and why it finished.
func (o *runObserver) TurnEnded(ctx context.Context, t kernel.TurnEnd) error {
	if o.turn == nil {
		return nil
	}
	o.endTools()
	failure := turnFailure(t)
	o.t.metrics.turn(ctx, time.Since(o.turnStart), o.requested, t.Served.Model, failure, t.Usage)
	attrs := usageAttrs(t.Usage)
	if t.Served.Model != "" {
		attrs = append(attrs, attribute.String(KeyResponseModel, t.Served.Model))
	}
	if t.Served.Provider != "" {
		attrs = append(attrs, attribute.String(KeyProviderName, t.Served.Provider))
	}
	switch {
	case t.StopReason != "":
		attrs = append(attrs, attribute.StringSlice(KeyFinishReasons, []string{t.StopReason}))
	case t.Terminal != "":
		attrs = append(attrs, attribute.StringSlice(KeyFinishReasons, []string{string(t.Terminal)}))
	}
	o.turn.SetAttributes(attrs...)
	if failure != "" {
		o.turn.SetAttributes(attribute.String(KeyErrorType, failure))
		o.turn.SetStatus(codes.Error, "the turn did not complete")
	}
	o.turn.End()
	o.turn = nil
	return nil
}

// RunEnded ends the run's span (and any span the run left open) with the
// recorded outcome: status, requested and served model, usage as far as
// it is known, and delivery.
func (o *runObserver) RunEnded(ctx context.Context, r kernel.Result) error {
	if o.run == nil {
		return nil
	}
	o.t.metrics.run(ctx, o.kind, r)
	o.endTools()
	if o.loopTool != nil {
		o.loopTool.End()
		o.loopTool = nil
	}
	if o.turn != nil {
		o.turn.SetStatus(codes.Error, "the run ended during the turn")
		o.turn.End()
		o.turn = nil
	}
	attrs := append(usageAttrs(r.Usage),
		attribute.String(KeyRunStatus, string(r.Status)),
		attribute.Bool(KeyDelivered, r.Delivered))
	if r.RequestedModel != "" {
		attrs = append(attrs, attribute.String(KeyRequestModel, r.RequestedModel))
	}
	if r.Served.Model != "" {
		attrs = append(attrs, attribute.String(KeyResponseModel, r.Served.Model))
	}
	if r.EnvironmentID != "" {
		attrs = append(attrs, attribute.String(KeyEnvironmentID, r.EnvironmentID))
	}
	if r.Reason != "" {
		attrs = append(attrs, attribute.String(KeyRunReason, r.Reason))
	}
	o.run.SetAttributes(attrs...)
	if r.Status == store.StatusCompleted {
		o.run.SetStatus(codes.Ok, "")
	} else {
		// The reason is a kernel constant; the detail may quote the
		// provider and is never exported.
		o.run.SetAttributes(attribute.String(KeyErrorType, cmp.Or(r.Reason, string(r.Status))))
		o.run.SetStatus(codes.Error, "the run "+string(r.Status))
	}
	o.run.End()
	o.run = nil
	return nil
}

// turnFailure is the error.type of a turn that did not complete ("" for
// one that did).
func turnFailure(t kernel.TurnEnd) string {
	if t.Terminal == contract.TerminalCompleted {
		return ""
	}
	if t.Terminal != "" {
		return "turn_" + string(t.Terminal)
	}
	return "no_terminal_event"
}

// endTools ends the spans of tool calls the turn never reported ending.
func (o *runObserver) endTools() {
	for _, id := range o.toolOrder {
		if s, ok := o.tools[id]; ok {
			s.End()
		}
	}
	clear(o.tools)
	o.toolOrder = o.toolOrder[:0]
}

// usageAttrs are the usage attributes of u: a channel known exactly is
// exported, an unknown or partial (floor) one is omitted and marked, never
// exported as 0.
func usageAttrs(u ledger.Usage) []attribute.KeyValue {
	var attrs []attribute.KeyValue
	tokens := u.InputTokens.Known() && u.OutputTokens.Known()
	if u.InputTokens.Known() {
		attrs = append(attrs, attribute.Int64(KeyInputTokens, u.InputTokens.Value))
	}
	if u.OutputTokens.Known() {
		attrs = append(attrs, attribute.Int64(KeyOutputTokens, u.OutputTokens.Value))
	}
	if !tokens {
		attrs = append(attrs, attribute.Bool(KeyTokensKnown, false))
	}
	if u.CostUSD.Known() {
		attrs = append(attrs, attribute.Float64(KeyCostUSD, u.CostUSD.Value))
	} else {
		attrs = append(attrs, attribute.Bool(KeyCostKnown, false))
	}
	return attrs
}
