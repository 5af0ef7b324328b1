package scripted

import (
	"context"
	"errors"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
)

// States of one interaction request.
const (
	interactionOutstanding = "outstanding"
	interactionResolved    = "resolved"
	interactionExpired     = "expired"
	interactionCancelled   = "cancelled"
)

// interactionState is one request a run originated. It is guarded by the
// run's lock.
type interactionState struct {
	req *contract.InteractionRequest
	// unreachable: responses cannot be delivered (transport_failure).
	unreachable bool
	state       string
	// resolution is the accepted response and its digest.
	resolution       *contract.InteractionResponse
	resolutionDigest string
	resolved         chan struct{}
}

// bindInteraction binds request material (a request without binding and
// digest) to one run and validates the whole request with the contract's
// schema, digest included.
func bindInteraction(material canonjson.Value, exec contract.InteractionExecutionBinding) (*contract.InteractionRequest, error) {
	if material.Kind() != canonjson.Object {
		return nil, errors.New("scripted: an interaction request must be an object")
	}
	if _, ok := material.Get("binding"); ok {
		return nil, errors.New("scripted: an interaction request's binding is the provider's to set")
	}
	if _, ok := material.Get("requestDigest"); ok {
		return nil, errors.New("scripted: an interaction request's digest is the provider's to set")
	}
	id, _ := material.Get("id")
	binding, err := canonjson.ToValue(exec.ForInteraction(id.Str()))
	if err != nil {
		return nil, err
	}
	v := material.With("binding", binding)
	digest, err := contract.DigestOf(v)
	if err != nil {
		return nil, err
	}
	return contract.FromValue[contract.InteractionRequest](contract.KindInteractionRequest, contract.InteractionRequestSchema,
		v.With("requestDigest", canonjson.StringValue(digest)))
}

// interact originates req in the run, if the turn's posture allows its
// kind (an omitted posture allows every kind; an empty one none), and
// waits for it to resolve: answered (the turn continues), timed out (the
// default applies and the turn continues, or, without a default policy,
// the request expires and the turn fails), or cancelled with the run.
func (pl *player) interact(ctx context.Context, req *contract.InteractionRequest, unreachable bool) bool {
	run := pl.run
	if !run.input.Interactions.Allows(req.Kind, true) {
		return true
	}
	is := &interactionState{req: req, unreachable: unreachable, state: interactionOutstanding, resolved: make(chan struct{})}
	run.mu.Lock()
	if run.interactions == nil {
		run.interactions = map[string]*interactionState{}
	}
	run.interactions[req.ID] = is
	run.mu.Unlock()
	ev, err := contract.NewStreamEvent(&contract.InteractionEvent{Request: *req})
	if err != nil {
		return pl.yield(contract.EnvironmentEvent{}, err)
	}
	idValue := canonjson.StringValue(req.ID)
	if !pl.emit(contract.EventTypeInteraction, map[string]canonjson.Value{"interactionId": idValue, "kind": canonjson.StringValue(req.Kind)}, &ev, nil, "") {
		return false
	}
	var timeout <-chan time.Time
	policy := contract.OnTimeoutFail
	if req.OnTimeout != nil {
		policy = *req.OnTimeout
	}
	if req.TimeoutMs != nil && policy != contract.OnTimeoutWait {
		timer := time.NewTimer(time.Duration(*req.TimeoutMs) * time.Millisecond)
		defer timer.Stop()
		timeout = timer.C
	}
	select {
	case <-is.resolved:
		run.mu.Lock()
		outcome := is.resolution.Outcome
		run.mu.Unlock()
		return pl.emit("interaction.resolved", map[string]canonjson.Value{"interactionId": idValue,
			"outcome": canonjson.StringValue(string(outcome))}, nil, nil, "")
	case <-timeout:
		run.mu.Lock()
		settled := is.state != interactionOutstanding
		if !settled {
			is.state = interactionExpired
		}
		run.mu.Unlock()
		if settled { // answered as the timer fired
			return pl.emit("interaction.resolved", map[string]canonjson.Value{"interactionId": idValue}, nil, nil, "")
		}
		if policy == contract.OnTimeoutDefault && req.Default != nil {
			return pl.emit("interaction.resolved", map[string]canonjson.Value{"interactionId": idValue,
				"outcome": canonjson.StringValue(string(req.Default.Outcome)), "default": canonjson.BoolValue(true)}, nil, nil, "")
		}
		reason := "the interaction expired"
		cancel, _ := contract.NewStreamEvent(&contract.InteractionCancelEvent{ID: req.ID, Reason: &reason})
		if !pl.emit(contract.EventTypeInteractionCancel, map[string]canonjson.Value{"interactionId": idValue}, &cancel, nil, "") {
			return false
		}
		pl.ended = true
		pl.fail("interaction "+req.ID+" expired unanswered", "")
		return false
	case <-ctx.Done():
		run.mu.Lock()
		if is.state == interactionOutstanding {
			is.state = interactionCancelled
		}
		run.mu.Unlock()
		reason := "the run was cancelled"
		cancel, _ := contract.NewStreamEvent(&contract.InteractionCancelEvent{ID: req.ID, Reason: &reason})
		return pl.emit(contract.EventTypeInteractionCancel, map[string]canonjson.Value{"interactionId": idValue}, &cancel, nil, "")
	}
}

