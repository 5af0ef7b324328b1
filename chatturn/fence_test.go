package chatturn_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/chatturn"
	"github.com/agentrt/agentrt/internal/storetest"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/store"
)

// within fails t unless ch closes within a generous deadline.
func within(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(30 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}

// The assistant message is persisted at most once per execution, by the
// attempt that holds the turn (behaviour 27, FD-02; spec/runtime.md
// §3.3). Attempt 1 is paused at its persist point (in
// TransformFinalText, right before the claim) and renews nothing: its
// lease lapses, and another handler sharing the store carries the turn
// on as attempt 2, which produces and — once attempt 1 was released and
// ended — persists. Attempt 1, released after losing its lease, must not
// claim the persist nor hand its stale text to PersistAssistantMessage:
// it used to, and attempt 2 then failed in doubt. Attempt 1's lease
// renewal is frozen mid-call, so nothing but the fence tells it that it
// lost the turn: it is released before its heartbeat could notice. On
// SQLite and PostgreSQL.
func TestPausedAttemptDoesNotPersistAfterItsLeaseLapsed(t *testing.T) {
	storetest.Each(t, func(t *testing.T, open func(t *testing.T) store.Store) {
		var mu sync.Mutex
		var persisted []string
		persist := func(_ context.Context, _ chatturn.Identity, text string) error {
			mu.Lock()
			defer mu.Unlock()
			persisted = append(persisted, text)
			return nil
		}
		atPersist, release1, ended1 := make(chan struct{}), make(chan struct{}), make(chan struct{})
		s1 := &faultyStore{Store: open(t), resumed: make(chan struct{})}
		rec1 := &recorder{}
		h1 := &chatturn.Handler{Store: s1, LeaseTTL: kernel.MinLeaseTTL, Turn: func(*http.Request) (*chatturn.Turn, error) {
			return &chatturn.Turn{Identity: ident, Hooks: chatturn.Hooks{
				Produce:                 rec1.producer("stale"),
				TransformFinalText:      func(s string) string { close(atPersist); <-release1; return s },
				PersistAssistantMessage: persist,
				TraceFlush:              func(context.Context) error { close(ended1); return nil },
			}}, nil
		}}
		producing2, release2 := make(chan struct{}), make(chan struct{})
		h2 := &chatturn.Handler{Store: open(t), LeaseTTL: kernel.MinLeaseTTL, PollInterval: 20 * time.Millisecond, Turn: func(*http.Request) (*chatturn.Turn, error) {
			return &chatturn.Turn{Identity: ident, Hooks: chatturn.Hooks{
				Produce: func(ctx context.Context) (chatturn.Production, error) {
					close(producing2)
					return chatturn.Production{
						Events: func(yield func(chatturn.Line, error) bool) {
							select {
							case <-release2:
								yield(text("fresh"), nil)
							case <-ctx.Done():
								yield(chatturn.Line{}, ctx.Err())
							}
						},
						FinalText: func() string { return "fresh" },
					}, nil
				},
				PersistAssistantMessage: persist,
			}}, nil
		}}
		srv1, srv2 := httptest.NewServer(h1), httptest.NewServer(h2)
		defer srv1.Close()
		defer srv2.Close()
		exec := ident.ExecutionID()

		// Attempt 1 runs to its persist point; its reader goes away (so
		// that only the second handler carries the turn on).
		ctx, cancel := context.WithCancel(context.Background())
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv1.URL, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		within(t, atPersist, "attempt 1 to reach its persist")
		cancel()
		resp.Body.Close()

		// Paused: it renews nothing, and its lease lapses.
		s1.pauseFenced.Store(true)
		deadline := time.Now().Add(30 * time.Second)
		for {
			r, err := kernel.ReadRun(context.Background(), h2.Store, exec)
			if err == nil && r.Status == store.StatusInterrupted {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("attempt 1 never read interrupted: %s (%v)", r.Status, err)
			}
			time.Sleep(50 * time.Millisecond)
		}

		// Attempt 2 takes the turn over.
		type answer struct {
			lines []chatturn.Line
			resp  *http.Response
		}
		got2 := make(chan answer, 1)
		go func() {
			lines, resp := post(t, srv2.URL, http.Header{chatturn.HeaderExecutionID: {exec}})
			got2 <- answer{lines, resp}
		}()
		within(t, producing2, "attempt 2 to produce")

		// Attempt 1 goes on to its end (its heartbeat still frozen),
		// before attempt 2 reaches its persist.
		close(release1)
		within(t, ended1, "attempt 1 to end its turn")
		close(s1.resumed)
		sctx, scancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer scancel()
		if err := h1.Shutdown(sctx); err != nil {
			t.Fatalf("attempt 1 did not end: %v", err)
		}
		close(release2)
		var a answer
		select {
		case a = <-got2:
		case <-time.After(30 * time.Second):
			t.Fatal("attempt 2's reader never ended")
		}
		if a.resp.StatusCode != http.StatusOK || len(a.lines) == 0 || a.lines[len(a.lines)-1].Type != chatturn.TypeCompleted {
			t.Fatalf("attempt 2's reader: status %d, lines %v; want the turn completed", a.resp.StatusCode, types(a.lines))
		}
		if err := h2.Shutdown(sctx); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		defer mu.Unlock()
		if diff := cmp.Diff([]string{"fresh"}, persisted); diff != "" {
			t.Errorf("persisted (-want +got):\n%s", diff)
		}
		checkAttempts(t, h2.Store, exec, store.StatusInterrupted, store.StatusCompleted)
	})
}

// A persist claim that returns after the attempt's lease, as it last
// confirmed it, ran out (less a tenth for clocks) cannot be shown to
// have landed while the attempt held the turn: the attempt does not
// persist, fails the turn saying why, and withdraws its claim rather
// than leave a claim nobody acted on (behaviour 27, FD-02).
func TestPersistClaimReturningAfterTheLeaseIsWithdrawn(t *testing.T) {
	storetest.Each(t, func(t *testing.T, open func(t *testing.T) store.Store) {
		rec := &recorder{}
		s := &faultyStore{Store: open(t), slowClaims: kernel.MinLeaseTTL + 200*time.Millisecond}
		h := &chatturn.Handler{Store: s, LeaseTTL: kernel.MinLeaseTTL, Turn: turnFor(rec, rec.producer("a"))}
		srv := httptest.NewServer(h)
		defer srv.Close()
		lines, _ := post(t, srv.URL, nil)
		if diff := cmp.Diff([]string{chatturn.TypeStarted, "text", chatturn.TypeError, chatturn.TypeFailed}, types(lines)); diff != "" {
			t.Fatalf("lines (-want +got):\n%s", diff)
		}
		if msg, _ := lines[3].Data.Get("message"); !strings.Contains(msg.Str(), "could not prove it still holds the turn") {
			t.Errorf("failure %q; want it to say the attempt could not prove it holds the turn", msg.Str())
		}
		if len(rec.persisted) != 0 {
			t.Errorf("persisted %v", rec.persisted)
		}
		claims, err := s.Store.ListIdempotency(context.Background(), store.IdempotencyQuery{Scope: "chatturn.persist", Limit: 10})
		if err != nil || len(claims) != 0 {
			t.Errorf("persist claims left: %v (%v); want the late claim withdrawn", claims, err)
		}
	})
}
