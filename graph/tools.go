package graph

import (
	"context"
	"errors"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/supervise"
	"github.com/agentrt/agentrt/tools"
)

// refusal turns a verb's typed refusal into its tool result
// (supervise.RefusalResult); any other error stays a tool failure.
func refusal(err error) (supervise.RefusalResult, bool) {
	var r *supervise.Refusal
	if errors.As(err, &r) {
		live, reason := r.Live, r.Detail
		if reason == "" {
			reason = r.Cause
		}
		return supervise.RefusalResult{Error: string(r.Code), Reason: reason, Cause: r.Cause, Live: &live, FreeSlots: r.FreeSlots}, true
	}
	var v *supervise.VerbRefusal
	if errors.As(err, &v) {
		return supervise.RefusalResult{Error: v.Code, Reason: v.Reason}, true
	}
	if errors.Is(err, supervise.ErrUnknownWorker) {
		return supervise.RefusalResult{Error: "unknown-worker", Reason: err.Error()}, true
	}
	return supervise.RefusalResult{}, false
}

func verb[In, Out any](name, desc string, fn func(ctx context.Context, in In) (Out, error)) (contract.Tool, error) {
	return tools.NewTool(supervise.ToolPrefix+name, desc, func(ctx context.Context, in In) (any, error) {
		out, err := fn(ctx, in)
		if err != nil {
			if r, ok := refusal(err); ok {
				return r, nil
			}
			return nil, err
		}
		return out, nil
	})
}
