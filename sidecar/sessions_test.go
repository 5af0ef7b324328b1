package sidecar_test

import (
	"bufio"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/contract/wire"
	"github.com/agentrt/agentrt/sidecar"
)

var valueEqual = cmp.Comparer(func(a, b canonjson.Value) bool { return canonjson.Equal(a, b) })

// sessionFixture is a served environment with one dispatched run.
type sessionFixture struct {
	t    *testing.T
	ts   *httptest.Server
	base string // the session's route
	ref  *contract.SessionRef
	post func(suffix string, body any, header map[string]string) (int, []byte)
}

// dispatched serves the scripted provider, creates an environment and
// dispatches prompt on it.
func dispatched(t *testing.T, opts sidecar.Options, prompt string) *sessionFixture {
	t.Helper()
	ts, _ := serve(t, newScripted(t), opts)
	env := mustCreate(t, ts, http.MethodPost, wire.PathEnvironments, `{"profile":{"name":"t"}}`, nil).Environment
	status, body := do(t, ts, http.MethodPost, "/v1/environments/"+env.ID+"/dispatch", `{"prompt":"`+prompt+`","detach":true}`, nil)
	if status != http.StatusOK {
		t.Fatalf("dispatch: %d %s", status, body)
	}
	ref, err := wire.ParseSessionRef(body)
	if err != nil {
		t.Fatalf("dispatch answer %s: %v", body, err)
	}
	if ref.ControlRef == nil || ref.ControlRef.EnvironmentID != env.ID || ref.ControlRef.SessionID == nil || *ref.ControlRef.SessionID != ref.ID {
		t.Fatalf("the dispatch reference %s does not name environment %s and its session", body, env.ID)
	}
	f := &sessionFixture{t: t, ts: ts, base: "/v1/environments/" + env.ID + "/sessions/" + ref.ID, ref: ref}
	f.post = func(suffix string, x any, header map[string]string) (int, []byte) {
		t.Helper()
		b, err := wire.Marshal(x)
		if err != nil {
			t.Fatal(err)
		}
		return do(t, ts, http.MethodPost, f.base+suffix, string(b), header)
	}
	return f
}

// result waits for the run's result through the result route.
func (f *sessionFixture) result() *contract.TurnResult {
	f.t.Helper()
	for range 100 {
		status, body := f.post("/result", wire.SessionResultRequest{ControlRef: f.ref.ControlRef, WaitMs: ptr(int64(200))}, nil)
		if status != http.StatusOK {
			f.t.Fatalf("result: %d %s", status, body)
		}
		res, err := wire.ParseSessionResult(body)
		if err != nil {
			f.t.Fatalf("result %s: %v", body, err)
		}
		if res.Result != nil {
			return res.Result
		}
	}
	f.t.Fatal("the run did not end")
	return nil
}

// events reads the session's events (after header Last-Event-ID, if set)
// to the end frame and returns them with the SSE ids they came under.
func (f *sessionFixture) events(req wire.SessionEventsRequest, header map[string]string) ([]contract.EnvironmentEvent, []string, wire.SSEEvent) {
	f.t.Helper()
	status, body := f.post("/events", req, header)
	if status != http.StatusOK {
		f.t.Fatalf("events: %d %s", status, body)
	}
	frames := sseEvents(f.t, body)
	var evs []contract.EnvironmentEvent
	var ids []string
	for _, fr := range frames[:len(frames)-1] {
		ev, err := wire.ParseEnvironmentEvent(fr.Data)
		if err != nil {
			f.t.Fatalf("event %s: %v", fr.Data, err)
		}
		if ev.ID == nil || fr.ID != *ev.ID {
			f.t.Errorf("SSE id %q, event id %v: want the event's own id", fr.ID, ev.ID)
		}
		evs, ids = append(evs, *ev), append(ids, fr.ID)
	}
	return evs, ids, frames[len(frames)-1]
}

