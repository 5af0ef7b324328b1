package sidecar_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/contract/wire"
	"github.com/agentrt/agentrt/sidecar"
	"github.com/agentrt/agentrt/store/sqlite"
)

const createBody = `{"profile":{"name":"t"},"name":"env","idempotencyKey":"k1"}`

func TestAuthRefusesWithoutDetail(t *testing.T) {
	ts, _ := serve(t, newScripted(t), sidecar.Options{})
	for name, auth := range map[string]string{"missing": "", "wrong": "Bearer nope", "wrong scheme": "Basic " + testToken, "prefix": "Bearer " + testToken[:5]} {
		status, body := do(t, ts, http.MethodGet, wire.PathCapabilities, "", map[string]string{"Authorization": auth})
		if status != http.StatusUnauthorized {
			t.Errorf("%s token: status %d, want 401", name, status)
		}
		if string(body) != `{"error":{"code":"unauthorized","message":"unauthorized"}}` {
			t.Errorf("%s token: body %s says more than unauthorized", name, body)
		}
		if strings.Contains(string(body), testToken) {
			t.Errorf("%s token: the answer carries the token", name)
		}
	}
	if status, body := do(t, ts, http.MethodGet, wire.PathCapabilities, "", nil); status != http.StatusOK {
		t.Fatalf("the right token: %d %s", status, body)
	}
	// The scheme is case-insensitive (RFC 9110 §11.1), as agentrt mcp's
	// bearer check already takes it.
	for _, scheme := range []string{"bearer", "BEARER"} {
		if status, body := do(t, ts, http.MethodGet, wire.PathCapabilities, "", map[string]string{"Authorization": scheme + " " + testToken}); status != http.StatusOK {
			t.Errorf("the right token under scheme %q: %d %s", scheme, status, body)
		}
	}
	if status, body := do(t, ts, http.MethodGet, wire.PathHealth, "", map[string]string{"Authorization": ""}); status != http.StatusOK || string(body) != `{"status":"ok"}` {
		t.Fatalf("healthz: %d %s", status, body)
	}
}

func TestBadBodiesRefusedClearly(t *testing.T) {
	ts, _ := serve(t, newScripted(t), sidecar.Options{})
	huge := `{"profile":{"name":"t"},"name":"` + strings.Repeat("x", wire.MaxProfileBodyBytes) + `"}`
	status, body := do(t, ts, http.MethodPost, wire.PathEnvironments, huge, nil)
	wantError(t, status, body, http.StatusRequestEntityTooLarge, wire.CodeTooLarge, nil)

	status, body = do(t, ts, http.MethodPost, wire.PathEnvironments, `{"profile":`, nil)
	wantError(t, status, body, http.StatusBadRequest, wire.CodeInvalidRequest, nil)

	status, body = do(t, ts, http.MethodPost, wire.PathEnvironments, `{"profile":{"name":"t"},"nmae":"x"}`, nil)
	wantError(t, status, body, http.StatusBadRequest, wire.CodeInvalidRequest, ptr(""))

	status, body = do(t, ts, http.MethodPost, wire.PathEnvironments, `{"profile":{"name":"t"},"name":7}`, nil)
	wantError(t, status, body, http.StatusBadRequest, wire.CodeInvalidRequest, ptr("/name"))

	status, body = do(t, ts, http.MethodPost, wire.PathEnvironments, createBody, map[string]string{"Content-Type": "text/plain"})
	wantError(t, status, body, http.StatusUnsupportedMediaType, wire.CodeUnsupportedMedia, nil)

	status, body = do(t, ts, http.MethodPost, "/v1/environments/none/turns", `{"turnId":"t","input":{"prompt":"x","extra":1}}`, nil)
	wantError(t, status, body, http.StatusBadRequest, wire.CodeInvalidRequest, ptr("/input"))

	status, body = do(t, ts, http.MethodPost, "/v1/environments/none/turns", `{"turnId":"t","input":{}}`, nil)
	wantError(t, status, body, http.StatusNotFound, wire.CodeNotFound, nil)

	status, body = do(t, ts, http.MethodPut, wire.PathEnvironments, createBody, nil)
	wantError(t, status, body, http.StatusMethodNotAllowed, wire.CodeMethodNotAllowed, nil)
}

