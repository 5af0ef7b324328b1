package supervise

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/kernel"
)

// A worker run through KernelExecutor asks its manager through the
// contract's interactions (§3.6 "Questions": worker ask-user creates a
// question {id, from, level: worker, …}): a provider turn that raises an
// interaction request of kind question is waiting on an answer, so the
// executor raises it as the worker's question (Work.Ask) and answers the
// request with the manager's decision:
//
//   - answer: the request resolves accepted, the answer filling the
//     request's answer field (answerField);
//   - defer (or an answer that does not fit the request's form): the
//     request resolves declined, the turn going on without an answer;
//   - no decision before the request is withdrawn (its timeout, the
//     turn's end) or the worker's context ends: nothing is sent, and the
//     question expires.
//
// Requests of other kinds (permission, plan, vendor kinds) are not
// questions for the manager and are left to the provider's own policy.

// askWorker is one worker's question channel through its kernel runs:
// created per Execute, it watches the runs' events (as a kernel.Observer
// around the worker's own), remembers the environments the runs stream
// in (as a provider around the executor's), and keeps one goroutine per
// open question, all ended and waited for by close.
type askWorker struct {
	ctx    context.Context
	node   NodeID
	ask    func(ctx context.Context, q AskArgs) (Decision, error)
	logger *slog.Logger
	// acquiring and running report the worker's environment acquisition
	// (Work.Acquiring, Work.Running); nil: not reported.
	acquiring, running func()

	mu   sync.Mutex
	envs map[string]contract.Environment
	open map[string]context.CancelFunc
	done bool
	wg   sync.WaitGroup
}

func newAskWorker(ctx context.Context, w Work, logger *slog.Logger) *askWorker {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &askWorker{ctx: ctx, node: w.Node, ask: w.Ask, logger: logger, acquiring: w.Acquiring, running: w.Running,
		envs: map[string]contract.Environment{}, open: map[string]context.CancelFunc{}}
}

// close withdraws every open question and waits until their goroutines
// returned; nothing is raised after it.
func (a *askWorker) close() {
	a.mu.Lock()
	a.done = true
	for id, cancel := range a.open {
		cancel()
		delete(a.open, id)
	}
	a.mu.Unlock()
	a.wg.Wait()
}

// withdraw ends the wait on interaction id, when one is open.
func (a *askWorker) withdraw(id string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if cancel, ok := a.open[id]; ok {
		cancel()
		delete(a.open, id)
	}
}

// withdrawAll ends every open wait (the turn they belong to ended).
func (a *askWorker) withdrawAll() {
	a.mu.Lock()
	defer a.mu.Unlock()
	for id, cancel := range a.open {
		cancel()
		delete(a.open, id)
	}
}

// raise turns a question request of the worker's turn into the worker's
// question, answered in the background.
func (a *askWorker) raise(req contract.InteractionRequest) {
	if req.Kind != contract.InteractionKindQuestion || a.ask == nil {
		return
	}
	a.mu.Lock()
	if a.done || a.open[req.ID] != nil {
		a.mu.Unlock()
		return
	}
	env := a.envs[req.Binding.EnvironmentID]
	ctx, cancel := context.WithCancel(a.ctx)
	a.open[req.ID] = cancel
	a.wg.Add(1)
	a.mu.Unlock()
	go func() {
		defer a.wg.Done()
		defer a.withdraw(req.ID)
		a.answer(ctx, env, &req)
	}()
}

