package sidecar_test

import (
	"iter"
	"net/http"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/contract/wire"
	"github.com/agentrt/agentrt/sidecar"
)

// A malformed credential request header is refused before the provider
// is asked, naming the header and the offending member's JSON pointer;
// its value is never echoed.
func TestCredentialHeaderRefusedStrictly(t *testing.T) {
	p := newScripted(t)
	ts, _ := serve(t, p, sidecar.Options{})
	bad := "eyJzdGFnZSI6LTEsIm9jY2FzaW9uIjoidHVybiIsImhhcm5lc3MiOiJjbGktYmFzZSIsInByb3ZpZGVyIjoic2NyaXB0ZWQiLCJtb2RlbCI6Im0iLCJzZWxlY3RvciI6eyJraW5kIjoiYWxsLWVsaWdpYmxlIn19" // stage -1
	status, body := do(t, ts, http.MethodPost, wire.PathEnvironments, createBody, map[string]string{wire.HeaderCredentialRequest: bad})
	wantError(t, status, body, http.StatusBadRequest, wire.CodeInvalidRequest, ptr("/stage"))
	if !strings.Contains(string(body), wire.HeaderCredentialRequest) || strings.Contains(string(body), bad) {
		t.Errorf("the refusal must name the header and not echo it: %s", body)
	}
	status, body = do(t, ts, http.MethodPost, wire.PathEnvironments, createBody, map[string]string{wire.HeaderCredentialRequest: "%%%"})
	wantError(t, status, body, http.StatusBadRequest, wire.CodeInvalidRequest, nil)
	if p.Creates() != 0 {
		t.Errorf("%d creates ran; a refused header must reach no provider", p.Creates())
	}
}

// NSO-01, NSO-03: the scripted provider hands the observation of its
// native session to the execution owner's stream only — its public
// Stream never yields it — and the sidecar's public stream never carries
// it: the server is the execution owner.
func TestServedStreamWithholdsNativeObservationNSO03(t *testing.T) {
	p := newScripted(t)
	env, err := p.Create(t.Context(), &contract.CreateInput{})
	if err != nil {
		t.Fatal(err)
	}
	count := func(events iter.Seq2[contract.EnvironmentEvent, error]) (n int) {
		for ev, err := range events {
			if err != nil {
				t.Fatal(err)
			}
			if contract.IsPrivateEnvironmentEvent(ev) {
				n++
			}
		}
		return n
	}
	if n := count(env.Stream(t.Context(), &contract.TurnInput{Prompt: ptr("hi")})); n != 0 {
		t.Errorf("the public Stream yielded %d native observations", n)
	}
	if n := count(env.(contract.OwnedStreamer).StreamOwned(t.Context(), &contract.TurnInput{Prompt: ptr("hi")})); n != 1 {
		t.Errorf("the owner's stream observed the native session %d times; want once", n)
	}
	ts, _ := serve(t, newScripted(t), sidecar.Options{})
	created := mustCreate(t, ts, http.MethodPost, wire.PathEnvironments, createBody, nil)
	status, body := do(t, ts, http.MethodPost, "/v1/environments/"+created.Environment.ID+"/turns", `{"turnId":"t1","input":{"prompt":"hi"}}`, nil)
	if status != http.StatusOK {
		t.Fatalf("turn: %d %s", status, body)
	}
	frames := sseEvents(t, body)
	if len(frames) < 2 || frames[len(frames)-1].Event != wire.EventEnd {
		t.Fatalf("the turn did not end: %s", body)
	}
	if strings.Contains(string(body), contract.EventTypeNativeSessionObserved) {
		t.Errorf("the public stream carries the native observation:\n%s", body)
	}
}
