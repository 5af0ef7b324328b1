package delegation_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/delegation"
	storememory "github.com/agentrt/agentrt/store/memory"
	"github.com/agentrt/agentrt/supervise"
	"github.com/agentrt/agentrt/tools"
)

// FuzzToolArguments: whatever arguments a client sends, every delegation
// tool answers without panicking, within its bound: an *ArgumentsError
// (the arguments do not fit the schema), a refusal result {error,
// reason, path} with a known code, or its answer.
func FuzzToolArguments(f *testing.F) {
	for _, seed := range []string{
		`{"intent": "write alpha"}`,
		`{"intent": "write alpha", "idempotencyKey": "k1", "budget": {"tokens": 100, "iterations": 2, "usd": 0.5}, "waitSeconds": 1}`,
		`{"intent": ""}`,
		`{"intent": "x", "budget": {"tokens": -1}}`,
		`{"intent": "x", "budget": {"usd": 1e308}}`,
		`{"intent": "x", "extra": true}`,
		`{"taskId": "dlg_x", "waitSeconds": 700}`,
		`{"intent": "x", "runId": "r-1", "waitSeconds": 0}`,
		`{"intent": "x", "runId": "a b"}`,
		`{"task": "x"}`,
		`{"taskId": "../../etc"}`,
		`{"limit": 0, "since": "2026-01-01T00:00:00Z"}`,
		`{"limit": 1000}`,
		`{"since": "yesterday"}`,
		`{"taskId": "dlg_x", "rating": {"score": 0.5, "notes": "ok"}, "by": "user"}`,
		`{"taskId": "dlg_x", "rating": {"score": 2, "notes": "", "label": "great"}, "by": "robot"}`,
		`{"taskId": "dlg_x", "reason": "stop"}`,
		`[]`, `null`, `{"intent": 1}`,
	} {
		for i := range 5 {
			f.Add(uint8(i), []byte(seed))
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, raw []byte) {
		args, err := canonjson.Decode(raw)
		if err != nil {
			return
		}
		q := fuzzQueue(t)
		ts, err := q.Tools()
		if err != nil {
			t.Fatal(err)
		}
		tool := ts[int(which)%len(ts)]
		ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
		defer cancel()
		start := time.Now()
		out, err := tool.Run(ctx, args)
		if el := time.Since(start); el > 10*time.Second {
			t.Fatalf("%s took %s", tool.Name, el)
		}
		if err != nil {
			if _, ok := errors.AsType[*tools.ArgumentsError](err); !ok {
				t.Fatalf("%s(%s): %T %v, want an *ArgumentsError or a result", tool.Name, raw, err, err)
			}
			return
		}
		var m map[string]any
		if err := json.Unmarshal(canonjson.Marshal(out), &m); err != nil {
			t.Fatalf("%s: the result is not an object: %s", tool.Name, canonjson.Marshal(out))
		}
		if code, ok := m["error"].(string); ok {
			known := []string{delegation.CodeInvalidArguments, delegation.CodeBudgetOverCap, delegation.CodeIdempotencyConflict,
				delegation.CodeUnknownDelegation, delegation.CodeQueueFull, delegation.CodeFeedbackFull, delegation.CodeClosed, delegation.CodeStoreFailed}
			if !slices.Contains(known, code) || m["reason"] == "" {
				t.Fatalf("%s: refusal %v", tool.Name, m)
			}
		}
	})
}

// fuzzQueue is a queue whose manager ends at once, so fuzzed
// submissions settle quickly.
func fuzzQueue(t *testing.T) *delegation.Queue {
	fx := newFixture(t, storememory.New(nil))
	cfg := fx.config(t)
	cfg.Brain = func(string) (supervise.Brain, error) {
		return supervise.BrainFunc(func(context.Context, *supervise.Coordinator, string) (supervise.BrainReport, error) {
			return supervise.BrainReport{}, nil
		}), nil
	}
	return open(t, cfg)
}
