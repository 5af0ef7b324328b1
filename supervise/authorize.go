package supervise

import (
	"context"
	"fmt"
	"time"
)

// DefaultAuthorizeMessageTimeout bounds one call of
// Options.AuthorizeMessage: a hook that has not answered by then refuses
// the message.
const DefaultAuthorizeMessageTimeout = 10 * time.Second

// DownMessageKind says what a DownMessage is.
type DownMessageKind string

// Down message kinds: a steer (steer_agent, a root steer, a
// cross-process steer, a finding a graph routes into a worker) or an
// answer to a worker's question (answer_question).
const (
	DownSteer  DownMessageKind = "steer"
	DownAnswer DownMessageKind = "answer"
)

// DownMessage is a message on its way down to a live worker — or, for a
// root steer, to the run's manager — as Options.AuthorizeMessage sees it
// before it is delivered (§3.6 authorizeMessage).
type DownMessage struct {
	Kind DownMessageKind
	// WorkerID is the destination (the root's id for a root steer) and
	// Profile the name of the profile it runs ("" for the root).
	WorkerID NodeID
	Profile  string
	// Source is who sent it: SteerSourceCoordination for a manager's
	// steer_agent, a cross-process steer's own source (agentrt steer's,
	// a WorkerSteer's), "answer_question" for an answer. OperationID is
	// the steer's operation id ("" for an answer).
	Source      string
	OperationID string
	// Instruction is the text proposed; Interrupt a steer's interrupt
	// flag; QuestionID the question an answer answers.
	Instruction string
	Interrupt   bool
	QuestionID  string
}

// MessageRefusedError is a down message Options.AuthorizeMessage
// refused: it returned an error (Err), panicked, or did not answer
// within DefaultAuthorizeMessageTimeout. The message is not delivered.
type MessageRefusedError struct {
	Worker NodeID
	Reason string
	Err    error
}

func (e *MessageRefusedError) Error() string {
	return "not authorized: " + e.Reason
}

// Unwrap returns the hook's own error (nil for a panic or a timeout).
func (e *MessageRefusedError) Unwrap() error { return e.Err }

// authorizeDown passes m through Options.AuthorizeMessage: the
// instruction to deliver (m's own without a hook, else the hook's,
// possibly narrowed), or a *MessageRefusedError. An empty answer from
// the hook refuses the message; a steer's is held to the bound every
// steer has (1..64 KiB of UTF-8).
func (c *Coordinator) authorizeDown(ctx context.Context, m DownMessage) (string, error) {
	f := c.authorizeMessage
	if f == nil {
		return m.Instruction, nil
	}
	if m.Profile == "" {
		if n, ok := c.scope.Node(m.WorkerID); ok {
			m.Profile = n.Profile
		}
	}
	actx, cancel := context.WithTimeout(ctx, DefaultAuthorizeMessageTimeout)
	defer cancel()
	a, answered := callHook(actx, func(ctx context.Context) (string, error) { return f(ctx, m) })
	switch {
	case !answered:
		a.err = &MessageRefusedError{Worker: m.WorkerID, Reason: fmt.Sprintf("the authorization hook did not answer: %v", context.Cause(actx))}
	case a.panic != nil:
		a.err = &MessageRefusedError{Worker: m.WorkerID, Reason: fmt.Sprintf("the authorization hook panicked: %v", a.panic)}
	case a.err != nil:
		a.err = &MessageRefusedError{Worker: m.WorkerID, Reason: a.err.Error(), Err: a.err}
	}
	if a.err != nil {
		c.logger.Info("supervise: a message down to a worker was refused", "worker", m.WorkerID, "kind", m.Kind, "err", a.err)
		return "", a.err
	}
	switch {
	case a.v == "":
		// Nothing authorized is nothing to deliver: a refusal, not an
		// empty message (an empty answer would decide nothing, and
		// answer_question would blame the manager's arguments).
		return "", &MessageRefusedError{Worker: m.WorkerID, Reason: "the authorization hook returned no instruction"}
	case m.Kind == DownSteer:
		if err := checkSteerMessage(a.v); err != nil {
			return "", &MessageRefusedError{Worker: m.WorkerID, Reason: "the authorized instruction " + err.Error()}
		}
	}
	return a.v, nil
}

// authorizeSteer authorizes the steer req to dest.
func (c *Coordinator) authorizeSteer(ctx context.Context, req SteerRequest, dest NodeID) (string, error) {
	return c.authorizeDown(ctx, DownMessage{Kind: DownSteer, WorkerID: dest, Source: req.Source, OperationID: req.OperationID,
		Instruction: req.Message, Interrupt: req.Interrupt})
}