// RespondToInteraction implements contract.InteractionResponder for the
// environment: see Session.RespondToInteraction.
func (e *Environment) RespondToInteraction(ctx context.Context, cmd *contract.InteractionResponseCommand) (*contract.InteractionAcknowledgement, error) {
	return e.st.respond(cmd, nil)
}

// RespondToInteraction implements contract.InteractionResponder. The
// command binds its response to a run, the environment, the session (when
// stated), the execution, one interaction and the request's digest; the
// acknowledgement says what happened:
//
//   - unknown_run: no run of the environment has the binding's run id;
//   - binding_mismatch: the run is found but the provider, environment,
//     session (or this session), execution or request digest differ;
//   - unknown_interaction: the run originated no such interaction;
//   - expired, cancelled: the request timed out, or its run ended, first;
//   - already_resolved_same, already_resolved_different: an equal or a
//     different response was accepted before;
//   - transport_failure (retryable): the answer cannot be delivered;
//   - invalid_response: the contract's ValidateInteractionResponseCommand
//     refused the response (its message never quotes answer values);
//   - accepted: the response resolved the request and the run continues.
//
// The same operation id with the same command returns the identical
// acknowledgement, also to a reconnected client. No acknowledgement
// carries an answer value or a digest of the answer alone. A command that
// is not valid at all is refused with an error.
func (s *Session) RespondToInteraction(ctx context.Context, cmd *contract.InteractionResponseCommand) (*contract.InteractionAcknowledgement, error) {
	return s.e.st.respond(cmd, s.s)
}

func (st *envState) respond(cmd *contract.InteractionResponseCommand, session *sessionState) (*contract.InteractionAcknowledgement, error) {
	if cmd == nil {
		return nil, errors.New("scripted: no interaction response command")
	}
	if _, err := contract.Validate(contract.KindInteractionResponseCommand, contract.InteractionResponseCommandSchema, cmd); err != nil {
		return nil, err
	}
	st.mu.Lock()
	for _, prior := range st.acks[cmd.OperationID] {
		if prior.CommandDigest == cmd.CommandDigest {
			ack := *prior
			st.mu.Unlock()
			return &ack, nil
		}
	}
	run := st.runs[cmd.Binding.RunID]
	st.mu.Unlock()
	status, message, retryable := st.evaluate(cmd, run, session)
	ack, err := contract.NewInteractionAcknowledgement(cmd, status, message, retryable)
	if err != nil {
		return nil, err
	}
	if status != contract.InteractionAckTransportFailure {
		st.mu.Lock()
		if st.acks == nil {
			st.acks = map[string][]*contract.InteractionAcknowledgement{}
		}
		stored := *ack
		st.acks[cmd.OperationID] = append(st.acks[cmd.OperationID], &stored)
		st.mu.Unlock()
	}
	return ack, nil
}

