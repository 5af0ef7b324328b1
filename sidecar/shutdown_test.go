package sidecar_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/contract/wire"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/sidecar"
	"github.com/agentrt/agentrt/store"
)

// drainScript: "drain" says first, pauses 1.5 s and says last — a turn
// live when a stop begins; "live" runs until cancelled.
const drainScript = `{"turns":[
 {"match":"drain","repeat":true,"steps":[{"text":"first"},{"delayMs":1500},{"text":"last"}]},
 {"match":"live","repeat":true,"steps":[{"text":"working"},{"delayMs":60000},{"text":"done"}]}]}`

func drainServer(t *testing.T) (url string, s *sidecar.Server, call func(method, path string, body any) (int, []byte)) {
	t.Helper()
	sc, err := scripted.ParseScript([]byte(drainScript))
	if err != nil {
		t.Fatal(err)
	}
	ts, s := serve(t, scripted.New(sc, scripted.Options{}), sidecar.Options{})
	return ts.URL, s, func(method, path string, body any) (int, []byte) {
		t.Helper()
		b := ""
		if body != nil {
			raw, err := wire.Marshal(body)
			if err != nil {
				t.Fatal(err)
			}
			b = string(raw)
		}
		return do(t, ts, method, path, b, nil)
	}
}

// quiesced runs Quiesce within d in the background.
func quiesced(s *sidecar.Server, d time.Duration) <-chan [2]any {
	out := make(chan [2]any, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), d)
		defer cancel()
		live, err := s.Quiesce(ctx)
		out <- [2]any{live, err}
	}()
	return out
}

// awaitDraining waits (bounded) until health answers the stop.
func awaitDraining(t *testing.T, do func(string, string, any) (int, []byte)) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if status, _ := do(http.MethodGet, wire.PathHealth, nil); status == http.StatusServiceUnavailable {
			return
		}
	}
	t.Fatal("health never answered 503 after Quiesce began")
}