func createResult(t *testing.T, status int, body []byte) *wire.CreateResult {
	t.Helper()
	if status/100 != 2 {
		t.Fatalf("create: %d %s", status, body)
	}
	res, err := wire.ParseCreateResult(body)
	if err != nil {
		t.Fatalf("create result %s: %v", body, err)
	}
	return res
}

func TestKeyedCreateReplayAndConflict(t *testing.T) {
	p := newScripted(t)
	ts, _ := serve(t, p, sidecar.Options{})
	status, body := do(t, ts, http.MethodPost, wire.PathEnvironments, createBody, nil)
	first := createResult(t, status, body)
	if status != http.StatusCreated || first.Creation != contract.CreationCreated || first.Environment.Status != contract.EnvironmentRunning {
		t.Fatalf("first create: %d %s", status, body)
	}
	// The same input with its members in another order is the same create.
	reordered := `{"idempotencyKey":"k1","name":"env","profile":{"name":"t"}}`
	status, body = do(t, ts, http.MethodPost, wire.PathEnvironments, reordered, nil)
	again := createResult(t, status, body)
	if status != http.StatusOK || again.Creation != contract.CreationReplayed || again.Environment.ID != first.Environment.ID {
		t.Fatalf("replay: %d %s, want 200 replayed %s", status, body, first.Environment.ID)
	}
	status, body = do(t, ts, http.MethodPost, wire.PathEnvironments, strings.Replace(createBody, `"env"`, `"other"`, 1), nil)
	wantError(t, status, body, http.StatusConflict, wire.CodeIdempotencyConflict, nil)
	if n := p.Creates(); n != 1 {
		t.Fatalf("the provider created %d environments, want 1", n)
	}
}

