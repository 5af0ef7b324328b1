package sidecar

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/contract/wire"
	"github.com/agentrt/agentrt/store"
)

// Idempotency scopes of keyed creates in the store.
const (
	scopeIntent  = "sidecar.create"
	scopeAttempt = "sidecar.create.attempt"
	scopeOutcome = "sidecar.create.outcome"
	// maxAttempts bounds the failed create attempts one key may have.
	maxAttempts = 16
)

// createOutcome is one keyed create's environment, and whether it was
// replayed from the store (a create this process did not make).
type createOutcome struct {
	doc      wire.Environment
	replayed bool
}

// outcomeRecord is the stored outcome of one create attempt: exactly one
// member is set.
type outcomeRecord struct {
	Environment *wire.Environment `json:"environment,omitzero"`
	Failed      *string           `json:"failed,omitzero"`
	InDoubt     *bool             `json:"inDoubt,omitzero"`
}

// errInDoubt: an earlier create under the key started and its outcome is
// unknown (its server died mid-create); no second environment is made.
var errInDoubt = errors.New("an earlier create with this idempotency key started and its outcome is unknown; no second environment is created")

func (s *Server) create(w http.ResponseWriter, r *http.Request) {
	body, ok := s.readBodyWithin(w, r, s.opts.MaxProfileBodyBytes)
	if !ok {
		return
	}
	in, err := wire.ParseCreateInput(body)
	if err != nil {
		writeError(w, wire.FromSchemaError(err))
		return
	}
	if in.Credential, ok = credentialRequest(w, r); !ok {
		return
	}
	// The create runs to its end even when the client goes away, so that
	// a retry with the same key replays it.
	ctx, cancel := context.WithTimeout(s.base, s.opts.CreateTimeout)
	defer cancel()
	if in.IdempotencyKey == nil {
		env, err := s.p.Create(ctx, in)
		if err != nil {
			writeError(w, providerError(err))
			return
		}
		writeJSON(w, http.StatusCreated, wire.CreateResult{Environment: s.keep(ctx, env), Creation: contract.CreationCreated})
		return
	}
	digest, err := contract.CreateInputDigest(in)
	if err != nil {
		writeError(w, providerError(err))
		return
	}
	key := *in.IdempotencyKey
	out, creation, err := s.keyed.Do(ctx, in, func(ctx context.Context, in *contract.CreateInput) (createOutcome, error) {
		return s.durableCreate(ctx, in, key, digest)
	})
	switch {
	case errors.Is(err, errInDoubt):
		writeError(w, wire.ErrorDetail{Code: wire.CodeCreateInDoubt, Message: err.Error()})
		return
	case err != nil:
		writeError(w, providerError(err))
		return
	}
	if out.replayed {
		creation = contract.CreationReplayed
	}
	status := http.StatusCreated
	if creation == contract.CreationReplayed {
		status = http.StatusOK
		if env := s.lookup(ctx, out.doc.ID); env != nil {
			out.doc = s.describe(ctx, env)
		} else {
			out.doc.Status = contract.EnvironmentUnknown
		}
	}
	writeJSON(w, status, wire.CreateResult{Environment: out.doc, Creation: creation})
}

// durableCreate is one keyed create admitted through the store (when
// there is one): the key's intent record refuses a changed input before
// any effect, and each attempt records its outcome, so a restarted
// server replays a create it made instead of making a second one.
func (s *Server) durableCreate(ctx context.Context, in *contract.CreateInput, key, digest string) (createOutcome, error) {
	st := s.opts.Store
	if st == nil {
		env, err := s.p.Create(ctx, in)
		if err != nil {
			return createOutcome{}, err
		}
		return createOutcome{doc: s.keep(ctx, env)}, nil
	}
	intent, _, err := st.ClaimIdempotency(ctx, store.Idempotency{Scope: scopeIntent, Key: key, RequestDigest: digest})
	if err != nil {
		return createOutcome{}, fmt.Errorf("recording the create: %w", err)
	}
	if intent.RequestDigest != digest {
		return createOutcome{}, fmt.Errorf("%w (key %q)", contract.ErrIdempotencyConflict, key)
	}
	for n := 1; n <= maxAttempts; n++ {
		attemptKey := key + "#" + strconv.Itoa(n)
		_, mine, err := st.ClaimIdempotency(ctx, store.Idempotency{Scope: scopeAttempt, Key: attemptKey, RequestDigest: digest})
		if err != nil {
			return createOutcome{}, fmt.Errorf("recording the create: %w", err)
		}
		if mine {
			return s.attempt(ctx, in, attemptKey, digest)
		}
		// Someone made attempt n: its outcome decides. An attempt with no
		// outcome is in doubt, and is recorded so from now on.
		rec, err := claimOutcome(ctx, st, attemptKey, digest, outcomeRecord{InDoubt: ptr(true)})
		if err != nil {
			return createOutcome{}, err
		}
		switch {
		case rec.Environment != nil:
			return createOutcome{doc: *rec.Environment, replayed: true}, nil
		case rec.Failed != nil:
			continue
		default:
			return createOutcome{}, errInDoubt
		}
	}
	return createOutcome{}, fmt.Errorf("%d create attempts with key %q failed", maxAttempts, key)
}