// answer asks the manager req's question and resolves req with the
// decision, bounded by ctx.
func (a *askWorker) answer(ctx context.Context, env contract.Environment, req *contract.InteractionRequest) {
	d, err := a.ask(ctx, askArgsOf(req))
	if err != nil {
		// The worker stopped waiting (its turn or its run ended) or the
		// question was refused: nothing is sent, and the turn goes on
		// under the request's own timeout policy.
		a.logger.Debug("supervise: a worker's question got no decision", "node", a.node, "interaction", req.ID, "err", err)
		return
	}
	responder, ok := env.(contract.InteractionResponder)
	if !ok {
		a.logger.Warn("supervise: the worker's environment takes no interaction responses; its question stays unanswered",
			"node", a.node, "interaction", req.ID)
		return
	}
	resp := responseOf(req, d)
	cmd, err := contract.NewInteractionResponseCommand(kernel.NewID("answer"), req.ResponseBinding(), resp)
	if err != nil {
		a.logger.Error("supervise: building a worker's answer", "node", a.node, "interaction", req.ID, "err", err)
		return
	}
	// A retryable refusal (the answer channel is down) is tried again
	// a few times; every other acknowledgement is final.
	for attempt := 0; ; attempt++ {
		ack, err := responder.RespondToInteraction(ctx, cmd)
		switch {
		case err != nil:
			a.logger.Warn("supervise: answering a worker's question", "node", a.node, "interaction", req.ID, "err", err)
			return
		case ack.Status == contract.InteractionAckTransportFailure && attempt < answerRetries:
			select {
			case <-ctx.Done():
				return
			case <-time.After(answerRetryDelay << attempt):
			}
			continue
		case ack.Status != contract.InteractionAckAccepted && ack.Status != contract.InteractionAckAlreadyResolvedSame:
			a.logger.Warn("supervise: a worker's answer was not accepted", "node", a.node, "interaction", req.ID, "status", ack.Status)
		}
		return
	}
}

// How often, and after how long, a retryable refusal of an answer is
// tried again (doubling).
const (
	answerRetries    = 3
	answerRetryDelay = 100 * time.Millisecond
)

// askArgsOf is the worker's question a question request asks: the
// request's title (and body), the first select field's options, and an
// urgency of blocks-step — the turn waits — unless the request carries
// a default it applies on timeout (continue-without).
func askArgsOf(req *contract.InteractionRequest) AskArgs {
	q := AskArgs{Level: "worker", Question: req.Title, Urgency: UrgencyBlocksStep,
		Reason: "the worker's turn waits for an answer (interaction " + req.ID + ")"}
	if req.Body != nil && *req.Body != "" {
		q.Question += "\n\n" + *req.Body
	}
	if req.Default != nil && req.OnTimeout != nil && *req.OnTimeout == contract.OnTimeoutDefault {
		q.Urgency = UrgencyContinueWithout
	}
	// Within a question's bounds: the text clipped, and the options
	// offered only when they all fit (the answer is matched against the
	// request's own options either way).
	q.Question = clip(q.Question, MaxQuestionBytes/2)
	if f := answerField(req); f != nil && len(f.Options) <= MaxQuestionOptions {
		opts := make([]QuestionOption, 0, len(f.Options))
		for _, o := range f.Options {
			opts = append(opts, QuestionOption{Label: o.Value})
		}
		if (AskArgs{Question: q.Question, Reason: q.Reason, Options: opts}).size() <= MaxQuestionBytes {
			q.Options = opts
		}
	}
	return q
}

// answerField is the field of req's form a manager's answer fills: the
// first required text, select, number or boolean field, else the first
// such field; nil when the form has none (secrets are never the
// manager's to give).
func answerField(req *contract.InteractionRequest) *contract.InteractionField {
	var first *contract.InteractionField
	for i := range req.AnswerSpec.Fields {
		f := &req.AnswerSpec.Fields[i]
		switch f.Type {
		case contract.InteractionFieldTypeText, contract.InteractionFieldTypeSelect, contract.InteractionFieldTypeNumber, contract.InteractionFieldTypeBoolean:
		default:
			continue
		}
		if f.Required != nil && *f.Required {
			return f
		}
		if first == nil {
			first = f
		}
	}
	return first
}

// responseOf is the response that carries decision d to req: accepted
// with the answer when it fits req's form (as ValidateInteractionResponse
// checks), declined otherwise and for a deferral or an escalation — or
// cancelled, when req does not allow declined.
func responseOf(req *contract.InteractionRequest, d Decision) contract.InteractionResponse {
	if d.Kind == "answer" {
		resp := contract.InteractionResponse{ID: req.ID, Outcome: contract.InteractionOutcomeAccepted}
		if f := answerField(req); f != nil {
			if v, ok := answerValue(f, d.Answer); ok {
				resp.Data = contract.InteractionData{f.Name: v}
			}
		}
		if ok, _ := contract.ValidateInteractionResponse(req, &resp); ok {
			return resp
		}
	}
	for _, o := range []contract.InteractionOutcome{contract.InteractionOutcomeDeclined, contract.InteractionOutcomeCancelled} {
		resp := contract.InteractionResponse{ID: req.ID, Outcome: o}
		if ok, _ := contract.ValidateInteractionResponse(req, &resp); ok {
			return resp
		}
	}
	return contract.InteractionResponse{ID: req.ID, Outcome: contract.InteractionOutcomeDeclined}
}

