package sidecar_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/contract/wire"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/sidecar"
)

// interactionBody is a valid command declining interaction i of env.
func interactionBody(t *testing.T, env string) string {
	t.Helper()
	b := contract.InteractionBinding{RunID: "r", Provider: "scripted", EnvironmentID: env, ExecutionID: "x", InteractionID: "i",
		RequestDigest: "sha256:0000000000000000000000000000000000000000000000000000000000000000"}
	cmd, err := contract.NewInteractionResponseCommand("op", b, contract.InteractionResponse{ID: "i", Outcome: contract.InteractionOutcomeDeclined})
	if err != nil {
		t.Fatal(err)
	}
	out, err := wire.Marshal(cmd)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// Observation and interaction answers are routed to the environment; a
// missing environment, a missing ability and a malformed command are
// refused clearly.
func TestObservationAndInteractionRoutes(t *testing.T) {
	ts, _ := serve(t, newScripted(t), sidecar.Options{})
	status, body := do(t, ts, http.MethodPost, wire.PathEnvironments, createBody, nil)
	env := createResult(t, status, body).Environment

	status, body = do(t, ts, http.MethodGet, "/v1/environments/"+env.ID+"/observation", "", nil)
	if status != http.StatusOK {
		t.Fatalf("observation: %d %s", status, body)
	}
	obs, err := wire.ParseEnvironmentObservation(body)
	if err != nil {
		t.Fatalf("observation %s: %v", body, err)
	}
	if obs.Subject.EnvironmentID != env.ID {
		t.Errorf("the observation is of %q, want %q", obs.Subject.EnvironmentID, env.ID)
	}

	status, body = do(t, ts, http.MethodGet, "/v1/environments/none/observation", "", nil)
	wantError(t, status, body, http.StatusNotFound, wire.CodeNotFound, nil)
	status, body = do(t, ts, http.MethodPost, "/v1/environments/"+env.ID+"/observation", "{}", nil)
	wantError(t, status, body, http.StatusMethodNotAllowed, wire.CodeMethodNotAllowed, nil)

	// The test script originates no interactions: its environments do not
	// answer them.
	status, body = do(t, ts, http.MethodPost, "/v1/environments/"+env.ID+"/interactions", interactionBody(t, env.ID), nil)
	wantError(t, status, body, http.StatusUnprocessableEntity, wire.CodeUnsupported, nil)
	status, body = do(t, ts, http.MethodPost, "/v1/environments/none/interactions", interactionBody(t, "none"), nil)
	wantError(t, status, body, http.StatusNotFound, wire.CodeNotFound, nil)
	status, body = do(t, ts, http.MethodPost, "/v1/environments/"+env.ID+"/interactions", `{"operationId":"op","binding":7}`, nil)
	wantError(t, status, body, http.StatusBadRequest, wire.CodeInvalidRequest, ptr("/binding"))
}

// The remote client offers exactly the abilities the server's document
// declares: observation, and no interaction responder for a provider that
// originates none.
func TestRemoteExposesServedAbilities(t *testing.T) {
	ts, _ := serve(t, newScripted(t), sidecar.Options{})
	p := newRemote(t, ts.URL)
	ctx := context.Background()
	env, err := p.Create(ctx, &contract.CreateInput{Profile: profile.Ref{Inline: &profile.Profile{Name: profile.Ptr("t")}}})
	if err != nil {
		t.Fatal(err)
	}
	caps, err := p.Capabilities(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if caps.Observation == nil || caps.Interactions != nil {
		t.Fatalf("served document: observation %v, interactions %v; want observation only", caps.Observation, caps.Interactions)
	}
	if err := contract.CheckExposure(caps, env); err != nil {
		t.Fatal(err)
	}
	o, ok := env.(contract.Observer)
	if !ok {
		t.Fatal("the environment offers no Observe")
	}
	obs, err := o.Observe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if obs.Subject.EnvironmentID != env.ID() {
		t.Errorf("observed %q, want %q", obs.Subject.EnvironmentID, env.ID())
	}
}
