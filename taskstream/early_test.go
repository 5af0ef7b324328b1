package taskstream_test

import (
	"context"
	"errors"
	"iter"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/taskstream"
)

// hostileBackend yields its deltas, then misbehaves as tail says.
type hostileBackend struct {
	deltas []string
	tail   func(ctx context.Context, yield func(taskstream.Event, error) bool)
	stops  int
}

func (b *hostileBackend) Kind() string { return "hostile" }

func (b *hostileBackend) Stream(ctx context.Context, _ taskstream.Input, _ taskstream.BackendContext) iter.Seq2[taskstream.Event, error] {
	return func(yield func(taskstream.Event, error) bool) {
		for _, d := range b.deltas {
			if !yield(taskstream.Event{Type: taskstream.EventTextDelta, Text: d}, nil) {
				return
			}
		}
		b.tail(ctx, yield)
	}
}

func (b *hostileBackend) Stop(context.Context, taskstream.Session, string) error {
	b.stops++
	return nil
}

// finals counts the final events of a stream and returns the last event.
func finals(events []taskstream.Event) (int, taskstream.Event) {
	n := 0
	for _, e := range events {
		if e.Type == taskstream.EventFinal {
			n++
		}
	}
	return n, events[len(events)-1]
}

// Behaviour 23/24, spec/runtime.md §2.4: whatever a backend does once it
// started — panic, ignore its deadline and block, claim the stream's own
// final, end after partial text — the task stream still ends with exactly
// one final, last, whose status says what happened (failed, or aborted
// when the caller's deadline ended it), with the partial text kept and
// the backend stopped; the caller's goroutine never panics and never
// waits past the grace.
func TestBackendEndingBadlyStillEndsInOneFinal(t *testing.T) {
	forever := make(chan struct{})
	t.Cleanup(func() { close(forever) })
	tests := []struct {
		name        string
		tail        func(ctx context.Context, yield func(taskstream.Event, error) bool)
		deadline    time.Duration
		status      taskstream.Status
		reason      string
		recoverable bool
	}{
		{name: "panics after a delta",
			tail:   func(context.Context, func(taskstream.Event, error) bool) { panic("backend bug") },
			status: taskstream.StatusFailed, reason: "panicked: backend bug", recoverable: true},
		{name: "ignores its deadline and blocks",
			tail:     func(context.Context, func(taskstream.Event, error) bool) { <-forever },
			deadline: 100 * time.Millisecond, status: taskstream.StatusAborted, reason: "did not stop within", recoverable: false},
		{name: "emits the stream's own final",
			tail: func(_ context.Context, yield func(taskstream.Event, error) bool) {
				yield(taskstream.Event{Type: taskstream.EventFinal, Status: taskstream.StatusCompleted}, nil)
			},
			status: taskstream.StatusFailed, reason: `"final" event`, recoverable: true},
		{name: "breaks with a transport error",
			tail: func(_ context.Context, yield func(taskstream.Event, error) bool) {
				yield(taskstream.Event{}, &taskstream.TransportError{Status: 502, Body: strings.Repeat("x", 10<<10), Err: errors.New("unexpected EOF")})
			},
			status: taskstream.StatusFailed, reason: "unexpected EOF", recoverable: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			if tc.deadline > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tc.deadline)
				defer cancel()
			}
			b := &hostileBackend{deltas: []string{"Ship", "ped"}, tail: tc.tail}
			start := time.Now()
			events, err := collect(t, taskstream.Run(ctx, taskstream.Options{Task: task, Backend: b}))
			if err != nil {
				t.Fatalf("the sequence failed: %v (a backend failure belongs in the stream)", err)
			}
			if d := time.Since(start); d > taskstream.BackendGrace+30*time.Second {
				t.Errorf("took %s", d)
			}
			n, f := finals(events)
			if n != 1 || f.Type != taskstream.EventFinal {
				t.Fatalf("%d finals, last event %q: %v", n, f.Type, types(events))
			}
			if f.Status != tc.status || !strings.Contains(f.Reason, tc.reason) {
				t.Errorf("final %s %q, want %s containing %q", f.Status, f.Reason, tc.status, tc.reason)
			}
			if f.Text != "Shipped" {
				t.Errorf("final text %q, want the partial text", f.Text)
			}
			if f.Error == nil {
				t.Fatal("final without its error")
			}
			var be *taskstream.Event
			for i := range events {
				if events[i].Type == taskstream.EventBackendError {
					be = &events[i]
				}
			}
			if be == nil || be.Recoverable == nil || *be.Recoverable != tc.recoverable {
				t.Fatalf("backend_error %+v, want recoverable %v", be, tc.recoverable)
			}
			if d := be.Error; d.Kind == taskstream.ErrorKindTransport && (d.Status == nil || *d.Status != 502 || len(d.Body) != taskstream.MaxErrorBody) {
				t.Errorf("transport detail %+v: status 502 and a body cut to %d bytes", d, taskstream.MaxErrorBody)
			}
			if b.stops != 1 {
				t.Errorf("backend stopped %d times, want 1", b.stops)
			}
		})
	}
}

// A provider turn that ends at any point before its terminal event is the
// backend's failure: backend_error, then task_end and one final, failed,
// never an empty success, with the usage it reported kept as a floor in
// its llm_call (tokensKnown false) and the text it streamed kept.
func TestProviderTurnEndingEarlyFailsTheTask(t *testing.T) {
	tests := []struct {
		name, script string
		in           *int64
	}{
		{"before any step", `{"turns":[{"steps":[],"end":"no-terminal"}]}`, nil},
		{"after usage", `{"turns":[{"steps":[{"text":"Ship"},{"usage":{"inputTokens":12,"outputTokens":4},"mode":"delta"}],"end":"no-terminal"}]}`, ptr(int64(12))},
		{"transport cut after usage", `{"turns":[{"steps":[{"text":"Ship"},{"usage":{"inputTokens":12,"outputTokens":4},"mode":"delta"}],"end":"die","error":"unexpected EOF"}]}`, ptr(int64(12))},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := providerBackend(t, tc.script)
			events, err := collect(t, taskstream.Run(context.Background(), taskstream.Options{Task: task, Backend: b}))
			if err != nil {
				t.Fatal(err)
			}
			n, f := finals(events)
			if n != 1 || f.Type != taskstream.EventFinal || f.Status != taskstream.StatusFailed {
				t.Fatalf("%d finals, last %+v", n, f)
			}
			var call *taskstream.LLMCall
			for _, e := range events {
				if e.Type == taskstream.EventLLMCall {
					call = e.LLMCall
				}
			}
			if call == nil {
				t.Fatal("no llm_call: the spend of a failed turn must still be reported")
			}
			if call.TokensKnown {
				t.Error("tokensKnown on a turn that ended early: what it reported is a floor")
			}
			if diff := cmp.Diff(tc.in, call.TokensIn); diff != "" {
				t.Errorf("tokensIn (-want +got):\n%s", diff)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }
