package sidecar_test

import (
	"net/http"
	"testing"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/contract/wire"
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
