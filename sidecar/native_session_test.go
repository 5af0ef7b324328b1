package sidecar_test

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/contract/wire"
	"github.com/agentrt/agentrt/sidecar"
)

// nativeSessionPath is the private route of env's turn.
func nativeSessionPath(env, turn string) string {
	return "/v1/environments/" + env + "/turns/" + turn + "/native-session"
}

// scriptedNative is the native session the scripted provider observes
// for the n-th turn of an environment: the session it runs the turn in
// (providers/scripted names it <environment>-session-<n>).
func scriptedNative(env string, n int) *contract.NativeSessionObserved {
	return &contract.NativeSessionObserved{Provider: "scripted", NativeSessionID: env + "-session-" + strconvItoa(n)}
}

// readNative reads a turn's native session answer, failing the test on
// anything but 200 and a strict TurnNativeSession.
func readNative(t *testing.T, ts *httptest.Server, env, turn string) *wire.TurnNativeSession {
	t.Helper()
	status, body := do(t, ts, http.MethodGet, nativeSessionPath(env, turn), "", nil)
	if status != http.StatusOK {
		t.Fatalf("native session: %d %s", status, body)
	}
	res, err := wire.ParseTurnNativeSession(body)
	if err != nil {
		t.Fatalf("native session %s: %v", body, err)
	}
	return res
}

// NSO-02/NSO-03 on the server: the turn's owner reads the native session
// the served provider observed from the private route once the turn
// ended, while the turn's public SSE stream never carries the
// observation nor the id, and the server's log (at debug level) never
// names it.
func TestNativeSessionOfAnEndedTurnNSO02(t *testing.T) {
	var logs bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	ts, _ := serve(t, newScripted(t), sidecar.Options{Logger: logger})
	env := mustCreate(t, ts, http.MethodPost, wire.PathEnvironments, `{"profile":{"name":"t"}}`, nil).Environment
	want := scriptedNative(env.ID, 1)

	status, sse := do(t, ts, http.MethodPost, "/v1/environments/"+env.ID+"/turns", `{"turnId":"t1","input":{"prompt":"hi"}}`, nil)
	if status != http.StatusOK {
		t.Fatalf("turn: %d %s", status, sse)
	}
	events := sseEvents(t, sse)
	if len(events) < 2 || events[len(events)-1].Event != wire.EventEnd {
		t.Fatalf("the turn's stream did not end with its end event: %s", sse)
	}
	for _, ev := range events {
		if ev.Event != "" {
			continue
		}
		e, err := wire.ParseEnvironmentEvent(ev.Data)
		if err != nil {
			t.Fatalf("event %s: %v", ev.ID, err)
		}
		if contract.IsPrivateEnvironmentEvent(*e) {
			t.Errorf("the public stream carries the private observation (event %s)", ev.ID)
		}
	}
	if bytes.Contains(sse, []byte(want.NativeSessionID)) {
		t.Errorf("the public stream names the native session %q", want.NativeSessionID)
	}

	for range 2 { // a read has no effect: the same answer again
		got := readNative(t, ts, env.ID, "t1")
		if d := cmp.Diff(&wire.TurnNativeSession{TurnID: "t1", Observation: want}, got); d != "" {
			t.Errorf("native session (-want +got):\n%s", d)
		}
	}
	if strings.Contains(logs.String(), want.NativeSessionID) {
		t.Errorf("the server's log names the native session:\n%s", logs.String())
	}
	if !strings.Contains(logs.String(), `"route":"`+wire.RouteTurnNativeSession+`"`) {
		t.Errorf("the server did not log the request's route:\n%s", logs.String())
	}
}

// NSO-03: the route is the owner's, behind the bearer token like every
// route; a missing or wrong token is 401 without detail — never the id.
func TestNativeSessionRefusesWithoutTheTokenNSO03(t *testing.T) {
	ts, _ := serve(t, newScripted(t), sidecar.Options{})
	env := mustCreate(t, ts, http.MethodPost, wire.PathEnvironments, `{"profile":{"name":"t"}}`, nil).Environment
	if status, body := do(t, ts, http.MethodPost, "/v1/environments/"+env.ID+"/turns", `{"turnId":"t1","input":{"prompt":"hi"}}`, nil); status != http.StatusOK {
		t.Fatalf("turn: %d %s", status, body)
	}
	for name, auth := range map[string]string{"missing": "", "wrong": "Bearer nope", "wrong scheme": "Basic " + testToken} {
		status, body := do(t, ts, http.MethodGet, nativeSessionPath(env.ID, "t1"), "", map[string]string{"Authorization": auth})
		if status != http.StatusUnauthorized || string(body) != `{"error":{"code":"unauthorized","message":"unauthorized"}}` {
			t.Errorf("%s token: %d %s, want 401 unauthorized and nothing more", name, status, body)
		}
	}
	if got := readNative(t, ts, env.ID, "t1"); got.Observation == nil {
		t.Fatal("with the token, the ended turn's native session is unknown")
	}
	status, body := do(t, ts, http.MethodPost, nativeSessionPath(env.ID, "t1"), `{}`, nil)
	wantError(t, status, body, http.StatusMethodNotAllowed, wire.CodeMethodNotAllowed, nil)
}

// An unknown environment or turn is 404 not_found, typed on the wire.
func TestNativeSessionOfAnUnknownTurn(t *testing.T) {
	ts, _ := serve(t, newScripted(t), sidecar.Options{})
	env := mustCreate(t, ts, http.MethodPost, wire.PathEnvironments, `{"profile":{"name":"t"}}`, nil).Environment
	for name, path := range map[string]string{
		"environment": nativeSessionPath("no-such-env", "t1"),
		"turn":        nativeSessionPath(env.ID, "no-such-turn"),
	} {
		status, body := do(t, ts, http.MethodGet, path, "", nil)
		wantError(t, status, body, http.StatusNotFound, wire.CodeNotFound, nil)
		if t.Failed() {
			t.Fatalf("unknown %s", name)
		}
	}
}

