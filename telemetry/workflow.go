package telemetry

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentrt/agentrt/kernel"
)

// Workflow attribute keys (spec runtime §10's loop span).
const (
	KeyIterations  = "tangle.loop.iterations"
	KeyDecision    = "tangle.loop.decision"
	KeyWinnerIndex = "tangle.loop.winner.index"
)

// OpInvokeWorkflow is the operation name of a workflow span.
const OpInvokeWorkflow = "invoke_workflow"

// SpanWorkflowPrefix starts the span name of a workflow: "invoke_workflow"
// and, when it has one, a space and its name.
const SpanWorkflowPrefix = "invoke_workflow"

// Workflow is the invoke_workflow span of a rounds run (kernel.Rounds):
// the root of the rounds run's own trace (TraceID of its run id), with
// each iteration's invoke_agent span as its child. A nil Workflow traces
// nothing.
type Workflow struct {
	t    *Tracing
	span trace.Span
}

// StartWorkflow starts the workflow span of the rounds run runID; name
// (may be empty) names the workflow. A nil Tracing returns nil.
func (t *Tracing) StartWorkflow(ctx context.Context, runID, name string) *Workflow {
	if t == nil {
		return nil
	}
	span := SpanWorkflowPrefix
	if name != "" {
		span += " " + name
	}
	_, s := t.startRoot(ctx, runID, span, attribute.String(KeyOperation, OpInvokeWorkflow),
		attribute.String(KeyConversation, runID), attribute.String(KeyRunID, runID), attribute.String(KeyRunKind, kernel.KindRounds))
	return &Workflow{t: t, span: s}
}

// Observe returns the observer of the iteration run runID: its spans are
// the workflow's children. It fits kernel.RoundsOptions.Observe.
func (w *Workflow) Observe(runID string) kernel.Observer {
	if w == nil {
		return nil
	}
	return &runObserver{t: w.t, parent: w.span, tools: map[string]trace.Span{}}
}

// EndWorkflow ends w's span with how the rounds ended: decision,
// iterations, winner, usage as far as it is known, and error status when
// err is not nil (its text is never exported).
func EndWorkflow[T, O any](w *Workflow, res *kernel.RoundsResult[T, O], err error) {
	if w == nil {
		return
	}
	if res != nil {
		attrs := append(usageAttrs(res.Usage), attribute.Int(KeyIterations, len(res.Iterations)))
		if res.Decision != "" {
			attrs = append(attrs, attribute.String(KeyDecision, string(res.Decision)))
		}
		if res.Winner != nil {
			attrs = append(attrs, attribute.Int(KeyWinnerIndex, res.Winner.Index))
		}
		w.span.SetAttributes(attrs...)
	}
	if err != nil {
		kind := "rounds_failed"
		if re, ok := errors.AsType[*kernel.RunError](err); ok {
			kind = re.Reason
		} else if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			kind = "cancelled"
		}
		w.span.SetAttributes(attribute.String(KeyErrorType, kind))
		w.span.SetStatus(codes.Error, "the rounds failed")
	} else {
		w.span.SetStatus(codes.Ok, "")
	}
	w.span.End()
}
