package fleet_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/fleet"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/store"
)

const (
	nodeTrace = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	otherNode = "00-4bf92f3577b34da6a3ce929d0e0e4736-b7ad6b7169203331-01"
)

// Spec runtime §10 (worker trace context is propagated): Submit records
// a valid traceparent with the run, outside the spec, so a keyed retry
// under another span replays (the first stays); it refuses one that is
// not a W3C traceparent.
func TestSubmitRecordsTheTraceParent(t *testing.T) {
	f, _ := openFleet(t)
	ctx := t.Context()
	first, err := f.Submit(ctx, fleet.Submission{Spec: spec(t, "traced"), IdempotencyKey: "traced", TraceParent: nodeTrace})
	if err != nil {
		t.Fatal(err)
	}
	again, err := f.Submit(ctx, fleet.Submission{Spec: spec(t, "traced"), IdempotencyKey: "traced", TraceParent: otherNode})
	if err != nil || !again.Replayed || again.RunID != first.RunID {
		t.Fatalf("keyed retry under another span = %+v, %v; want a replay of %s", again, err, first.RunID)
	}
	r, err := f.Get(ctx, first.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if r.TraceParent != nodeTrace {
		t.Errorf("recorded traceparent %q, want the first submission's %q", r.TraceParent, nodeTrace)
	}
	untraced, err := f.Submit(ctx, fleet.Submission{Spec: spec(t, "untraced")})
	if err != nil {
		t.Fatal(err)
	}
	if r, err := f.Get(ctx, untraced.RunID); err != nil || r.TraceParent != "" {
		t.Errorf("untraced run: traceparent %q, %v; want none", r.TraceParent, err)
	}

	for _, tp := range []string{
		"garbage",
		"00-00000000000000000000000000000000-00f067aa0ba902b7-01", // zero trace id
		"00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01", // zero parent id
		"00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01", // upper case
		"ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", // forbidden version
		"01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", // a version this side does not speak
		nodeTrace + "-extra",
		strings.Repeat("0", 1<<16),
	} {
		if _, err := f.Submit(ctx, fleet.Submission{Spec: spec(t, "bad trace"), TraceParent: tp}); !errors.Is(err, fleet.ErrInvalid) {
			t.Errorf("Submit(traceparent %.70q) = %v, want ErrInvalid", tp, err)
		}
	}
}

// spanSeen is a kernel.Observer that keeps the span context its run
// started under.
type spanSeen struct {
	mu sync.Mutex
	sc trace.SpanContext
}

func (o *spanSeen) RunStarted(ctx context.Context, _ kernel.RunStart) (context.Context, error) {
	o.mu.Lock()
	o.sc = trace.SpanContextFromContext(ctx)
	o.mu.Unlock()
	return ctx, nil
}
func (o *spanSeen) TurnStarted(ctx context.Context, _ kernel.TurnStart) (context.Context, error) {
	return ctx, nil
}
func (o *spanSeen) Event(context.Context, contract.EnvironmentEvent) error { return nil }
func (o *spanSeen) TurnEnded(context.Context, kernel.TurnEnd) error        { return nil }
func (o *spanSeen) RunEnded(context.Context, kernel.Result) error          { return nil }

// The worker runs an attempt under the run's recorded trace context, as
// the remote parent its observer sees; an untraced run's attempt sees
// none.
func TestAttemptRunsUnderTheRecordedTraceContext(t *testing.T) {
	f, conn := openFleet(t)
	ctx := t.Context()
	traced, err := f.Submit(ctx, fleet.Submission{Spec: spec(t, "traced"), TraceParent: nodeTrace})
	if err != nil {
		t.Fatal(err)
	}
	plain, err := f.Submit(ctx, fleet.Submission{Spec: spec(t, "plain")})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	seen := map[string]*spanSeen{}
	startWorker(t, conn, f.RiverSchema(), fleet.WorkerOptions{
		Providers:    map[string]contract.Provider{"scripted": provider(t, quickScript)},
		PollInterval: 50 * time.Millisecond,
		Observe: func(runID string) kernel.Observer {
			o := &spanSeen{}
			mu.Lock()
			seen[runID] = o
			mu.Unlock()
			return o
		},
	})
	ended := waitEnded(t, f, []string{traced.RunID, plain.RunID}, 90*time.Second)
	for id, r := range ended {
		if r.Status != store.StatusCompleted {
			t.Errorf("run %s %s, want completed", id, r.Status)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	got := func(id string) trace.SpanContext {
		if seen[id] == nil {
			t.Fatalf("no attempt of run %s was observed", id)
		}
		seen[id].mu.Lock()
		defer seen[id].mu.Unlock()
		return seen[id].sc
	}
	sc := got(traced.RunID)
	want := map[string]any{"trace": "4bf92f3577b34da6a3ce929d0e0e4736", "span": "00f067aa0ba902b7", "remote": true, "sampled": true}
	if diff := cmp.Diff(want, map[string]any{"trace": sc.TraceID().String(), "span": sc.SpanID().String(), "remote": sc.IsRemote(), "sampled": sc.IsSampled()}); diff != "" {
		t.Errorf("the traced run's attempt started under (-want +got):\n%s", diff)
	}
	if sc := got(plain.RunID); sc.IsValid() {
		t.Errorf("the untraced run's attempt started under span context %v, want none", sc)
	}
}

// TraceParent is the traceparent of the span a context carries, "" for
// none.
func TestTraceParent(t *testing.T) {
	if got := fleet.TraceParent(context.Background()); got != "" {
		t.Errorf("TraceParent(no span) = %q, want \"\"", got)
	}
	tid, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	sid, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	ctx := trace.ContextWithSpanContext(context.Background(), trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled}))
	if got := fleet.TraceParent(ctx); got != nodeTrace {
		t.Errorf("TraceParent = %q, want %q", got, nodeTrace)
	}
}

// spyProvider records the span context each environment is created
// under.
type spyProvider struct {
	contract.Provider
	mu   sync.Mutex
	seen []trace.SpanContext
}

func (p *spyProvider) Create(ctx context.Context, in *contract.CreateInput) (contract.Environment, error) {
	p.mu.Lock()
	p.seen = append(p.seen, trace.SpanContextFromContext(ctx))
	p.mu.Unlock()
	return p.Provider.Create(ctx, in)
}

// A worker that traces nothing still carries a run's recorded trace
// context on to its provider (which passes it to a harness as
// TRACEPARENT, to a sidecar as traceparent).
func TestUntracedWorkerCarriesTheTraceContextOn(t *testing.T) {
	f, conn := openFleet(t)
	sub, err := f.Submit(t.Context(), fleet.Submission{Spec: spec(t, "traced"), TraceParent: nodeTrace})
	if err != nil {
		t.Fatal(err)
	}
	spy := &spyProvider{Provider: provider(t, quickScript)}
	startWorker(t, conn, f.RiverSchema(), fleet.WorkerOptions{Providers: map[string]contract.Provider{"scripted": spy}, PollInterval: 50 * time.Millisecond})
	if r := waitEnded(t, f, []string{sub.RunID}, 90*time.Second)[sub.RunID]; r.Status != store.StatusCompleted {
		t.Fatalf("run %s, want completed", r.Status)
	}
	spy.mu.Lock()
	defer spy.mu.Unlock()
	if len(spy.seen) != 1 || fleet.TraceParent(trace.ContextWithSpanContext(context.Background(), spy.seen[0])) != nodeTrace {
		t.Errorf("the provider was called under %v, want the recorded %s", spy.seen, nodeTrace)
	}
}