// ENV-12: a server restarted on the same store replays a retried create
// instead of making a second environment, and still refuses a changed
// input under the key before any create.
func TestKeyedCreateReplaysAcrossRestart(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "serve.db")
	st1, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p1 := newScripted(t)
	ts1, s1 := serve(t, p1, sidecar.Options{Store: st1})
	first := mustCreate(t, ts1, http.MethodPost, wire.PathEnvironments, createBody, nil)
	s1.Close()
	ts1.Close()
	if err := st1.Close(); err != nil {
		t.Fatal(err)
	}

	st2, err := sqlite.Open(ctx, path, sqlite.Options{MustExist: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st2.Close()
	p2 := newScripted(t)
	ts2, _ := serve(t, p2, sidecar.Options{Store: st2})
	status, body := do(t, ts2, http.MethodPost, wire.PathEnvironments, createBody, nil)
	again := createResult(t, status, body)
	if again.Creation != contract.CreationReplayed || again.Environment.ID != first.Environment.ID {
		t.Fatalf("retry after restart: %d %s, want replayed %s", status, body, first.Environment.ID)
	}
	status, body = do(t, ts2, http.MethodPost, wire.PathEnvironments, strings.Replace(createBody, `"env"`, `"other"`, 1), nil)
	wantError(t, status, body, http.StatusConflict, wire.CodeIdempotencyConflict, nil)
	if n := p2.Creates(); n != 0 {
		t.Fatalf("the restarted server's provider created %d environments, want 0", n)
	}
}

// A client that drops a turn's stream mid-turn resumes it with
// Last-Event-ID and receives exactly the events after that one.
func TestStreamResumesAfterLastEventID(t *testing.T) {
	ts, _ := serve(t, newScripted(t), sidecar.Options{})
	env := mustCreate(t, ts, http.MethodPost, wire.PathEnvironments, `{"profile":{"name":"t"}}`, nil).Environment
	turns := "/v1/environments/" + env.ID + "/turns"

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, ts.URL+turns, strings.NewReader(`{"turnId":"t1","input":{"prompt":"slow"}}`))
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != wire.ContentTypeSSE {
		t.Fatalf("turn: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	first, err := wire.NewSSEReader(bufio.NewReader(resp.Body)).Next()
	if err != nil || first.ID != "1" {
		t.Fatalf("first event: %+v, %v", first, err)
	}
	resp.Body.Close() // the client drops mid-turn

	status, body := do(t, ts, http.MethodGet, turns+"/t1/events", "", map[string]string{wire.HeaderLastEventID: "1"})
	if status != http.StatusOK {
		t.Fatalf("resume: %d %s", status, body)
	}
	events := sseEvents(t, body)
	var ids []string
	for _, ev := range events {
		if ev.Event == "" {
			ids = append(ids, ev.ID)
			if _, err := wire.ParseEnvironmentEvent(ev.Data); err != nil {
				t.Errorf("event %s: %v", ev.ID, err)
			}
		}
	}
	if len(ids) == 0 || ids[0] != "2" {
		t.Fatalf("resumed ids %v, want them to start at 2", ids)
	}
	for i, id := range ids {
		if id != strconvItoa(i+2) {
			t.Fatalf("resumed ids %v are not consecutive", ids)
		}
	}
	if last := events[len(events)-1]; last.Event != wire.EventEnd {
		t.Fatalf("the resumed stream ended with %+v, want the end event", last)
	}
	// The same turn id with the same input resumes too; with another
	// input it is a conflict.
	status, body = do(t, ts, http.MethodPost, turns, `{"turnId":"t1","input":{"prompt":"other"}}`, nil)
	wantError(t, status, body, http.StatusConflict, wire.CodeTurnConflict, ptr("/turnId"))
	status, body = do(t, ts, http.MethodPost, turns, `{"turnId":"t1","input":{"prompt":"slow"}}`, map[string]string{wire.HeaderLastEventID: ids[len(ids)-1]})
	if evs := sseEvents(t, body); status != http.StatusOK || len(evs) != 1 || evs[0].Event != wire.EventEnd {
		t.Fatalf("resume after the last event: %d %s", status, body)
	}
	status, body = do(t, ts, http.MethodGet, turns+"/t1/events", "", map[string]string{wire.HeaderLastEventID: "x"})
	wantError(t, status, body, http.StatusBadRequest, wire.CodeInvalidRequest, nil)
}

func strconvItoa(i int) string { b, _ := json.Marshal(i); return string(b) }

// Cancel is acknowledged with the contract's statuses and effects.
func TestCancelAcknowledged(t *testing.T) {
	ts, _ := serve(t, newScripted(t), sidecar.Options{})
	env := mustCreate(t, ts, http.MethodPost, wire.PathEnvironments, `{"profile":{"name":"t"}}`, nil).Environment
	turns := "/v1/environments/" + env.ID + "/turns"
	done := make(chan []byte, 1)
	go func() {
		_, body := do(t, ts, http.MethodPost, turns, `{"turnId":"live","input":{"prompt":"live"}}`, nil)
		done <- body
	}()
	ack := func(op string) *wire.CancelAcknowledgement {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for {
			status, body := do(t, ts, http.MethodPost, turns+"/live/cancel", `{"operationId":"`+op+`"}`, nil)
			if status == http.StatusNotFound && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond) // the turn is not admitted yet
				continue
			}
			a, err := wire.ParseCancelAcknowledgement(body)
			if status != http.StatusOK || err != nil {
				t.Fatalf("cancel: %d %s %v", status, body, err)
			}
			return a
		}
	}
	if a := ack("op1"); a.Status != contract.StatusAccepted || a.Effect != contract.EffectCancelRequested {
		t.Fatalf("cancel of a live turn: %+v", a)
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the cancelled turn's stream did not end")
	}
	if a := ack("op1"); a.Status != contract.StatusReplayed || a.Effect != contract.EffectCancelRequested {
		t.Fatalf("the same cancel again: %+v", a)
	}
	if a := ack("op2"); a.Status != contract.StatusAccepted || a.Effect != contract.EffectNotLive {
		t.Fatalf("a cancel of an ended turn: %+v", a)
	}
}

func TestDestroy(t *testing.T) {
	ts, _ := serve(t, newScripted(t), sidecar.Options{})
	env := mustCreate(t, ts, http.MethodPost, wire.PathEnvironments, `{"profile":{"name":"t"}}`, nil).Environment
	if status, body := do(t, ts, http.MethodDelete, "/v1/environments/"+env.ID, "", nil); status != http.StatusNoContent {
		t.Fatalf("destroy: %d %s", status, body)
	}
	status, body := do(t, ts, http.MethodGet, "/v1/environments/"+env.ID, "", nil)
	if status == http.StatusOK {
		doc, err := wire.ParseEnvironment(body)
		if err != nil || doc.Status == contract.EnvironmentRunning {
			t.Fatalf("a destroyed environment reads %s", body)
		}
	} else {
		wantError(t, status, body, http.StatusNotFound, wire.CodeNotFound, nil)
	}
}