// A graceful stop (Quiesce) refuses new work — creates, new turns,
// dispatches — with the retryable 503 unavailable, and health answers it
// too, while a live turn goes on and its client reads it to its end;
// Quiesce then returns with nothing live. Issue 14 (graceful shutdown);
// RES-05: work the server runs is not cut short by a stop.
func TestQuiesceLetsALiveTurnFinishAndRefusesNewWork(t *testing.T) {
	url, s, do := drainServer(t)
	env, err := newRemote(t, url).Create(context.Background(), createInput(""))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var events []contract.EnvironmentEvent
	var result <-chan [2]any
	for ev, err := range env.Stream(ctx, &contract.TurnInput{Prompt: ptr("drain"), TurnID: ptr("turn-live-at-stop")}) {
		if err != nil {
			t.Fatalf("the live turn failed during the stop: %v", err)
		}
		events = append(events, ev)
		if result != nil || deltas(events) == "" {
			continue
		}
		// The turn is live: stop now, and check the refusals while it runs.
		result = quiesced(s, 30*time.Second)
		awaitDraining(t, do)
		for _, c := range []struct {
			name, method, path string
			body               any
		}{
			{"create", http.MethodPost, wire.PathEnvironments, createInput("")},
			{"new turn", http.MethodPost, "/v1/environments/" + env.ID() + "/turns", wire.TurnRequest{TurnID: "turn-after-stop", Input: contract.TurnInput{Prompt: ptr("drain")}}},
			{"dispatch", http.MethodPost, "/v1/environments/" + env.ID() + "/dispatch", contract.TurnInput{Prompt: ptr("drain"), Detach: ptr(true)}},
		} {
			status, body := do(c.method, c.path, c.body)
			wantError(t, status, body, http.StatusServiceUnavailable, wire.CodeUnavailable, nil)
			if !strings.Contains(string(body), "shutting down") {
				t.Errorf("%s during the stop: %s does not say the server is shutting down", c.name, body)
			}
		}
		if status, body := do(http.MethodGet, "/v1/environments/"+env.ID(), nil); status != http.StatusOK {
			t.Errorf("reading the environment during the stop: %d %s, want 200", status, body)
		}
	}
	if got := deltas(events); got != "first|last" {
		t.Fatalf("the live turn said %q, want %q: it did not finish", got, "first|last")
	}
	select {
	case r := <-result:
		if r[0].(int) != 0 || r[1] != nil {
			t.Fatalf("Quiesce = %v, %v after the turn ended; want 0, nil", r[0], r[1])
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Quiesce did not return after the live turn ended")
	}
}

// A dispatched (retained) run is live work too: Quiesce waits for it to
// end, and the provider then holds its result. RES-05, FD-08.
func TestQuiesceWaitsForADispatchedRun(t *testing.T) {
	url, s, _ := drainServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	env, err := newRemote(t, url).Create(ctx, createInput(""))
	if err != nil {
		t.Fatal(err)
	}
	ref, err := env.(contract.Dispatcher).Dispatch(ctx, &contract.TurnInput{Prompt: ptr("drain"), Detach: ptr(true), TurnID: ptr("turn-dispatched")})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	r := <-quiesced(s, 30*time.Second)
	if r[0].(int) != 0 || r[1] != nil {
		t.Fatalf("Quiesce = %v, %v; want 0, nil once the dispatched run ended", r[0], r[1])
	}
	if took := time.Since(start); took < time.Second {
		t.Errorf("Quiesce returned after %v, before the 1.5 s run could end", took)
	}
	sess, err := env.(contract.SessionOpener).Session(ctx, ref.ID, ref.ControlRef)
	if err != nil {
		t.Fatal(err)
	}
	st, known, err := sess.Status(ctx)
	if err != nil || !known || !st.Terminal() {
		t.Fatalf("after Quiesce the dispatched run reads %q (known %v, %v), want ended", st, known, err)
	}
	res, err := sess.Result(ctx)
	if err != nil || res == nil || !strings.Contains(res.Text, "last") {
		t.Fatalf("the dispatched run's result after the stop: %+v, %v", res, err)
	}
}

// Past its deadline Quiesce reports the work still live and cancels
// nothing: the turn is still running when it returns, so no client is
// told it was cancelled.
func TestQuiescePastItsDeadlineLeavesLiveWork(t *testing.T) {
	url, s, do := drainServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	env, err := newRemote(t, url).Create(ctx, createInput(""))
	if err != nil {
		t.Fatal(err)
	}
	first := make(chan struct{})
	go func() {
		for ev, err := range env.Stream(ctx, &contract.TurnInput{Prompt: ptr("live"), TurnID: ptr("turn-outlives-grace")}) {
			if err != nil {
				return
			}
			if deltas([]contract.EnvironmentEvent{ev}) != "" {
				close(first)
				<-ctx.Done()
				return
			}
		}
	}()
	select {
	case <-first:
	case <-ctx.Done():
		t.Fatal("the live turn never started")
	}
	r := <-quiesced(s, 500*time.Millisecond)
	// The turn, and its stream still being read.
	if r[0].(int) != 2 || !errors.Is(r[1].(error), context.DeadlineExceeded) {
		t.Fatalf("Quiesce = %v, %v; want the live turn and its stream, and the deadline", r[0], r[1])
	}
	// The turn was not cancelled: its cancel is still to come, and it
	// is accepted as the first.
	status, body := do(http.MethodPost, "/v1/environments/"+env.ID()+"/turns/turn-outlives-grace/cancel", wire.CancelRequest{OperationID: "op-after-grace"})
	if status != http.StatusOK || !strings.Contains(string(body), `"accepted"`) {
		t.Fatalf("cancelling the turn after Quiesce: %d %s; want it accepted (the turn still live)", status, body)
	}
}

// heldCreate is a provider whose creates hold until their context ends:
// a create in flight when its server stops.
type heldCreate struct {
	*scripted.Provider
	started chan struct{}
	once    sync.Once
	creates atomic.Int32
}

func (p *heldCreate) Create(ctx context.Context, in *contract.CreateInput) (contract.Environment, error) {
	p.creates.Add(1)
	p.once.Do(func() { close(p.started) })
	<-ctx.Done()
	return nil, context.Cause(ctx)
}

// countingCreates counts the environments a provider makes.
type countingCreates struct {
	*scripted.Provider
	creates atomic.Int32
}

func (p *countingCreates) Create(ctx context.Context, in *contract.CreateInput) (contract.Environment, error) {
	p.creates.Add(1)
	return p.Provider.Create(ctx, in)
}

// A keyed create still running when a stop's grace ends is left, not
// cancelled (Abandon): its attempt stays unrecorded, so its retry on a
// restarted server sharing the store is answered create_in_doubt and
// makes no second environment — where cancelling it would record it
// failed and run it again. The process exit is the store closing under
// the abandoned create. ENV-10; issue 14 (graceful shutdown).
func TestAbandonLeavesACreateInFlightInDoubt(t *testing.T) {
	forEachStore(t, func(t *testing.T, open func(t *testing.T) store.Store) {
		sc, err := scripted.ParseScript([]byte(drainScript))
		if err != nil {
			t.Fatal(err)
		}
		first := &heldCreate{Provider: scripted.New(sc, scripted.Options{}), started: make(chan struct{})}
		st := open(t)
		s1, err := sidecar.New(first, sidecar.Options{Token: testToken, Store: st, CreateTimeout: 30 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		ts1 := httptest.NewServer(s1)
		body := `{"profile":{"name":"t"},"name":"env","idempotencyKey":"k-in-flight"}`
		answered := make(chan int, 1)
		go func() {
			req, _ := http.NewRequest(http.MethodPost, ts1.URL+wire.PathEnvironments, strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+testToken)
			req.Header.Set("Content-Type", "application/json")
			resp, err := ts1.Client().Do(req)
			if err != nil {
				answered <- 0 // the connection closed: no answer
				return
			}
			resp.Body.Close()
			answered <- resp.StatusCode
		}()
		select {
		case <-first.started:
		case <-time.After(30 * time.Second):
			t.Fatal("the create never reached the provider")
		}
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		live, err := s1.Quiesce(ctx)
		cancel()
		if live < 1 || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Quiesce with a create in flight = %d, %v; want it live at the deadline", live, err)
		}
		ts1.CloseClientConnections()
		ts1.Listener.Close()
		s1.Abandon()
		if code := <-answered; code != 0 {
			t.Fatalf("the client of the abandoned create was answered %d; want the connection closed", code)
		}
		// The process exits: its store goes with it, the create unrecorded.
		st.Close()
		t.Cleanup(func() { s1.Close(); ts1.Close() })

		second := &countingCreates{Provider: scripted.New(sc, scripted.Options{})}
		ts2, _ := serve(t, second, sidecar.Options{Store: open(t), CreateTimeout: 30 * time.Second})
		status, out := do(t, ts2, http.MethodPost, wire.PathEnvironments, body, nil)
		wantError(t, status, out, http.StatusConflict, wire.CodeCreateInDoubt, nil)
		if n := second.creates.Load(); n != 0 {
			t.Fatalf("the restarted server made %d environments for the retried key; want none (in doubt)", n)
		}
		if n := first.creates.Load(); n != 1 {
			t.Fatalf("the first server's provider was asked %d times to create; want 1", n)
		}
	})
}
