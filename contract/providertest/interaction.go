package providertest

import (
	"context"
	"fmt"
	"iter"
	"slices"
	"strings"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
)

// interactionResponse is the testkit's interaction response family (spec
// L.3, F.3, F.4; checklist INT-01, INT-09..INT-13, INT-17), run once
// against the environment's responder and once against a session's:
// wrong-bindings (unknown_run; binding_mismatch for another environment
// or session; unknown_interaction), invalid-response (an undeclared
// field), accepted, operation-replay (the identical acknowledgement),
// same-response (already_resolved_same), different-response-conflict
// (already_resolved_different, also under the original operation id),
// expired, cancelled and transport_failure. Every acknowledgement is
// valid, echoes the command's operation id, binding and digest, and
// carries no answer value and no digest of the answer (seed 000). The
// provider originates every request itself (Options.Interactions).
func interactionResponse(t TB, p contract.Provider, opts Options) {
	env := create(t, p, opts.createInput(""))
	c := envCaps(t, p, env)
	if c.Interactions == nil {
		t.Skip("the provider declares no interactions")
	}
	io := opts.Interactions
	if io.Prompt == "" || io.ExpirePrompt == "" || io.UnreachablePrompt == "" {
		t.Fatal("interactions are declared: Options.Interactions.Prompt, ExpirePrompt and UnreachablePrompt must say how to make the provider originate requests")
	}
	t.Step("environment", func(t TB) { interactionFamily(t, p, env, opts, false) })
	t.Step("session", func(t TB) {
		if !c.Streaming.Detach {
			t.Skip("the provider declares no detach: the session responder is reached through a detached run")
		}
		interactionFamily(t, p, env, opts, true)
	})
}

// originated is a turn that raised an interaction request and waits for
// its answer.
type originated struct {
	req     *contract.InteractionRequest
	respond func(context.Context, *contract.InteractionResponseCommand) (*contract.InteractionAcknowledgement, error)
	next    func() (contract.EnvironmentEvent, error, bool)
	stop    func()
	cancel  func()
}

// finish reads the rest of the turn.
func (o *originated) finish() ([]contract.EnvironmentEvent, error) {
	defer o.stop()
	var out []contract.EnvironmentEvent
	for {
		e, err, ok := o.next()
		if !ok {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, e)
	}
}

// originate plays prompt — streamed, or dispatched and followed through
// its session — until the provider raises an interaction request.
func originate(t TB, p contract.Provider, env contract.Environment, prompt string, viaSession bool) *originated {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	t.Cleanup(cancel)
	o := &originated{cancel: cancel}
	var events iter.Seq2[contract.EnvironmentEvent, error]
	if viaSession {
		d := ability[contract.Dispatcher](t, env, "Dispatcher", "streaming.detach")
		opener := ability[contract.SessionOpener](t, env, "SessionOpener", "streaming.detach")
		ref, err := d.Dispatch(ctx, &contract.TurnInput{Prompt: &prompt, Detach: ptr(true)})
		if err != nil {
			t.Fatalf("Dispatch: %v", err)
		}
		s, err := opener.Session(ctx, ref.ID, ref.ControlRef)
		if err != nil {
			t.Fatalf("Session: %v", err)
		}
		o.respond = ability[contract.InteractionResponder](t, s, "InteractionResponder (session)", "interactions").RespondToInteraction
		o.cancel = func() { _ = s.Cancel(context.Background()) }
		t.Cleanup(o.cancel)
		events = s.Events(ctx, "", "")
	} else {
		o.respond = ability[contract.InteractionResponder](t, env, "InteractionResponder", "interactions").RespondToInteraction
		events = env.Stream(ctx, &contract.TurnInput{Prompt: &prompt})
	}
	o.next, o.stop = iter.Pull2(events)
	t.Cleanup(o.stop)
	for {
		e, err, ok := o.next()
		if !ok {
			t.Fatalf("the turn for %q ended without originating an interaction request", prompt)
		}
		if err != nil {
			t.Fatalf("the turn for %q broke before originating an interaction request: %v", prompt, err)
		}
		if e.Normalized != nil && e.Normalized.Interaction != nil {
			req := e.Normalized.Interaction.Request
			o.req = &req
			break
		}
	}
	if _, err := contract.Validate(contract.KindInteractionRequest, contract.InteractionRequestSchema, o.req); err != nil {
		t.Fatalf("the originated request is invalid: %v", err)
	}
	b := o.req.Binding
	if b.Provider != p.Name() || b.EnvironmentID != env.ID() {
		t.Fatalf("the request is bound to %s/%s, not %s/%s", b.Provider, b.EnvironmentID, p.Name(), env.ID())
	}
	return o
}

