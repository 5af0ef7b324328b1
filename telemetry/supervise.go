package telemetry

import (
	"context"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/supervise"
)

// Supervisor span names and attribute keys (spec runtime §10's supervisor
// spans). Numbers a channel does not know are omitted and the channel is
// marked unknown; the deprecated llm.token_count.* and llm.cost_usd keys
// are never emitted.
const (
	// SpanSupervisorRun is the root span of a supervised run.
	SpanSupervisorRun = "supervisor.run"
	// SpanSupervisorNode is the span of one worker node.
	SpanSupervisorNode = "supervisor.node"

	KeySuperviseNodeID       = "tangle.supervise.node.id"
	KeySuperviseNodeLabel    = "tangle.supervise.node.label"
	KeySuperviseNodeKind     = "tangle.supervise.node.kind"
	KeySuperviseNodeParentID = "tangle.supervise.node.parent_id"
	KeySuperviseNodeDepth    = "tangle.supervise.node.depth"
	KeySuperviseNodeOrdinal  = "tangle.supervise.node.ordinal"
	KeySuperviseNodeResumed  = "tangle.supervise.node.resumed"
	KeySuperviseNodeStatus   = "tangle.supervise.node.status"
	KeySuperviseNodeOutRef   = "tangle.supervise.node.out_ref"
	KeySuperviseNodeSettled  = "tangle.supervise.node.settled"
	// KeySuperviseNodeRuntime names where the worker ran (its
	// executor's supervise.RuntimeOf); omitted when unknown.
	KeySuperviseNodeRuntime = "tangle.supervise.node.runtime"
	// KeySuperviseNodeSeq is the node's spawn sequence number in its
	// run's journal (supervise.NodeInfo.Seq, the last part of its id).
	KeySuperviseNodeSeq = "tangle.supervise.node.seq"
	// KeySuperviseNodeInfra, on a node that did not settle done, says
	// whether it went down for an infrastructure reason
	// (supervise.NodeSettled.Infra) rather than its own outcome.
	KeySuperviseNodeInfra    = "tangle.supervise.node.infra"
	KeySuperviseProfile      = "tangle.supervise.node.profile"
	KeySuperviseDelivered    = "tangle.supervise.delivered"
	KeySuperviseVerdictValid = "tangle.supervise.verdict.valid"
	KeySuperviseVerdictScore = "tangle.supervise.verdict.score"
	KeySuperviseMaxTokens    = "tangle.supervise.budget.max_tokens"
	KeySuperviseMaxIter      = "tangle.supervise.budget.max_iterations"
	KeySuperviseMaxUSD       = "tangle.supervise.budget.max_usd"
	KeySuperviseIterations   = "tangle.supervise.iterations"
	KeySuperviseDurationMS   = "tangle.supervise.duration_ms"
	KeySuperviseResult       = "tangle.supervise.result"
	KeySuperviseReason       = "tangle.supervise.reason"
	KeySuperviseDownCount    = "tangle.supervise.down_count"
	KeySuperviseTokensKnown  = "tangle.supervise.tokens_known"
	KeySuperviseCostKnown    = "tangle.supervise.cost_known"
)

// NodeStatusUnsettled is the node status of a worker the run ended
// without settling; its span ends with status unset.
const NodeStatusUnsettled = "unsettled"

// SuperviseObserver returns a supervise.Observer that traces one
// supervised run (supervise.Options.Observer); give each run its own. The
// run is one trace whose id is TraceID of the supervise run id, so a
// resumed run rejoins it: a supervisor.run root span (invoke_workflow),
// a supervisor.node span per worker under its parent node, and each
// worker's kernel run (invoke_agent and its turns and tool calls) under
// its node. A nil Tracing returns nil: tracing off.
func (t *Tracing) SuperviseObserver() supervise.Observer {
	if t == nil {
		return nil
	}
	return &superviseObserver{t: t, nodes: map[supervise.NodeID]trace.Span{}, started: map[supervise.NodeID]trace.SpanContext{}}
}

// superviseObserver traces one supervised run; workers call it
// concurrently.
type superviseObserver struct {
	t     *Tracing
	mu    sync.Mutex
	runID string
	root  trace.Span
	nodes map[supervise.NodeID]trace.Span
	order []supervise.NodeID
	// started holds the span context of every node started, kept past
	// its settlement, so that a child always finds its parent's span.
	started map[supervise.NodeID]trace.SpanContext
}

var (
	_ supervise.Observer      = (*superviseObserver)(nil)
	_ supervise.BrainObserver = (*superviseObserver)(nil)
)

// BrainObserver traces the manager's own tool loop (spec §10: driver
// turns as inference spans): its invoke_agent span, with a
// gen_ai.client.inference span per model turn and a span per coordination
// verb it calls, under the supervisor.run root.
func (o *superviseObserver) BrainObserver() kernel.Observer {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.root == nil {
		return nil
	}
	return &runObserver{t: o.t, parent: o.root, tools: map[string]trace.Span{}}
}