func mustCreate(t *testing.T, ts *httptest.Server, method, path, body string, header map[string]string) *wire.CreateResult {
	t.Helper()
	status, out := do(t, ts, method, path, body, header)
	return createResult(t, status, out)
}

// A Last-Event-ID past what a live turn produced is refused (410
// resume_gone), and the server goes on serving: it used to slice past
// the turn's events while holding its lock, panic, and deadlock the turn
// and then every new turn on the server. A resuming POST of a turn the
// server does not hold (forgotten, or another incarnation's) is refused
// too and runs nothing: that turn is in doubt, never re-run.
func TestResumePastTheTurnsHeadIsRefused(t *testing.T) {
	p := newScripted(t)
	ts, _ := serve(t, p, sidecar.Options{})
	env := mustCreate(t, ts, http.MethodPost, wire.PathEnvironments, `{"profile":{"name":"t"}}`, nil).Environment
	turns := "/v1/environments/" + env.ID + "/turns"

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, ts.URL+turns, strings.NewReader(`{"turnId":"live","input":{"prompt":"live"}}`))
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if first, err := wire.NewSSEReader(bufio.NewReader(resp.Body)).Next(); err != nil || first.ID != "1" {
		t.Fatalf("first event: %+v, %v", first, err)
	}
	for _, tc := range []struct{ method, path, body string }{
		{http.MethodGet, turns + "/live/events", ""},
		{http.MethodPost, turns, `{"turnId":"live","input":{"prompt":"live"}}`},
	} {
		status, body := do(t, ts, tc.method, tc.path, tc.body, map[string]string{wire.HeaderLastEventID: "7"})
		wantError(t, status, body, http.StatusGone, wire.CodeResumeGone, nil)
	}
	before := p.Turns()
	status, body := do(t, ts, http.MethodPost, turns, `{"turnId":"forgotten","input":{"prompt":"hi"}}`, map[string]string{wire.HeaderLastEventID: "3"})
	wantError(t, status, body, http.StatusGone, wire.CodeResumeGone, nil)
	if n := p.Turns() - before; n != 0 {
		t.Errorf("a resuming POST of an unknown turn ran %d turns; want none", n)
	}
	// The server still serves new turns.
	status, body = do(t, ts, http.MethodPost, turns, `{"turnId":"next","input":{"prompt":"hi"}}`, nil)
	if evs := sseEvents(t, body); status != http.StatusOK || evs[len(evs)-1].Event != wire.EventEnd {
		t.Fatalf("a new turn after the refused resumes: %d %s", status, body)
	}
}

// A turn remembers a bounded number of cancel operation ids: past
// MaxTurnCancelOperations a new one is refused with a path, while a
// retried one is still answered (replayed).
func TestCancelOperationsPerTurnAreBounded(t *testing.T) {
	ts, _ := serve(t, newScripted(t), sidecar.Options{})
	env := mustCreate(t, ts, http.MethodPost, wire.PathEnvironments, `{"profile":{"name":"t"}}`, nil).Environment
	turns := "/v1/environments/" + env.ID + "/turns"
	if status, body := do(t, ts, http.MethodPost, turns, `{"turnId":"t1","input":{"prompt":"hi"}}`, nil); status != http.StatusOK {
		t.Fatalf("turn: %d %s", status, body)
	}
	for i := range sidecar.MaxTurnCancelOperations {
		op := "op-" + strconvItoa(i)
		if status, body := do(t, ts, http.MethodPost, turns+"/t1/cancel", `{"operationId":"`+op+`"}`, nil); status != http.StatusOK {
			t.Fatalf("cancel %s: %d %s", op, status, body)
		}
	}
	status, body := do(t, ts, http.MethodPost, turns+"/t1/cancel", `{"operationId":"one-too-many"}`, nil)
	wantError(t, status, body, http.StatusBadRequest, wire.CodeInvalidRequest, ptr("/operationId"))
	status, body = do(t, ts, http.MethodPost, turns+"/t1/cancel", `{"operationId":"op-0"}`, nil)
	if ack, err := wire.ParseCancelAcknowledgement(body); status != http.StatusOK || err != nil || ack.Status != contract.StatusReplayed {
		t.Errorf("retrying the first operation: %d %s (%v); want it replayed", status, body, err)
	}
}
