package sidecar

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/contract/wire"
)

// createOutcome is one keyed create's environment, and whether it was
// replayed from the store (a create this process did not make).
type createOutcome struct {
	doc      wire.Environment
	replayed bool
}

// errInDoubt: an earlier create under the key started and its outcome is
// unknown (its server died mid-create); no second environment is made.
var errInDoubt = errors.New("an earlier create with this idempotency key started and its outcome is unknown; no second environment is created")

func (s *Server) create(w http.ResponseWriter, r *http.Request) {
	in, ok := readCall(s, w, r, s.opts.MaxProfileBodyBytes, wire.ParseCreateInput)
	if !ok {
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
// there is one, runOnce): the key's intent record refuses a changed
// input before any effect, and each attempt records its outcome, so a
// restarted server replays a create it made instead of making a second
// one.
func (s *Server) durableCreate(ctx context.Context, in *contract.CreateInput, key, digest string) (createOutcome, error) {
	if s.opts.Store == nil {
		env, err := s.p.Create(ctx, in)
		if err != nil {
			return createOutcome{}, err
		}
		return createOutcome{doc: s.keep(ctx, env)}, nil
	}
	var made contract.Environment
	rec, replayed, err := runOnce(ctx, s.opts.Store, s.opts.CallTimeout, kindCreate, key, digest, func(ctx context.Context) (outcomeRecord, error) {
		env, err := s.p.Create(ctx, in)
		if err != nil {
			return outcomeRecord{}, err
		}
		made = env
		doc := s.keep(ctx, env)
		return outcomeRecord{Environment: &doc}, nil
	}, func(outcomeRecord) {
		s.forget(made.ID())
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.opts.CreateTimeout)
		defer cancel()
		_ = made.Destroy(dctx)
	})
	switch {
	case errors.Is(err, errDigestConflict):
		return createOutcome{}, fmt.Errorf("%w (key %q)", contract.ErrIdempotencyConflict, key)
	case errors.Is(err, errOutcomeUnknown):
		return createOutcome{}, errInDoubt
	case err != nil:
		return createOutcome{}, err
	case rec.Environment == nil:
		return createOutcome{}, fmt.Errorf("the recorded outcome of create key %q is no environment", key)
	}
	return createOutcome{doc: *rec.Environment, replayed: replayed}, nil
}

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