func (o *superviseObserver) RunStarted(ctx context.Context, s supervise.RunStart) context.Context {
	attrs := []attribute.KeyValue{attribute.String(KeyOperation, OpInvokeWorkflow), attribute.String(KeyConversation, s.RunID),
		attribute.String(KeyRunID, s.RunID), attribute.String(KeyRunKind, "supervise"),
		attribute.String(KeySuperviseNodeID, s.RunID), attribute.String(KeySuperviseNodeKind, "root"),
		attribute.Int(KeySuperviseNodeDepth, 0), attribute.Bool(KeySuperviseNodeResumed, s.Resumed)}
	if s.Manager != "" {
		attrs = append(attrs, attribute.String(KeyAgentName, s.Manager))
	}
	attrs = append(attrs, budgetAttrs(s.Budget.Tokens, s.Budget.Iterations, s.Budget.MicroUSD)...)
	ctx, root := o.t.startRoot(ctx, s.RunID, SpanSupervisorRun, attrs...)
	o.mu.Lock()
	o.runID, o.root = s.RunID, root
	o.mu.Unlock()
	return ctx
}

func budgetAttrs(tokens, iterations, microUSD *int64) []attribute.KeyValue {
	var attrs []attribute.KeyValue
	if tokens != nil {
		attrs = append(attrs, attribute.Int64(KeySuperviseMaxTokens, *tokens))
	}
	if iterations != nil {
		attrs = append(attrs, attribute.Int64(KeySuperviseMaxIter, *iterations))
	}
	if microUSD != nil {
		attrs = append(attrs, attribute.Float64(KeySuperviseMaxUSD, float64(*microUSD)/1e6))
	}
	return attrs
}

// NodeStarted starts the node's span under its parent node's (the root
// for a top-level worker) and returns the worker run's observer, whose
// invoke_agent span is the node's child.
func (o *superviseObserver) NodeStarted(ctx context.Context, n supervise.NodeInfo) (context.Context, kernel.Observer) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.root == nil {
		return ctx, nil
	}
	parent := trace.ContextWithSpan(ctx, o.root)
	if sc, ok := o.started[n.Parent]; ok {
		parent = trace.ContextWithSpanContext(ctx, sc)
	}
	attrs := []attribute.KeyValue{attribute.String(KeyConversation, o.runID), attribute.String(KeyRunID, o.runID),
		attribute.String(KeySuperviseNodeID, string(n.ID)), attribute.String(KeySuperviseNodeKind, "worker"),
		attribute.String(KeySuperviseNodeParentID, string(n.Parent)), attribute.Int(KeySuperviseNodeDepth, n.Depth),
		attribute.Int(KeySuperviseNodeOrdinal, n.Seq), attribute.Int(KeySuperviseNodeSeq, n.Seq),
		attribute.Bool(KeySuperviseNodeResumed, n.ResumeOf != "")}
	if n.Runtime != "" {
		attrs = append(attrs, attribute.String(KeySuperviseNodeRuntime, n.Runtime))
	}
	if n.Label != "" {
		attrs = append(attrs, attribute.String(KeySuperviseNodeLabel, n.Label))
	}
	if n.Profile != "" {
		attrs = append(attrs, attribute.String(KeySuperviseProfile, n.Profile), attribute.String(KeyAgentName, n.Profile))
	}
	if n.Model != "" {
		attrs = append(attrs, attribute.String(KeyRequestModel, n.Model))
	}
	attrs = append(attrs, budgetAttrs(n.Reserved.Tokens, n.Reserved.Iterations, n.Reserved.MicroUSD)...)
	ctx, span := o.t.tracer.Start(parent, SpanSupervisorNode,
		trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
	o.nodes[n.ID] = span
	o.started[n.ID] = span.SpanContext()
	o.order = append(o.order, n.ID)
	return ctx, &runObserver{t: o.t, parent: span, tools: map[string]trace.Span{}}
}

// NodeSettled ends the node's span with its outcome, verdict, delivery
// and spend as far as it is known.
func (o *superviseObserver) NodeSettled(ctx context.Context, s supervise.NodeSettled) {
	o.mu.Lock()
	span, ok := o.nodes[s.Node.ID]
	o.mu.Unlock()
	if !ok {
		return
	}
	attrs := []attribute.KeyValue{attribute.String(KeySuperviseNodeStatus, string(s.State)), attribute.Bool(KeySuperviseNodeSettled, true),
		attribute.Bool(KeySuperviseDelivered, s.Delivered), attribute.Int64(KeySuperviseDurationMS, s.Duration.Milliseconds())}
	if s.OutRef != "" {
		attrs = append(attrs, attribute.String(KeySuperviseNodeOutRef, s.OutRef))
	}
	if v := s.Verdict; v != nil {
		attrs = append(attrs, attribute.Bool(KeySuperviseVerdictValid, v.Passed))
		if v.Score != nil {
			attrs = append(attrs, attribute.Float64(KeySuperviseVerdictScore, *v.Score))
		}
	}
	if s.ServedModel != "" {
		attrs = append(attrs, attribute.String(KeyResponseModel, s.ServedModel))
	}
	if s.Spent.Iterations != nil {
		attrs = append(attrs, attribute.Int64(KeySuperviseIterations, *s.Spent.Iterations))
	}
	attrs = append(attrs, nodeSpendAttrs(s)...)
	span.SetAttributes(attrs...)
	if s.State == supervise.StateDone {
		span.SetStatus(codes.Ok, "")
	} else {
		// The reason may quote the worker; only the state is exported.
		span.SetAttributes(attribute.String(KeyErrorType, "worker_"+string(s.State)), attribute.Bool(KeySuperviseNodeInfra, s.Infra))
		span.SetStatus(codes.Error, "the worker "+string(s.State))
	}
	span.End()
	o.mu.Lock()
	delete(o.nodes, s.Node.ID)
	o.mu.Unlock()
}

// nodeSpendAttrs are a worker's spend attributes: input and output
// tokens each when known exactly, dollars when known; an unknown channel
// is omitted and marked, never exported as a number.
func nodeSpendAttrs(s supervise.NodeSettled) []attribute.KeyValue {
	var attrs []attribute.KeyValue
	tokens := s.Usage != nil && s.Usage.InputTokens.Known() && s.Usage.OutputTokens.Known() && s.Spent.Tokens != nil
	if s.Usage != nil && s.Spent.Tokens != nil {
		if s.Usage.InputTokens.Known() {
			attrs = append(attrs, attribute.Int64(KeyInputTokens, s.Usage.InputTokens.Value))
		}
		if s.Usage.OutputTokens.Known() {
			attrs = append(attrs, attribute.Int64(KeyOutputTokens, s.Usage.OutputTokens.Value))
		}
	}
	if !tokens {
		attrs = append(attrs, attribute.Bool(KeySuperviseTokensKnown, false))
	}
	if s.Spent.MicroUSD != nil {
		attrs = append(attrs, attribute.Float64(KeyCostUSD, float64(*s.Spent.MicroUSD)/1e6))
	} else {
		attrs = append(attrs, attribute.Bool(KeySuperviseCostKnown, false))
	}
	return attrs
}

// RunEnded ends every node span the run left open (status unset,
// node.status unsettled) and the root span with the run's result and its
// spend as far as it is known.
func (o *superviseObserver) RunEnded(ctx context.Context, res supervise.SupervisedResult) {
	o.mu.Lock()
	root := o.root
	open := make([]trace.Span, 0, len(o.nodes))
	for _, id := range o.order {
		if s, ok := o.nodes[id]; ok {
			open = append(open, s)
		}
	}
	clear(o.nodes)
	o.order, o.root = nil, nil
	o.mu.Unlock()
	for i := len(open) - 1; i >= 0; i-- {
		open[i].SetAttributes(attribute.String(KeySuperviseNodeStatus, NodeStatusUnsettled), attribute.Bool(KeySuperviseNodeSettled, false))
		open[i].End()
	}
	if root == nil {
		return
	}
	attrs := []attribute.KeyValue{attribute.String(KeySuperviseResult, string(res.Status)),
		attribute.Int(KeySuperviseDownCount, res.DownCount), attribute.Int64(KeySuperviseDurationMS, res.MS),
		attribute.Bool(KeyDelivered, res.Winner != nil)}
	if res.Reason != "" {
		attrs = append(attrs, attribute.String(KeySuperviseReason, string(res.Reason)))
	}
	if res.Spent.IterationsKnown {
		attrs = append(attrs, attribute.Int64(KeySuperviseIterations, res.Spent.Iterations))
	}
	if !res.Spent.TokensKnown {
		attrs = append(attrs, attribute.Bool(KeySuperviseTokensKnown, false))
	}
	if res.Spent.USDKnown {
		attrs = append(attrs, attribute.Float64(KeyCostUSD, float64(res.Spent.MicroUSD)/1e6))
	} else {
		attrs = append(attrs, attribute.Bool(KeySuperviseCostKnown, false))
	}
	root.SetAttributes(attrs...)
	if res.Status == supervise.StatusWinner {
		root.SetStatus(codes.Ok, "")
	} else {
		root.SetAttributes(attribute.String(KeyErrorType, string(res.Reason)))
		root.SetStatus(codes.Error, "the supervised run has no winner")
	}
	root.End()
}
