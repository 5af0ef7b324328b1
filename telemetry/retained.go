package telemetry

import (
	"cmp"
	"context"
	"crypto/sha256"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentrt/agentrt/contract"
)

// Retained-run steps (KeyRetainedStep): what one process does with a
// retained run, which the provider owns and any process may follow.
const (
	// RetainedStepStart admits and dispatches the run (agentrt run
	// --retain).
	RetainedStepStart = "start"
	// RetainedStepFollow follows the run's turn to its result: the starter
	// after dispatch, or agentrt runs attach in any process.
	RetainedStepFollow = "follow"
	// RetainedStepRecover recovers the run from its admission records
	// (agentrt runs recover).
	RetainedStepRecover = "recover"
)

// Retained-run span names and attribute keys.
const (
	// SpanRetainedRecover is the span name of a recovery.
	SpanRetainedRecover = "tangle.retained.recover"

	KeyRetainedStep     = "tangle.retained.step"
	KeyRetainedOutcome  = "tangle.retained.outcome"
	KeyRetainedReplayed = "tangle.retained.replayed"
	// RunKindRetained is tangle.run.kind of a retained run.
	RunKindRetained = "retained"
)

// RetainedSpan is one process's span of a retained run (Tracing.
// StartRetained, FollowRetained, RecoverRetained). Its methods are safe
// on nil (tracing off) and end it once.
type RetainedSpan struct {
	span trace.Span
	// tools traces the tool calls a followed turn reports (Event), as a
	// run's observer does.
	tools *runObserver
}

// RetainedSpanID is the span id of retained run runID's root span: like
// its trace id (TraceID), derived from the run id, so a process that
// never saw the start — agentrt runs attach or recover after the starter
// died — parents its spans under the run's root.
func RetainedSpanID(runID string) trace.SpanID {
	sum := sha256.Sum256([]byte("agentrt/run/" + runID))
	var id trace.SpanID
	copy(id[:], sum[16:24])
	if !id.IsValid() {
		id[7] = 1
	}
	return id
}

// retainedRoot is the span context of retained run runID's root span, as
// a process other than its starter refers to it.
func retainedRoot(runID string) trace.SpanContext {
	return trace.NewSpanContext(trace.SpanContextConfig{TraceID: TraceID(runID), SpanID: RetainedSpanID(runID),
		TraceFlags: trace.FlagsSampled, Remote: true})
}

// RetainedStart is the retained run a process starts.
type RetainedStart struct {
	// RunID is the run's record id.
	RunID string
	// Agent names its profile ("" when it has no name).
	Agent string
	// Replayed reports that the run's record already existed: this start
	// replays an earlier one (the same idempotency key and turn), whose
	// process exported the root span.
	Replayed bool
}

// StartRetained starts the root span of retained run s.RunID: an
// invoke_agent span in the run's trace (TraceID) with the span id
// RetainedSpanID, covering the run's admission — the environment's
// creation and the turn's dispatch, which the returned context carries to
// the provider (TRACEPARENT to a harness process, traceparent to a
// sidecar). End it once the run is dispatched (Dispatched): the root is
// then exported while the provider runs the turn, so the spans of
// whichever process follows or recovers the run, even after this one
// died, have their parent. A replayed start is not
// the root again (the span id is the first start's): it is a span of its
// own under the root, marked tangle.retained.replayed. A nil Tracing
// returns ctx and nil.
func (t *Tracing) StartRetained(ctx context.Context, s RetainedStart) (context.Context, *RetainedSpan) {
	if t == nil {
		return ctx, nil
	}
	name, attrs := SpanRunPrefix, []attribute.KeyValue{attribute.String(KeyOperation, OpInvokeAgent),
		attribute.String(KeyRetainedStep, RetainedStepStart)}
	if s.Agent != "" {
		name += " " + s.Agent
		attrs = append(attrs, attribute.String(KeyAgentName, s.Agent))
	}
	if s.Replayed {
		return t.underRetained(ctx, s.RunID, name, trace.SpanKindInternal, append(attrs, attribute.Bool(KeyRetainedReplayed, true))...)
	}
	attrs = append(attrs, attribute.String(KeyConversation, s.RunID), attribute.String(KeyRunID, s.RunID), attribute.String(KeyRunKind, RunKindRetained))
	ctx, span := t.startRoot(context.WithValue(ctx, rootSpanKey{}, RetainedSpanID(s.RunID)), s.RunID, name, attrs...)
	// Only this span has the derived id: a root started under the
	// returned context is given a random one.
	return context.WithValue(ctx, rootSpanKey{}, trace.SpanID{}), &RetainedSpan{span: span}
}

// FollowRetained starts the span of following retained run runID's turn
// to its result, in this process: a gen_ai.client.inference span under
// the run's root (StartRetained's, wherever it ran). The returned context
// carries it to the provider. A nil Tracing returns ctx and nil.
func (t *Tracing) FollowRetained(ctx context.Context, runID string) (context.Context, *RetainedSpan) {
	ctx, s := t.underRetained(ctx, runID, SpanInference, trace.SpanKindClient, attribute.String(KeyOperation, OpChat),
		attribute.String(KeyRetainedStep, RetainedStepFollow))
	if s != nil {
		s.tools = &runObserver{t: t, tools: map[string]trace.Span{}, conversation: attribute.String(KeyConversation, runID)}
	}
	return ctx, s
}

