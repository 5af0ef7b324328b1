package sidecar

import (
	"context"
	"net/http"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/contract/wire"
)

// respond answers an interaction request of one of the environment's
// turns. The provider judges the command (binding, response, replay);
// its acknowledgement is passed on as it is.
func (s *Server) respond(w http.ResponseWriter, r *http.Request) {
	cmd, ok := readCall(s, w, r, s.opts.MaxBodyBytes, wire.ParseInteractionResponseCommand)
	if !ok {
		return
	}
	ctx, cancel := s.callContext(r)
	defer cancel()
	ir, ok := ability[contract.InteractionResponder](w, s.lookup(ctx, r.PathValue("id")), "interactions")
	if !ok {
		return
	}
	ack, err := ir.RespondToInteraction(ctx, cmd)
	answer(w, ack, err)
}

// observe returns the environment's normalized observation.
func (s *Server) observe(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := s.callContext(r)
	defer cancel()
	o, ok := ability[contract.Observer](w, s.lookup(ctx, r.PathValue("id")), "observation")
	if !ok {
		return
	}
	obs, err := o.Observe(ctx)
	answer(w, obs, err)
}

// ability is env's optional interface I, or a written refusal: not_found
// for no environment, unsupported for one without the ability.
func ability[I any](w http.ResponseWriter, env contract.Environment, gate string) (I, bool) {
	var zero I
	if env == nil {
		writeError(w, wire.ErrorDetail{Code: wire.CodeNotFound, Message: "no such environment"})
		return zero, false
	}
	x, ok := env.(I)
	if !ok {
		writeError(w, wire.ErrorDetail{Code: wire.CodeUnsupported, Message: "the environment does not offer " + gate})
		return zero, false
	}
	return x, true
}

// EffectCounter is a provider that counts its own durable effects
// (providers/scripted does): the server then answers wire.PathEffects
// with the counts, so a client can prove over the wire that a replay or
// a refusal dispatched nothing.
type EffectCounter interface {
	// EffectCounts returns the counts by name; names are identifiers.
	EffectCounts() map[string]int64
}

// effects answers the served provider's effect counts, or unsupported
// for a provider that does not count them.
func (s *Server) effects(w http.ResponseWriter, r *http.Request) {
	ec, ok := s.p.(EffectCounter)
	if !ok {
		writeError(w, wire.ErrorDetail{Code: wire.CodeUnsupported, Message: "the provider does not count its effects"})
		return
	}
	counts := ec.EffectCounts()
	if counts == nil {
		counts = map[string]int64{}
	}
	writeJSON(w, http.StatusOK, wire.Effects{Counts: counts})
}

// transferContext admits approved portable context into a fresh session
// (contextTransfer). It runs on the server's context, bounded by
// CreateTimeout (it makes a session), so a client that lost the answer
// and re-sends the same operation is answered replayed by the provider.
func (s *Server) transferContext(w http.ResponseWriter, r *http.Request) {
	req, tr, ok := s.transferCall(w, r)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(s.base, s.opts.CreateTimeout)
	defer cancel()
	res, err := tr.TransferContext(ctx, req)
	answer(w, res, err)
}

// lookupContextTransfer recovers an earlier transfer's result; none is
// an answer without a result.
func (s *Server) lookupContextTransfer(w http.ResponseWriter, r *http.Request) {
	req, tr, ok := s.transferCall(w, r)
	if !ok {
		return
	}
	ctx, cancel := s.callContext(r)
	defer cancel()
	res, err := tr.LookupContextTransfer(ctx, req)
	if err != nil {
		writeError(w, providerError(err))
		return
	}
	writeJSON(w, http.StatusOK, wire.ContextTransferLookup{Result: res})
}

// transferCall reads a context transfer body and the provider's
// transferrer, or writes the refusal.
func (s *Server) transferCall(w http.ResponseWriter, r *http.Request) (*contract.ContextTransferRequest, contract.ContextTransferrer, bool) {
	req, ok := readCall(s, w, r, s.opts.MaxProfileBodyBytes, wire.ParseContextTransferRequest)
	if !ok {
		return nil, nil, false
	}
	tr, ok := s.p.(contract.ContextTransferrer)
	if !ok {
		writeError(w, wire.ErrorDetail{Code: wire.CodeUnsupported, Message: "the provider does not offer contextTransfer"})
		return nil, nil, false
	}
	return req, tr, true
}