// evaluate decides a command's status, resolving the request when the
// response is accepted.
func (st *envState) evaluate(cmd *contract.InteractionResponseCommand, run *runState, session *sessionState) (contract.InteractionAcknowledgementStatus, *string, *bool) {
	if run == nil {
		return contract.InteractionAckUnknownRun, nil, nil
	}
	b := cmd.Binding
	if b.Provider != run.ref.Provider || b.EnvironmentID != st.id || b.ExecutionID != run.ref.ExecutionID ||
		b.SessionID != nil && *b.SessionID != run.session.id || session != nil && session != run.session {
		return contract.InteractionAckBindingMismatch, nil, nil
	}
	run.mu.Lock()
	defer run.mu.Unlock()
	is := run.interactions[b.InteractionID]
	switch {
	case is == nil:
		return contract.InteractionAckUnknownInteraction, nil, nil
	case b.RequestDigest != is.req.RequestDigest:
		return contract.InteractionAckBindingMismatch, nil, nil
	case is.state == interactionExpired:
		return contract.InteractionAckExpired, nil, nil
	case is.state == interactionCancelled:
		return contract.InteractionAckCancelled, nil, nil
	case is.state == interactionResolved:
		if d, err := contract.DigestOf(cmd.Response); err == nil && d == is.resolutionDigest {
			return contract.InteractionAckAlreadyResolvedSame, nil, nil
		}
		return contract.InteractionAckAlreadyResolvedDifferent, nil, nil
	case is.unreachable:
		return contract.InteractionAckTransportFailure, ptr("the answer could not be delivered to the agent; the request is still outstanding"), ptr(true)
	}
	if ok, errs := contract.ValidateInteractionResponseCommand(is.req, cmd); !ok {
		msg := redact("the response does not satisfy the outstanding request: "+strings.Join(errs, "; "), cmd.Response.Data)
		return contract.InteractionAckInvalidResponse, &msg, nil
	}
	digest, err := contract.DigestOf(cmd.Response)
	if err != nil {
		msg := "the response has no canonical form"
		return contract.InteractionAckInvalidResponse, &msg, nil
	}
	response := cmd.Response
	is.state, is.resolution, is.resolutionDigest = interactionResolved, &response, digest
	close(is.resolved)
	return contract.InteractionAckAccepted, nil, nil
}

// redact removes every answer string of data from a message, so an
// acknowledgement never repeats an answer value.
func redact(msg string, data contract.InteractionData) string {
	for _, v := range data {
		var values []string
		switch {
		case v.Text != nil:
			values = append(values, *v.Text)
		case v.Secret != nil:
			values = append(values, v.Secret.HandleID)
		default:
			values = append(values, v.Choices...)
		}
		for _, s := range values {
			if s != "" {
				msg = strings.ReplaceAll(msg, s, "[redacted]")
			}
		}
	}
	return msg
}

// answerRef matches the answer placeholders of a text step:
// {{outcome:ID}} and {{answer:ID.FIELD}}.
var answerRef = regexp.MustCompile(`\{\{(outcome|answer):([^.{}]+)(?:\.([^{}]+))?\}\}`)

// answers replaces the answer placeholders of text with what the run's
// interactions resolved with (see Step.Text). A secret answer is never
// written out.
func (pl *player) answers(text string) string {
	if !strings.Contains(text, "{{outcome:") && !strings.Contains(text, "{{answer:") {
		return text
	}
	run := pl.run
	run.mu.Lock()
	defer run.mu.Unlock()
	return answerRef.ReplaceAllStringFunc(text, func(m string) string {
		sub := answerRef.FindStringSubmatch(m)
		is := run.interactions[sub[2]]
		if is == nil || is.resolution == nil {
			return ""
		}
		if sub[1] == "outcome" {
			return string(is.resolution.Outcome)
		}
		if is.resolution.Outcome != contract.InteractionOutcomeAccepted {
			return ""
		}
		v, ok := is.resolution.Data[sub[3]]
		switch {
		case !ok:
			return ""
		case v.Text != nil:
			return *v.Text
		case v.Number != nil:
			return strconv.FormatFloat(*v.Number, 'g', -1, 64)
		case v.Boolean != nil:
			return strconv.FormatBool(*v.Boolean)
		case v.Secret != nil:
			return ""
		}
		return strings.Join(v.Choices, ", ")
	})
}