// DeriveAnswer returns an accepted answer to req from its answer spec: a
// permission is granted once (allow_once, else its first grant); other
// requests answer every field — text with a distinctive marker, secrets
// with a one-use handle, numbers within bounds, booleans true, selects
// with their first option.
func DeriveAnswer(req *contract.InteractionRequest) contract.InteractionData {
	data := contract.InteractionData{}
	for i, f := range req.AnswerSpec.Fields {
		if req.Kind == contract.InteractionKindPermission {
			if f.Name == contract.PermissionGrantField && len(f.Options) > 0 {
				grant := f.Options[0].Value
				if slices.ContainsFunc(f.Options, func(o contract.InteractionFieldOption) bool { return o.Value == string(contract.GrantAllowOnce) }) {
					grant = string(contract.GrantAllowOnce)
				}
				data[f.Name] = contract.ChoiceAnswer(grant)
			}
			continue
		}
		switch f.Type {
		case contract.InteractionFieldTypeText:
			v := fmt.Sprintf("providertest-answer-%d", i)
			if f.MaxLength != nil && len(v) > *f.MaxLength {
				v = v[:*f.MaxLength]
			}
			data[f.Name] = contract.TextAnswer(v)
		case contract.InteractionFieldTypeSecret:
			data[f.Name] = contract.SecretAnswer(fmt.Sprintf("providertest-secret-handle-%d", i))
		case contract.InteractionFieldTypeNumber:
			v := 1.0
			if f.Min != nil {
				v = *f.Min
			} else if f.Max != nil && *f.Max < v {
				v = *f.Max
			}
			data[f.Name] = contract.NumberAnswer(v)
		case contract.InteractionFieldTypeBoolean:
			data[f.Name] = contract.BooleanAnswer(true)
		case contract.InteractionFieldTypeSelect:
			if len(f.Options) > 0 {
				data[f.Name] = contract.ChoiceAnswer(f.Options[0].Value)
			}
		}
	}
	return data
}

// answerDisclosures are what an acknowledgement must never carry: the
// free-text and secret-handle values of a response, and digests of the
// response, its data and each value.
func answerDisclosures(r contract.InteractionResponse) []string {
	var out []string
	add := func(x any) {
		if d, err := contract.DigestOf(x); err == nil {
			out = append(out, d)
		}
	}
	add(r)
	if r.Data != nil {
		add(r.Data)
	}
	for _, v := range r.Data {
		add(v)
		switch {
		case v.Text != nil && len(*v.Text) >= 6:
			out = append(out, *v.Text)
		case v.Secret != nil:
			out = append(out, v.Secret.HandleID)
		}
	}
	return out
}

func responseCommand(t TB, op string, b contract.InteractionBinding, r contract.InteractionResponse) *contract.InteractionResponseCommand {
	t.Helper()
	cmd, err := contract.NewInteractionResponseCommand(op, b, r)
	if err != nil {
		t.Fatalf("building command %s: %v", op, err)
	}
	return cmd
}

// expectAck sends cmd and checks the acknowledgement: valid, status want,
// echoing the command, disclosing nothing of the answer.
func expectAck(t TB, o *originated, cmd *contract.InteractionResponseCommand, want contract.InteractionAcknowledgementStatus) *contract.InteractionAcknowledgement {
	t.Helper()
	ack, err := o.respond(context.Background(), cmd)
	if err != nil {
		t.Fatalf("RespondToInteraction (%s): %v", cmd.OperationID, err)
	}
	if _, err := contract.Validate(contract.KindInteractionAcknowledgement, contract.InteractionAcknowledgementSchema, ack); err != nil {
		t.Fatalf("the acknowledgement of %s is invalid: %v", cmd.OperationID, err)
	}
	if ack.Status != want {
		t.Errorf("%s: status %s, want %s", cmd.OperationID, ack.Status, want)
	}
	if !contract.InteractionAcknowledgementMatchesCommand(cmd, ack) {
		t.Errorf("%s: the acknowledgement does not echo the command's operation id, binding and digest", cmd.OperationID)
	}
	v, err := canonjson.ToValue(ack)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := canonjson.Canonical(v)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range answerDisclosures(cmd.Response) {
		if strings.Contains(string(raw), s) {
			t.Errorf("%s: the acknowledgement discloses the answer (%q)", cmd.OperationID, s)
		}
	}
	return ack
}

