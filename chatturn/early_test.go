package chatturn_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/chatturn"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/store"
)

// hostile is a producer that yields "par", then does what tail says.
func hostile(rec *recorder, tail func(ctx context.Context, yield func(chatturn.Line, error) bool)) func(context.Context) (chatturn.Production, error) {
	return func(ctx context.Context) (chatturn.Production, error) {
		rec.produced.Add(1)
		return chatturn.Production{
			Events: func(yield func(chatturn.Line, error) bool) {
				if !yield(text("par"), nil) {
					return
				}
				tail(ctx, yield)
			},
			FinalText: func() string { return "par" },
			Usage: func() ledger.Usage {
				return ledger.Usage{InputTokens: ledger.ExactAmount[int64](40)}.Floor()
			},
		}, nil
	}
}

// Behaviour 27/28, spec/runtime.md §3.3: a producer that ends badly —
// cut by a transport error, panicking, claiming the turn's own end line,
// ignoring its deadline and blocking — and persist or transform hooks
// that panic, all end the turn with error then session.run.failed, the
// one terminal line, last; nothing is persisted for a turn whose
// producer did not finish; the caller never panics and never waits past
// the grace.
func TestTurnEndingBadlyEndsInOneFailedLine(t *testing.T) {
	forever := make(chan struct{})
	t.Cleanup(func() { close(forever) })
	persistPanics := func(context.Context, chatturn.Identity, string) error { panic("store bug") }
	tests := []struct {
		name      string
		tail      func(ctx context.Context, yield func(chatturn.Line, error) bool)
		deadline  time.Duration
		persist   func(context.Context, chatturn.Identity, string) error
		transform func(string) string
		message   string
		persisted bool
	}{
		{name: "transport cut", tail: func(_ context.Context, yield func(chatturn.Line, error) bool) {
			yield(chatturn.Line{}, io.ErrUnexpectedEOF)
		}, message: "unexpected EOF"},
		{name: "producer panics", tail: func(context.Context, func(chatturn.Line, error) bool) { panic("producer bug") },
			message: "panicked: producer bug"},
		{name: "producer claims the turn completed", tail: func(_ context.Context, yield func(chatturn.Line, error) bool) {
			if yield(chatturn.Line{Type: chatturn.TypeCompleted}, nil) {
				yield(text("more"), nil)
			}
		}, message: `"session.run.completed" line`},
		{name: "producer claims the turn failed", tail: func(_ context.Context, yield func(chatturn.Line, error) bool) {
			yield(chatturn.Line{Type: chatturn.TypeFailed}, nil)
		}, message: `"session.run.failed" line`},
		{name: "producer ignores its deadline", tail: func(context.Context, func(chatturn.Line, error) bool) { <-forever },
			deadline: 100 * time.Millisecond, message: "did not stop within"},
		{name: "persist panics", tail: func(context.Context, func(chatturn.Line, error) bool) {},
			persist: persistPanics, message: "persisting the assistant message: panic: store bug"},
		{name: "transform panics", tail: func(context.Context, func(chatturn.Line, error) bool) {},
			transform: func(string) string { panic("transform bug") }, message: "transforming the final text: panic: transform bug"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			if tc.deadline > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tc.deadline)
				defer cancel()
			}
			rec := &recorder{}
			persist := rec.persist
			if tc.persist != nil {
				persist = tc.persist
			}
			turn := chatturn.Turn{Identity: ident, Hooks: chatturn.Hooks{Produce: hostile(rec, tc.tail), PersistAssistantMessage: persist,
				TransformFinalText: tc.transform}}
			start := time.Now()
			lines := collect(chatturn.Stream(ctx, turn))
			if d := time.Since(start); d > chatturn.ProducerGrace+30*time.Second {
				t.Errorf("took %s", d)
			}
			want := []string{chatturn.TypeStarted, "text", chatturn.TypeError, chatturn.TypeFailed}
			if diff := cmp.Diff(want, types(lines)); diff != "" {
				t.Fatalf("lines (-want +got):\n%s", diff)
			}
			if msg, _ := lines[3].Data.Get("message"); !strings.Contains(msg.Str(), tc.message) {
				t.Errorf("failure %q does not say %q", msg.Str(), tc.message)
			}
			if len(rec.persisted) != 0 {
				t.Errorf("persisted %v for a turn that failed", rec.persisted)
			}
		})
	}
}

// A durable turn (Handler with a store) whose producer claims the turn's
// end line and then fails: the reader sees exactly one terminal line,
// session.run.failed, never the producer's "completed"; the record is
// failed with the usage the producer reported kept (a floor, the unknown
// cost unknown); a reader re-attaching after the end (Last-Event-ID of
// the last line) gets no second end; a reader re-attaching mid-turn gets
// the rest once.
func TestDurableTurnEndingBadlyEndsOnce(t *testing.T) {
	rec := &recorder{}
	h := &chatturn.Handler{Store: openStore(t, filepath.Join(t.TempDir(), "turns.db")), PollInterval: 20 * time.Millisecond,
		Turn: turnFor(rec, hostile(rec, func(_ context.Context, yield func(chatturn.Line, error) bool) {
			if yield(chatturn.Line{Type: chatturn.TypeCompleted}, nil) {
				yield(chatturn.Line{}, errors.New("connection reset"))
			}
		}))}
	srv := httptest.NewServer(h)
	defer srv.Close()
	lines, resp := post(t, srv.URL, nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	want := []string{chatturn.TypeStarted, "text", chatturn.TypeError, chatturn.TypeFailed}
	if diff := cmp.Diff(want, types(lines)); diff != "" {
		t.Fatalf("lines (-want +got):\n%s", diff)
	}
	if err := h.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	execID := ident.ExecutionID()
	r, err := kernel.ReadRun(context.Background(), h.Store, execID)
	if err != nil || r.Status != store.StatusFailed {
		t.Fatalf("record %+v (%v), want failed", r, err)
	}
	if got := r.Spend.InputTokens.String(); got != "≥ 40" || r.Spend.CostUSD.Reported {
		t.Errorf("spend input %s cost reported %v; want ≥ 40 and the cost unknown", got, r.Spend.CostUSD.Reported)
	}
	for after, want := range map[int64][]string{
		int64(len(lines)): nil,
		2:                 {chatturn.TypeError, chatturn.TypeFailed},
	} {
		rest, resp := post(t, srv.URL, http.Header{chatturn.HeaderExecutionID: {execID}, "Last-Event-Id": {strconv.FormatInt(after, 10)}})
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("re-attach after %d: status %d", after, resp.StatusCode)
		}
		if diff := cmp.Diff(want, types(rest)); diff != "" {
			t.Errorf("re-attach after line %d (-want +got):\n%s", after, diff)
		}
	}
	if rec.produced.Load() != 1 || len(rec.persisted) != 0 {
		t.Errorf("produced %d times, persisted %v; want one production, nothing persisted", rec.produced.Load(), rec.persisted)
	}
}