// Event traces a tool call the followed turn reports, as an
// agent.tool_call span under the follow span (ctx is the context
// FollowRetained returned): opened when first reported, ended when it
// completes or fails; its arguments and output are never recorded.
func (s *RetainedSpan) Event(ctx context.Context, e contract.EnvironmentEvent) {
	if s == nil || s.span == nil || s.tools == nil {
		return
	}
	s.tools.Event(ctx, e)
}

// RecoverRetained starts the span of recovering retained run runID from
// its admission records, under the run's root. A nil Tracing returns ctx
// and nil.
func (t *Tracing) RecoverRetained(ctx context.Context, runID string) (context.Context, *RetainedSpan) {
	return t.underRetained(ctx, runID, SpanRetainedRecover, trace.SpanKindInternal, attribute.String(KeyRetainedStep, RetainedStepRecover))
}

func (t *Tracing) underRetained(ctx context.Context, runID, name string, kind trace.SpanKind, attrs ...attribute.KeyValue) (context.Context, *RetainedSpan) {
	if t == nil {
		return ctx, nil
	}
	attrs = append(attrs, attribute.String(KeyConversation, runID), attribute.String(KeyRunID, runID), attribute.String(KeyRunKind, RunKindRetained))
	parent := trace.ContextWithRemoteSpanContext(ctx, retainedRoot(runID))
	ctx, span := t.tracer.Start(parent, name, trace.WithSpanKind(kind), trace.WithAttributes(attrs...))
	return ctx, &RetainedSpan{span: span}
}

// Dispatched ends a start span: err, when not nil, is why the run was
// not dispatched (its text is never exported, only that it failed).
func (s *RetainedSpan) Dispatched(err error) {
	if s == nil || s.span == nil {
		return
	}
	if err != nil {
		s.span.SetAttributes(attribute.String(KeyErrorType, "not_dispatched"))
		s.span.SetStatus(codes.Error, "the retained run was not dispatched")
	} else {
		s.span.SetStatus(codes.Ok, "")
	}
	s.end()
}

// Followed ends a follow span with the turn's result: status is the
// run's session status as the provider reports it ("" when unknown),
// res its result (nil when it could not be read), err why following
// failed. Usage is exported only when the provider reported it; else it
// is marked unknown, never 0.
func (s *RetainedSpan) Followed(status string, res *contract.TurnResult, err error) {
	if s == nil || s.span == nil {
		return
	}
	attrs := retainedUsageAttrs(res)
	if status != "" {
		attrs = append(attrs, attribute.String(KeyRunStatus, status), attribute.StringSlice(KeyFinishReasons, []string{status}))
	}
	s.span.SetAttributes(attrs...)
	switch {
	case err != nil:
		s.span.SetAttributes(attribute.String(KeyErrorType, "follow_failed"))
		s.span.SetStatus(codes.Error, "following the retained run failed")
	case res == nil || !res.Success:
		s.span.SetAttributes(attribute.String(KeyErrorType, "turn_"+cmp.Or(status, "failed")))
		s.span.SetStatus(codes.Error, "the turn did not succeed")
	default:
		s.span.SetStatus(codes.Ok, "")
	}
	s.end()
}

// Recovered ends a recover span with the recovery's outcome (recovered,
// not_found, unverifiable; "" when recovery failed with err).
func (s *RetainedSpan) Recovered(outcome string, err error) {
	if s == nil || s.span == nil {
		return
	}
	if outcome != "" {
		s.span.SetAttributes(attribute.String(KeyRetainedOutcome, outcome))
	}
	switch {
	case err != nil:
		s.span.SetAttributes(attribute.String(KeyErrorType, "recover_failed"))
		s.span.SetStatus(codes.Error, "recovering the retained run failed")
	case outcome != "recovered":
		s.span.SetAttributes(attribute.String(KeyErrorType, "recover_"+outcome))
		s.span.SetStatus(codes.Error, "the retained run was not recovered")
	default:
		s.span.SetStatus(codes.Ok, "")
	}
	s.end()
}

func (s *RetainedSpan) end() {
	if s.tools != nil {
		s.tools.endTools()
	}
	s.span.End()
	s.span = nil
}

// retainedUsageAttrs are the usage attributes of a retained turn's
// result: tokens and cost as the provider reported them, each unknown
// one omitted and marked.
func retainedUsageAttrs(res *contract.TurnResult) []attribute.KeyValue {
	if res == nil || res.Usage == nil {
		return []attribute.KeyValue{attribute.Bool(KeyTokensKnown, false), attribute.Bool(KeyCostKnown, false)}
	}
	u := res.Usage
	attrs := []attribute.KeyValue{attribute.Int64(KeyInputTokens, u.InputTokens), attribute.Int64(KeyOutputTokens, u.OutputTokens)}
	if u.Cost != nil {
		attrs = append(attrs, attribute.Float64(KeyCostUSD, *u.Cost))
	} else {
		attrs = append(attrs, attribute.Bool(KeyCostKnown, false))
	}
	return attrs
}

// rootSpanKey carries the span id a new root span is given
// (StartRetained).
type rootSpanKey struct{}
