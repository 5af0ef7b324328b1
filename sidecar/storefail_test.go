package sidecar_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/contract/wire"
	"github.com/agentrt/agentrt/internal/storefault"
	"github.com/agentrt/agentrt/sidecar"
	"github.com/agentrt/agentrt/store"
)

// creationCounter counts the environments a provider really made and
// destroyed, and calls during (when set) inside each create.
type creationCounter struct {
	contract.Provider
	made, destroyed atomic.Int64
	during          atomic.Pointer[func()]
}

func (c *creationCounter) Create(ctx context.Context, in *contract.CreateInput) (contract.Environment, error) {
	env, err := c.Provider.Create(ctx, in)
	if err != nil {
		return nil, err
	}
	c.made.Add(1)
	if f := c.during.Load(); f != nil {
		(*f)()
	}
	return &countedEnv{Environment: env, c: c}, nil
}

type countedEnv struct {
	contract.Environment
	c *creationCounter
}

func (e *countedEnv) Destroy(ctx context.Context) error {
	e.c.destroyed.Add(1)
	return e.Environment.Destroy(ctx)
}

// doWithin is do with a client deadline: a hung request fails the test
// instead of hanging it.
func doWithin(t *testing.T, ts *httptest.Server, within time.Duration, body string) (int, []byte, time.Duration) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, ts.URL+wire.PathEnvironments, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("Content-Type", "application/json")
	client := &http.Client{Timeout: within}
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("the keyed create did not answer within %v: %v", within, err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, out, time.Since(start)
}

// ENV-10, ENV-12 with a store that stops answering: a keyed create whose
// store hangs (PostgreSQL black-holed) or refuses writes (SQLite locked
// elsewhere) — before anything was made, or after the environment was
// made and before its outcome was recorded — is answered in bounded time
// with 503 unavailable, never a hung request. Once the store answers, the
// retry with the same key never makes a second environment: a create
// that made nothing makes its one environment and is replayed from then
// on; one whose outcome could not be recorded destroyed what it made and
// is answered create_in_doubt.
func TestKeyedCreateWhenStoreStopsAnswering(t *testing.T) {
	const call = time.Second
	// The bound is the store call's, with slack for a loaded machine;
	// the default create timeout is five minutes.
	const bound = 3*call + 15*time.Second
	stores := storefault.Stores(storefault.BlackHole, storefault.Locked)
	for _, sk := range stores {
		t.Run(string(sk.Fault)+"/before-the-create", func(t *testing.T) {
			st, fail, restore := sk.Open(t)
			p := &creationCounter{Provider: newScripted(t)}
			ts, _ := serve(t, p, sidecar.Options{Store: st, CallTimeout: call})
			const body = `{"profile":{"name":"t"},"name":"env","idempotencyKey":"store-hangs-before"}`
			fail()
			status, out, took := doWithin(t, ts, bound+time.Minute, body)
			restore()
			wantError(t, status, out, http.StatusServiceUnavailable, wire.CodeUnavailable, nil)
			if took > bound {
				t.Errorf("answered after %v; want within %v", took, bound)
			}
			if n := p.made.Load(); n != 0 {
				t.Fatalf("%d environments made while the store did not answer", n)
			}
			status, out, _ = doWithin(t, ts, bound+time.Minute, body)
			if status != http.StatusCreated {
				t.Fatalf("retry once the store answers: %d %s; want 201", status, out)
			}
			first, err := wire.ParseCreateResult(out)
			if err != nil {
				t.Fatal(err)
			}
			status, out, _ = doWithin(t, ts, bound+time.Minute, body)
			replay, err := wire.ParseCreateResult(out)
			if status != http.StatusOK || err != nil || replay.Creation != contract.CreationReplayed || replay.Environment.ID != first.Environment.ID {
				t.Fatalf("second retry: %d %s (%v); want %s replayed", status, out, err, first.Environment.ID)
			}
			if n := p.made.Load(); n != 1 {
				t.Errorf("%d environments made; want exactly one", n)
			}
		})
		t.Run(string(sk.Fault)+"/before-its-outcome", func(t *testing.T) {
			st, fail, restore := sk.Open(t)
			p := &creationCounter{Provider: newScripted(t)}
			p.during.Store(&fail)
			ts, _ := serve(t, p, sidecar.Options{Store: st, CallTimeout: call})
			const body = `{"profile":{"name":"t"},"name":"env","idempotencyKey":"store-hangs-after"}`
			status, out, took := doWithin(t, ts, bound+time.Minute, body)
			p.during.Store(nil)
			restore()
			wantError(t, status, out, http.StatusServiceUnavailable, wire.CodeUnavailable, nil)
			if took > bound {
				t.Errorf("answered after %v; want within %v", took, bound)
			}
			if made, gone := p.made.Load(), p.destroyed.Load(); made != 1 || gone != 1 {
				t.Fatalf("made %d, destroyed %d; want the one environment whose outcome went unrecorded destroyed", made, gone)
			}
			status, out, _ = doWithin(t, ts, bound+time.Minute, body)
			wantError(t, status, out, http.StatusConflict, wire.CodeCreateInDoubt, nil)
			if n := p.made.Load(); n != 1 {
				t.Errorf("%d environments made; the retry must not make a second", n)
			}
		})
	}
}

// lostOutcomeAnswer is a store whose first claim of a create outcome
// lands and then answers an error, as a commit whose reply the network
// lost.
type lostOutcomeAnswer struct {
	store.Store
	lost atomic.Bool
}

func (l *lostOutcomeAnswer) ClaimIdempotency(ctx context.Context, rec store.Idempotency) (store.Idempotency, bool, error) {
	got, created, err := l.Store.ClaimIdempotency(ctx, rec)
	if err == nil && strings.HasSuffix(rec.Scope, ".create.outcome") && l.lost.CompareAndSwap(false, true) {
		return store.Idempotency{}, false, errors.New("injected: connection reset after the commit")
	}
	return got, created, err
}

// ENV-12: a keyed create whose outcome claim landed though its answer was
// lost asks the store again, finds its own outcome and answers created;
// the environment it made is not destroyed, and the retry with the same
// key replays it live. (Undoing on the lost answer destroyed it, answered
// 503, and handed the retry a dead environment.)
func TestKeyedCreateWhoseOutcomeAnswerWasLost(t *testing.T) {
	forEachStore(t, func(t *testing.T, open func(t *testing.T) store.Store) {
		st := &lostOutcomeAnswer{Store: open(t)}
		p := &creationCounter{Provider: newScripted(t)}
		ts, _ := serve(t, p, sidecar.Options{Store: st, CallTimeout: time.Second})
		const body = `{"profile":{"name":"t"},"name":"env","idempotencyKey":"answer-lost"}`
		status, out, _ := doWithin(t, ts, time.Minute, body)
		if status != http.StatusCreated {
			t.Fatalf("create: %d %s; want 201 (its outcome was recorded)", status, out)
		}
		status, out, _ = doWithin(t, ts, time.Minute, body)
		replay, err := wire.ParseCreateResult(out)
		if status != http.StatusOK || err != nil || replay.Creation != contract.CreationReplayed {
			t.Fatalf("retry: %d %s (%v); want the environment replayed", status, out, err)
		}
		if replay.Environment.Status == contract.EnvironmentUnknown {
			t.Errorf("the replayed environment is %s: the server let go of it", replay.Environment.Status)
		}
		if made, gone := p.made.Load(), p.destroyed.Load(); made != 1 || gone != 0 {
			t.Errorf("made %d, destroyed %d; want the one environment, live", made, gone)
		}
	})
}