// answerValue is answer as a value of field f: a select's option by value
// or label (case-insensitive), or a write-in when f allows one; a
// number; a boolean (true/false, yes/no).
func answerValue(f *contract.InteractionField, answer string) (contract.InteractionDataValue, bool) {
	answer = strings.TrimSpace(answer)
	switch f.Type {
	case contract.InteractionFieldTypeText:
		return contract.TextAnswer(answer), true
	case contract.InteractionFieldTypeSelect:
		for _, o := range f.Options {
			if strings.EqualFold(o.Value, answer) || strings.EqualFold(o.Label, answer) {
				return contract.ChoiceAnswer(o.Value), true
			}
		}
		if f.AllowCustom != nil && *f.AllowCustom && answer != "" {
			return contract.ChoiceAnswer(answer), true
		}
	case contract.InteractionFieldTypeNumber:
		if n, err := strconv.ParseFloat(answer, 64); err == nil {
			return contract.NumberAnswer(n), true
		}
	case contract.InteractionFieldTypeBoolean:
		switch strings.ToLower(answer) {
		case "true", "yes", "y":
			return contract.BooleanAnswer(true), true
		case "false", "no", "n":
			return contract.BooleanAnswer(false), true
		}
	}
	return contract.InteractionDataValue{}, false
}

// provider wraps p so that the environments the worker's runs create are
// known to answer their requests, and their acquisition is reported.
// The environment itself is returned unwrapped: the kernel keeps every
// ability it has.
func (a *askWorker) provider(p contract.Provider) contract.Provider {
	return askingProvider{Provider: p, a: a}
}

type askingProvider struct {
	contract.Provider
	a *askWorker
}

// Create reports the worker acquiring its environment, creates it, and
// reports it running once it exists.
func (p askingProvider) Create(ctx context.Context, in *contract.CreateInput) (contract.Environment, error) {
	if p.a.acquiring != nil {
		p.a.acquiring()
	}
	env, err := p.Provider.Create(ctx, in)
	if err != nil {
		return nil, err
	}
	if env == nil {
		return nil, errors.New("supervise: the provider created no environment")
	}
	p.a.mu.Lock()
	p.a.envs[env.ID()] = env
	p.a.mu.Unlock()
	if p.a.running != nil {
		p.a.running()
	}
	return env, nil
}

// observer returns the kernel.Observer of the worker's runs: inner's
// hooks (inner may be nil), and each question request raised.
func (a *askWorker) observer(inner kernel.Observer) kernel.Observer {
	return askObserver{a: a, passObserver: passObserver{inner}}
}

type askObserver struct {
	a *askWorker
	passObserver
}

// interactionResolved is the event type a provider reports an
// interaction resolved with (by a response, or its default on timeout).
const interactionResolved = "interaction.resolved"

func (o askObserver) Event(ctx context.Context, e contract.EnvironmentEvent) error {
	switch n := e.Normalized; {
	case n != nil && n.Interaction != nil:
		o.a.raise(n.Interaction.Request)
	case n != nil && n.InteractionCancel != nil:
		o.a.withdraw(n.InteractionCancel.ID)
	case e.Type == interactionResolved:
		if id, ok := e.Data["interactionId"]; ok {
			o.a.withdraw(id.Str())
		}
	}
	return o.passObserver.Event(ctx, e)
}

// TurnEnded withdraws the turn's open questions: no answer can reach a
// turn that ended.
func (o askObserver) TurnEnded(ctx context.Context, t kernel.TurnEnd) error {
	o.a.withdrawAll()
	return o.passObserver.TurnEnded(ctx, t)
}