// A live turn's native session is not settled: the route waits for the
// turn to end (ResultWait), then answers 409 turn_not_ended. A turn that
// ends early — cancelled here — still hands over what it observed, and a
// read waiting when the turn ends is answered at once.
func TestNativeSessionOfALiveTurnNSO02(t *testing.T) {
	ts, _ := serve(t, newScripted(t), sidecar.Options{ResultWait: 200 * time.Millisecond})
	env := mustCreate(t, ts, http.MethodPost, wire.PathEnvironments, `{"profile":{"name":"t"}}`, nil).Environment
	turns := "/v1/environments/" + env.ID + "/turns"
	done := make(chan []byte, 1)
	go func() {
		_, body := do(t, ts, http.MethodPost, turns, `{"turnId":"live","input":{"prompt":"live"}}`, nil)
		done <- body
	}()
	deadline := time.Now().Add(30 * time.Second)
	for {
		status, body := do(t, ts, http.MethodGet, nativeSessionPath(env.ID, "live"), "", nil)
		if status == http.StatusNotFound && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond) // the turn is not admitted yet
			continue
		}
		wantError(t, status, body, http.StatusConflict, wire.CodeTurnNotEnded, nil)
		if bytes.Contains(body, []byte(env.ID+"-session")) {
			t.Errorf("the refusal names the native session: %s", body)
		}
		break
	}
	if t.Failed() {
		t.FailNow()
	}
	if status, body := do(t, ts, http.MethodPost, turns+"/live/cancel", `{"operationId":"op1"}`, nil); status != http.StatusOK {
		t.Fatalf("cancel: %d %s", status, body)
	}
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the cancelled turn's stream did not end")
	}
	if d := cmp.Diff(scriptedNative(env.ID, 1), readNative(t, ts, env.ID, "live").Observation); d != "" {
		t.Errorf("the cancelled turn's native session (-want +got):\n%s", d)
	}

	// A read waiting on a live turn is answered when the turn ends.
	ts2, _ := serve(t, newScripted(t), sidecar.Options{ResultWait: time.Minute})
	env2 := mustCreate(t, ts2, http.MethodPost, wire.PathEnvironments, `{"profile":{"name":"t"}}`, nil).Environment
	go func() {
		_, body := do(t, ts2, http.MethodPost, "/v1/environments/"+env2.ID+"/turns", `{"turnId":"slow","input":{"prompt":"slow"}}`, nil)
		done <- body
	}()
	for {
		status, body := do(t, ts2, http.MethodGet, nativeSessionPath(env2.ID, "slow"), "", nil)
		if status == http.StatusNotFound && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
			continue
		}
		res, err := wire.ParseTurnNativeSession(body)
		if status != http.StatusOK || err != nil {
			t.Fatalf("a read waiting on the slow turn: %d %s (%v)", status, body, err)
		}
		if d := cmp.Diff(scriptedNative(env2.ID, 1), res.Observation); d != "" {
			t.Errorf("the slow turn's native session (-want +got):\n%s", d)
		}
		break
	}
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the slow turn's stream did not end")
	}
}

// publicOnly serves a provider's environments through their public
// Stream alone: an environment that observes no native session.
type publicOnly struct{ contract.Provider }

func (p publicOnly) Create(ctx context.Context, in *contract.CreateInput) (contract.Environment, error) {
	env, err := p.Provider.Create(ctx, in)
	if err != nil {
		return nil, err
	}
	return struct{ contract.Environment }{env}, nil
}

// Truthful: a turn that observed no native session answers without an
// observation (unknown), never an empty id.
func TestNativeSessionUnknownWhenNoneObserved(t *testing.T) {
	ts, _ := serve(t, publicOnly{newScripted(t)}, sidecar.Options{})
	env := mustCreate(t, ts, http.MethodPost, wire.PathEnvironments, `{"profile":{"name":"t"}}`, nil).Environment
	if status, body := do(t, ts, http.MethodPost, "/v1/environments/"+env.ID+"/turns", `{"turnId":"t1","input":{"prompt":"hi"}}`, nil); status != http.StatusOK {
		t.Fatalf("turn: %d %s", status, body)
	}
	status, body := do(t, ts, http.MethodGet, nativeSessionPath(env.ID, "t1"), "", nil)
	if status != http.StatusOK || string(body) != `{"turnId":"t1"}` {
		t.Errorf("native session of a turn that observed none: %d %s, want 200 {\"turnId\":\"t1\"}", status, body)
	}
}

// BenchmarkNativeSessionRoute: one authenticated read of an ended turn's
// native session over loopback HTTP.
func BenchmarkNativeSessionRoute(b *testing.B) {
	ts, _ := serve(b, newScripted(b), sidecar.Options{})
	env := mustCreateAt(b, ts.Client(), ts.URL)
	if status, body := do(b, ts, http.MethodPost, "/v1/environments/"+env+"/turns", `{"turnId":"t1","input":{"prompt":"hi"}}`, nil); status != http.StatusOK {
		b.Fatalf("turn: %d %s", status, body)
	}
	path := nativeSessionPath(env, "t1")
	b.ReportAllocs()
	for b.Loop() {
		if status, body := do(b, ts, http.MethodGet, path, "", nil); status != http.StatusOK {
			b.Fatalf("%d %s", status, body)
		}
	}
}