func interactionFamily(t TB, p contract.Provider, env contract.Environment, opts Options, viaSession bool) {
	io := opts.Interactions
	o := originate(t, p, env, io.Prompt, viaSession)
	req := o.req
	answer := io.Answer
	if answer == nil {
		answer = DeriveAnswer
	}
	response := contract.InteractionResponse{ID: req.ID, Outcome: contract.InteractionOutcomeAccepted, Data: answer(req)}
	if ok, errs := contract.ValidateInteractionResponse(req, &response); !ok {
		t.Fatalf("the prepared answer is invalid (%s); set Options.Interactions.Answer", strings.Join(errs, "; "))
	}
	op := "providertest-interaction"
	if viaSession {
		op += "-session"
	}
	binding := req.ResponseBinding()
	command := responseCommand(t, op, binding, response)

	t.Step("wrong-bindings", func(t TB) {
		b := binding
		b.RunID += "-wrong"
		expectAck(t, o, responseCommand(t, op+"-wrong-run", b, response), contract.InteractionAckUnknownRun)
		b = binding
		b.EnvironmentID += "-wrong"
		expectAck(t, o, responseCommand(t, op+"-wrong-environment", b, response), contract.InteractionAckBindingMismatch)
		if binding.SessionID != nil {
			b = binding
			b.SessionID = ptr(*binding.SessionID + "-wrong")
			expectAck(t, o, responseCommand(t, op+"-wrong-session", b, response), contract.InteractionAckBindingMismatch)
		}
		b = binding
		b.InteractionID += "-wrong"
		r := response
		r.ID = b.InteractionID
		expectAck(t, o, responseCommand(t, op+"-wrong-interaction", b, r), contract.InteractionAckUnknownInteraction)
	})
	t.Step("invalid-response", func(t TB) {
		r := response
		r.Data = contract.InteractionData{}
		for k, v := range response.Data {
			r.Data[k] = v
		}
		r.Data["testkit-undeclared-field"] = contract.TextAnswer("must be rejected")
		ack := expectAck(t, o, responseCommand(t, op+"-invalid-response", binding, r), contract.InteractionAckInvalidResponse)
		if ack.Message == nil {
			t.Error("invalid_response needs a message")
		}
	})
	var accepted *contract.InteractionAcknowledgement
	if !t.Step("accepted", func(t TB) { accepted = expectAck(t, o, command, contract.InteractionAckAccepted) }) {
		return
	}
	t.Step("operation-replay", func(t TB) {
		again := expectAck(t, o, command, contract.InteractionAckAccepted)
		if a, b := digest(t, again), digest(t, accepted); a != b {
			t.Error("the same interaction operation returned a different acknowledgement")
		}
	})
	t.Step("same-response", func(t TB) {
		expectAck(t, o, responseCommand(t, op+"-same-response", binding, response), contract.InteractionAckAlreadyResolvedSame)
	})
	t.Step("different-response-conflict", func(t TB) {
		declined := contract.InteractionResponse{ID: req.ID, Outcome: contract.InteractionOutcomeDeclined}
		expectAck(t, o, responseCommand(t, op+"-different-response", binding, declined), contract.InteractionAckAlreadyResolvedDifferent)
		expectAck(t, o, responseCommand(t, op, binding, declined), contract.InteractionAckAlreadyResolvedDifferent)
	})
	t.Step("answered-turn-completes", func(t TB) {
		rest, err := o.finish()
		if err != nil {
			t.Fatalf("the answered turn broke: %v", err)
		}
		if _, ok := terminal(rest); !ok {
			t.Error("the answered turn did not reach a terminal event")
		}
	})
	valid := func(t TB, x *originated, op string) *contract.InteractionResponseCommand {
		r := contract.InteractionResponse{ID: x.req.ID, Outcome: contract.InteractionOutcomeAccepted, Data: answer(x.req)}
		return responseCommand(t, op, x.req.ResponseBinding(), r)
	}
	t.Step("expired", func(t TB) {
		x := originate(t, p, env, io.ExpirePrompt, viaSession)
		if _, err := x.finish(); err != nil {
			t.Fatalf("the expiring turn broke: %v", err)
		}
		expectAck(t, x, valid(t, x, op+"-expired"), contract.InteractionAckExpired)
	})
	t.Step("cancelled", func(t TB) {
		x := originate(t, p, env, io.Prompt, viaSession)
		x.cancel()
		_, _ = x.finish()
		expectAck(t, x, valid(t, x, op+"-cancelled"), contract.InteractionAckCancelled)
	})
	t.Step("transport_failure", func(t TB) {
		x := originate(t, p, env, io.UnreachablePrompt, viaSession)
		ack := expectAck(t, x, valid(t, x, op+"-transport"), contract.InteractionAckTransportFailure)
		if ack.Message == nil || ack.Retryable == nil {
			t.Error("a transport failure must explain itself and say whether retry is safe")
		}
		x.cancel()
		_, _ = x.finish()
	})
}

// digest is the canonical digest of x.
func digest(t TB, x any) string {
	t.Helper()
	d, err := contract.DigestOf(x)
	if err != nil {
		t.Fatal(err)
	}
	return d
}