// attempt runs the create of attempt attemptKey and records its outcome.
func (s *Server) attempt(ctx context.Context, in *contract.CreateInput, attemptKey, digest string) (createOutcome, error) {
	env, err := s.p.Create(ctx, in)
	if err != nil {
		msg := err.Error()
		if _, rerr := claimOutcome(context.WithoutCancel(ctx), s.opts.Store, attemptKey, digest, outcomeRecord{Failed: &msg}); rerr != nil {
			return createOutcome{}, errors.Join(err, rerr)
		}
		return createOutcome{}, err
	}
	doc := s.keep(ctx, env)
	rec, err := claimOutcome(context.WithoutCancel(ctx), s.opts.Store, attemptKey, digest, outcomeRecord{Environment: &doc})
	if err != nil || rec.Environment == nil || rec.Environment.ID != doc.ID {
		// Another server declared this attempt in doubt first: the
		// environment is not handed out, so it must not live on.
		s.forget(doc.ID)
		_ = env.Destroy(context.WithoutCancel(ctx))
		if err != nil {
			return createOutcome{}, err
		}
		return createOutcome{}, errInDoubt
	}
	return createOutcome{doc: doc}, nil
}

// claimOutcome records rec as the outcome of attemptKey unless one is
// recorded, and returns the recorded one.
func claimOutcome(ctx context.Context, st store.Store, attemptKey, digest string, rec outcomeRecord) (outcomeRecord, error) {
	v, err := canonjson.ToValue(rec)
	if err != nil {
		return outcomeRecord{}, err
	}
	got, _, err := st.ClaimIdempotency(ctx, store.Idempotency{Scope: scopeOutcome, Key: attemptKey, RequestDigest: digest, Result: v})
	if err != nil {
		return outcomeRecord{}, fmt.Errorf("recording the create outcome: %w", err)
	}
	var out outcomeRecord
	if err := canonjson.FromValue(got.Result, &out); err != nil {
		return outcomeRecord{}, fmt.Errorf("reading the create outcome: %w", err)
	}
	return out, nil
}

func ptr[T any](v T) *T { return &v }

// keep registers env and returns its description.
func (s *Server) keep(ctx context.Context, env contract.Environment) wire.Environment {
	s.mu.Lock()
	s.envs[env.ID()] = env
	s.mu.Unlock()
	return s.describe(ctx, env)
}

func (s *Server) forget(id string) {
	s.mu.Lock()
	delete(s.envs, id)
	s.mu.Unlock()
}

// lookup finds an environment this server made, or one the provider can
// find by id; nil when neither knows it.
func (s *Server) lookup(ctx context.Context, id string) contract.Environment {
	s.mu.Lock()
	env := s.envs[id]
	s.mu.Unlock()
	if env != nil {
		return env
	}
	if g, ok := s.p.(contract.EnvironmentGetter); ok {
		if env, err := g.Get(ctx, id); err == nil && env != nil {
			return env
		}
	}
	return nil
}

// describe is env as the wire shows it; a status the provider cannot
// tell is left out.
func (s *Server) describe(ctx context.Context, env contract.Environment) wire.Environment {
	doc := wire.Environment{ID: env.ID(), Provider: env.Provider(), Name: env.Name(), Metadata: env.Metadata()}
	if c := env.Capabilities(); c != nil {
		served := wire.Served(c)
		doc.Capabilities = &served
	}
	ctx, cancel := context.WithTimeout(ctx, s.opts.CallTimeout)
	defer cancel()
	if st, err := env.Status(ctx); err == nil && st.Valid() {
		doc.Status = st
	}
	return doc
}

// getEnvironment describes one environment.
func (s *Server) getEnvironment(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := s.callContext(r)
	defer cancel()
	env := s.lookup(ctx, r.PathValue("id"))
	if env == nil {
		writeError(w, wire.ErrorDetail{Code: wire.CodeNotFound, Message: "no such environment"})
		return
	}
	writeJSON(w, http.StatusOK, s.describe(ctx, env))
}

// destroyEnvironment cancels an environment's turns and destroys it.
func (s *Server) destroyEnvironment(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := s.callContext(r)
	defer cancel()
	id := r.PathValue("id")
	env := s.lookup(ctx, id)
	if env == nil {
		writeError(w, wire.ErrorDetail{Code: wire.CodeNotFound, Message: "no such environment"})
		return
	}
	s.cancelTurnsOf(id)
	if err := env.Destroy(ctx); err != nil {
		writeError(w, providerError(err))
		return
	}
	s.forget(id)
	w.WriteHeader(http.StatusNoContent)
}
