package chatturn_test

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/chatturn"
	"github.com/agentrt/agentrt/internal/storetest"
	"github.com/agentrt/agentrt/store"
)

// faultyStore is a store that, once told, stops answering some calls:
// the handler's reads (GetRun, Events, ListIdempotency) or its persist
// claims hang until their context ends, and fenced run writes (lease
// renewals among them) block, whatever their context, until resumed is
// closed — as the goroutines of a paused process do.
type faultyStore struct {
	store.Store
	hangReads, hangClaims, pauseFenced atomic.Bool
	resumed                            chan struct{}
	// slowClaims delays each persist claim, which then lands.
	slowClaims time.Duration
}

func hangIf(ctx context.Context, on *atomic.Bool) error {
	if on.Load() {
		<-ctx.Done()
		return ctx.Err()
	}
	return nil
}

func (s *faultyStore) GetRun(ctx context.Context, id string) (store.Run, error) {
	if err := hangIf(ctx, &s.hangReads); err != nil {
		return store.Run{}, err
	}
	return s.Store.GetRun(ctx, id)
}

func (s *faultyStore) Events(ctx context.Context, runID, cursor string, limit int) ([]store.Event, error) {
	if err := hangIf(ctx, &s.hangReads); err != nil {
		return nil, err
	}
	return s.Store.Events(ctx, runID, cursor, limit)
}

func (s *faultyStore) ListIdempotency(ctx context.Context, q store.IdempotencyQuery) ([]store.Idempotency, error) {
	if err := hangIf(ctx, &s.hangReads); err != nil {
		return nil, err
	}
	return s.Store.ListIdempotency(ctx, q)
}

func (s *faultyStore) ClaimIdempotency(ctx context.Context, rec store.Idempotency) (store.Idempotency, bool, error) {
	if err := hangIf(ctx, &s.hangClaims); err != nil {
		return store.Idempotency{}, false, err
	}
	time.Sleep(s.slowClaims)
	return s.Store.ClaimIdempotency(ctx, rec)
}

func (s *faultyStore) UpdateFenced(ctx context.Context, f store.Fence, fn func(*store.Run) error) (store.Run, error) {
	if s.pauseFenced.Load() {
		<-s.resumed
	}
	return s.Store.UpdateFenced(ctx, f, fn)
}

// A store that stops answering never hangs a request: each store call
// the handler makes is bounded by StoreTimeout. A re-attach whose reads
// hang is answered 503 saying so; a reader whose reads hang mid-turn
// gets an error line saying its stream stopped (the turn goes on); a
// persist claim that hangs fails the turn (error, then
// session.run.failed) and persists nothing. On SQLite and PostgreSQL.
func TestStoreThatStopsAnsweringNeverHangsARequest(t *testing.T) {
	storetest.Each(t, func(t *testing.T, open func(t *testing.T) store.Store) {
		client := &http.Client{Timeout: 30 * time.Second}
		exec := ident.ExecutionID()

		t.Run("re-attach", func(t *testing.T) {
			rec := &recorder{}
			s := &faultyStore{Store: open(t)}
			h := &chatturn.Handler{Store: s, StoreTimeout: 300 * time.Millisecond, Turn: turnFor(rec, rec.producer("a", "b"))}
			srv := httptest.NewServer(h)
			defer srv.Close()
			lines, resp := post(t, srv.URL, nil)
			if resp.StatusCode != http.StatusOK || len(lines) != 4 {
				t.Fatalf("the turn: status %d, lines %v", resp.StatusCode, types(lines))
			}
			s.hangReads.Store(true)
			req, _ := http.NewRequest(http.MethodPost, srv.URL, nil)
			req.Header.Set(chatturn.HeaderExecutionID, exec)
			req.Header.Set("Last-Event-ID", "2")
			resp, err := client.Do(req)
			if err != nil {
				t.Fatalf("the re-attach hung: %v", err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), "did not answer") {
				t.Errorf("status %d, body %q; want 503 saying the store did not answer", resp.StatusCode, body)
			}
		})

		t.Run("reader", func(t *testing.T) {
			rec := &recorder{}
			gate := make(chan struct{})
			s := &faultyStore{Store: open(t)}
			h := &chatturn.Handler{Store: s, StoreTimeout: 300 * time.Millisecond, PollInterval: 20 * time.Millisecond,
				Turn: turnFor(rec, gatedProducer(rec, 3, gate, 0))}
			srv := httptest.NewServer(h)
			defer srv.Close()
			defer close(gate)
			resp, err := client.Post(srv.URL+"?session=reader", "application/json", nil)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			sc := bufio.NewScanner(resp.Body)
			var lines []chatturn.Line
			for len(lines) < 2 && sc.Scan() {
				lines = append(lines, decodeLine(t, sc.Bytes()))
			}
			s.hangReads.Store(true)
			for sc.Scan() {
				lines = append(lines, decodeLine(t, sc.Bytes()))
			}
			if err := sc.Err(); err != nil {
				t.Fatalf("the stream hung: %v (lines %v)", err, types(lines))
			}
			last := lines[len(lines)-1]
			msg, _ := last.Data.Get("message")
			if diff := cmp.Diff([]string{chatturn.TypeStarted, "text", chatturn.TypeError}, types(lines)); diff != "" || !strings.Contains(msg.Str(), "did not answer") {
				t.Errorf("lines (-want +got):\n%s\nlast message %q; want an error line saying the store did not answer", diff, msg.Str())
			}
		})

		t.Run("persist claim", func(t *testing.T) {
			rec := &recorder{}
			s := &faultyStore{Store: open(t)}
			s.hangClaims.Store(true)
			h := &chatturn.Handler{Store: s, StoreTimeout: 300 * time.Millisecond, PollInterval: 20 * time.Millisecond,
				Turn: turnFor(rec, rec.producer("a"))}
			srv := httptest.NewServer(h)
			defer srv.Close()
			resp, err := client.Post(srv.URL+"?session=claim", "application/json", nil)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var lines []chatturn.Line
			sc := bufio.NewScanner(resp.Body)
			for sc.Scan() {
				lines = append(lines, decodeLine(t, sc.Bytes()))
			}
			if err := sc.Err(); err != nil {
				t.Fatalf("the turn hung: %v (lines %v)", err, types(lines))
			}
			if diff := cmp.Diff([]string{chatturn.TypeStarted, "text", chatturn.TypeError, chatturn.TypeFailed}, types(lines)); diff != "" {
				t.Fatalf("lines (-want +got):\n%s", diff)
			}
			if msg, _ := lines[3].Data.Get("message"); !strings.Contains(msg.Str(), "did not answer") {
				t.Errorf("failure %q; want it to say the store did not answer", msg.Str())
			}
			if len(rec.persisted) != 0 {
				t.Errorf("persisted %v without a claim", rec.persisted)
			}
		})
	})
}