// A dispatched run is opened by its reference, read, replayed after a
// Last-Event-ID and its result fetched; a competing reference is refused.
func TestDispatchAndSessionRoutes(t *testing.T) {
	f := dispatched(t, sidecar.Options{}, "slow")
	status, body := f.post("", wire.SessionRequest{ControlRef: f.ref.ControlRef}, nil)
	if status != http.StatusOK {
		t.Fatalf("open: %d %s", status, body)
	}
	s, err := wire.ParseSession(body)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(wire.Session{ID: f.ref.ID, ControlRef: f.ref.ControlRef}, *s); diff != "" {
		t.Errorf("open (-want +got):\n%s", diff)
	}

	res := f.result()
	if !res.Success || res.Text != "onetwothree" {
		t.Errorf("result %+v, want a success saying onetwothree", res)
	}
	status, body = f.post("/status", wire.SessionRequest{ControlRef: f.ref.ControlRef}, nil)
	if st, err := wire.ParseSessionStatus(body); status != http.StatusOK || err != nil || st.Status == nil || *st.Status != contract.SessionCompleted {
		t.Errorf("status: %d %s", status, body)
	}

	all, ids, end := f.events(wire.SessionEventsRequest{ControlRef: f.ref.ControlRef}, nil)
	if len(all) < 3 || end.Event != wire.EventEnd {
		t.Fatalf("events: %d, ending %+v", len(all), end)
	}
	// Last-Event-ID resumes after that event; it overrides the body's since.
	rest, restIDs, _ := f.events(wire.SessionEventsRequest{ControlRef: f.ref.ControlRef, Since: &ids[len(ids)-1]}, map[string]string{wire.HeaderLastEventID: ids[0]})
	if diff := cmp.Diff(all[1:], rest, valueEqual); diff != "" {
		t.Errorf("resume after %s (-want +got):\n%s", ids[0], diff)
	}
	if diff := cmp.Diff(ids[1:], restIDs); diff != "" {
		t.Errorf("resumed ids (-want +got):\n%s", diff)
	}
	// A cursor naming no event of the run ends the stream with an error.
	_, _, end = f.events(wire.SessionEventsRequest{ControlRef: f.ref.ControlRef}, map[string]string{wire.HeaderLastEventID: "no-such-event"})
	if end.Event != wire.EventError {
		t.Errorf("an unknown cursor ended with %+v, want an error frame", end)
	}

	status, body = f.post("/events", wire.SessionEventsRequest{ControlRef: f.ref.ControlRef}, map[string]string{wire.HeaderLastEventID: strings.Repeat("x", contract.MaxIdentifierLength+1)})
	wantError(t, status, body, http.StatusBadRequest, wire.CodeInvalidRequest, nil)

	competing := *f.ref.ControlRef
	competing.RunID += "-other"
	for _, tc := range []struct {
		name, suffix string
		body         any
		status       int
		code         string
	}{
		{"competing-run", "", wire.SessionRequest{ControlRef: &competing}, http.StatusConflict, wire.CodeSessionRefused},
		{"competing-events", "/events", wire.SessionEventsRequest{ControlRef: &competing}, http.StatusConflict, wire.CodeSessionRefused},
		{"competing-cancel-run", "/cancel-run", map[string]any{"controlRef": competing, "request": cancelRequest(t, f.ref, "op")}, http.StatusConflict, wire.CodeSessionRefused},
		{"bad-body", "/status", map[string]any{"controlRef": 7}, http.StatusBadRequest, wire.CodeInvalidRequest},
		{"bad-wait", "/result", map[string]any{"waitMs": -1}, http.StatusBadRequest, wire.CodeInvalidRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, body := f.post(tc.suffix, tc.body, nil)
			wantError(t, status, body, tc.status, tc.code, nil)
		})
	}
	status, body = do(t, f.ts, http.MethodPost, strings.Replace(f.base, f.ref.ID, "no-such-session", 1), `{}`, nil)
	wantError(t, status, body, http.StatusConflict, wire.CodeSessionRefused, nil)
	status, body = do(t, f.ts, http.MethodPost, "/v1/environments/none/sessions/"+f.ref.ID, `{}`, nil)
	wantError(t, status, body, http.StatusNotFound, wire.CodeNotFound, nil)
	status, body = do(t, f.ts, http.MethodPost, "/v1/environments/none/dispatch", `{"prompt":"x"}`, nil)
	wantError(t, status, body, http.StatusNotFound, wire.CodeNotFound, nil)
	status, body = do(t, f.ts, http.MethodGet, f.base+"/events", "", nil)
	wantError(t, status, body, http.StatusMethodNotAllowed, wire.CodeMethodNotAllowed, nil)
}

// cancelRequest is a digest-bound cancellation of ref's run.
func cancelRequest(t *testing.T, ref *contract.SessionRef, op string) *contract.RunCancellationRequest {
	t.Helper()
	c := ref.ControlRef
	run := contract.ExactRunControlRef{RunID: c.RunID, Provider: c.Provider, EnvironmentID: c.EnvironmentID,
		SessionID: *c.SessionID, ExecutionID: *c.ExecutionID, RequestDigest: *c.RequestDigest}
	req, err := contract.NewRunCancellationRequest(op, run, ptr("test"))
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// A live run's result is pending; the digest-bound cancel stops it
// (accepted, cancel_requested), the same request again is replayed, and
// the run ends cancelled.
func TestSessionCancelRun(t *testing.T) {
	f := dispatched(t, sidecar.Options{}, "live")
	status, body := f.post("/result", wire.SessionResultRequest{ControlRef: f.ref.ControlRef, WaitMs: ptr(int64(20))}, nil)
	if res, err := wire.ParseSessionResult(body); status != http.StatusOK || err != nil || res.Pending == nil {
		t.Fatalf("the live run's result: %d %s, want pending", status, body)
	}
	req := cancelRequest(t, f.ref, "op-1")
	var acks []contract.RunCancellationAcknowledgement
	for range 2 {
		status, body := f.post("/cancel-run", wire.SessionCancelRunRequest{ControlRef: f.ref.ControlRef, Request: *req}, nil)
		ack, err := wire.ParseRunCancellationAcknowledgement(body)
		if status != http.StatusOK || err != nil {
			t.Fatalf("cancel-run: %d %s %v", status, body, err)
		}
		if !contract.CancellationAcknowledgementMatchesRequest(req, ack) {
			t.Errorf("the acknowledgement %s does not match its request", body)
		}
		acks = append(acks, *ack)
	}
	if acks[0].Status != contract.StatusAccepted || acks[0].Effect != contract.EffectCancelRequested ||
		acks[1].Status != contract.StatusReplayed || acks[1].Effect != contract.EffectCancelRequested {
		t.Errorf("acknowledgements %s/%s then %s/%s, want accepted then replayed, both cancel_requested",
			acks[0].Status, acks[0].Effect, acks[1].Status, acks[1].Effect)
	}
	if res := f.result(); res.Success {
		t.Error("a cancelled run reported success")
	}
	status, body = f.post("/status", wire.SessionRequest{ControlRef: f.ref.ControlRef}, nil)
	if st, err := wire.ParseSessionStatus(body); err != nil || st.Status == nil || *st.Status != contract.SessionCancelled {
		t.Errorf("status after cancel: %d %s", status, body)
	}
}

// The legacy cancel stops the bound run; a prompt plays another turn in
// the session and answers the reference of the run it is now bound to.
func TestSessionCancelAndPrompt(t *testing.T) {
	f := dispatched(t, sidecar.Options{}, "live")
	status, body := f.post("/cancel", wire.SessionRequest{ControlRef: f.ref.ControlRef}, nil)
	if status != http.StatusNoContent {
		t.Fatalf("cancel: %d %s", status, body)
	}
	if res := f.result(); res.Success {
		t.Error("a cancelled run reported success")
	}
	status, body = f.post("/prompt", wire.SessionPromptRequest{ControlRef: f.ref.ControlRef, Input: contract.TurnInput{Prompt: ptr("hi")}}, nil)
	if status != http.StatusOK {
		t.Fatalf("prompt: %d %s", status, body)
	}
	pr, err := wire.ParsePromptResult(body)
	if err != nil {
		t.Fatal(err)
	}
	if !pr.Result.Success || pr.Result.Text != "Hello." {
		t.Errorf("prompt result %+v", pr.Result)
	}
	if pr.ControlRef == nil || pr.ControlRef.RunID == f.ref.ControlRef.RunID || *pr.ControlRef.SessionID != f.ref.ID {
		t.Errorf("the prompt's reference %+v does not name a new run of session %s", pr.ControlRef, f.ref.ID)
	}
	// The earlier run is still reachable by its own reference.
	if res := f.result(); res.Success {
		t.Error("the first run's result changed after the prompt")
	}
}

// A reader leaving a session's event stream stops the read, never the
// run: the detached run completes.
func TestSessionEventsReaderLeaves(t *testing.T) {
	f := dispatched(t, sidecar.Options{}, "slow")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	b, err := wire.Marshal(wire.SessionEventsRequest{ControlRef: f.ref.ControlRef})
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, f.ts.URL+f.base+"/events", strings.NewReader(string(b)))
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("Content-Type", wire.ContentTypeJSON)
	resp, err := f.ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != wire.ContentTypeSSE {
		t.Fatalf("events: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	if _, err := wire.NewSSEReader(bufio.NewReader(resp.Body)).Next(); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if res := f.result(); !res.Success || res.Text != "onetwothree" {
		t.Errorf("the run after its reader left: %+v", res)
	}
}

// Every dispatch and session route refuses a request without the token
// (401, no detail) before it reads the body or reaches a run.
func TestSessionRoutesNeedTheToken(t *testing.T) {
	f := dispatched(t, sidecar.Options{}, "slow")
	env := strings.TrimSuffix(f.base, "/sessions/"+f.ref.ID)
	for _, path := range []string{env + "/dispatch", f.base, f.base + "/status", f.base + "/events", f.base + "/result",
		f.base + "/prompt", f.base + "/cancel", f.base + "/cancel-run", f.base + "/interactions"} {
		status, body := do(t, f.ts, http.MethodPost, path, `{}`, map[string]string{"Authorization": ""})
		if status != http.StatusUnauthorized || string(body) != `{"error":{"code":"unauthorized","message":"unauthorized"}}` {
			t.Errorf("%s without a token: %d %s", path, status, body)
		}
	}
	if res := f.result(); !res.Success {
		t.Error("a refused cancel reached the run")
	}
}
