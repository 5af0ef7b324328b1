package retained_test

import (
	"context"
	"iter"
	"sync"
	"sync/atomic"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/providers/scripted"
)

// wrapped is a scripted provider whose environments and sessions the test
// can observe and alter: rewrite the event stream a session replays,
// count cancellation calls and their acknowledgements, or hide the
// cancellation ability.
type wrapped struct {
	*scripted.Provider
	// events, when set, rewrites every session's event stream.
	events func(iter.Seq2[contract.EnvironmentEvent, error]) iter.Seq2[contract.EnvironmentEvent, error]
	// noCancel hides RunCanceller from sessions.
	noCancel bool
	// dispatchErr, when set, is returned by Dispatch after the provider
	// admitted the turn: an answer lost on the way back.
	dispatchErr error
	// cancelErr, when set, is what CancelRun returns (the answer is lost).
	cancelErr error
	// cancelHangs makes CancelRun wait for its context: a provider that
	// stops answering.
	cancelHangs atomic.Bool
	// statusUnknown makes sessions report their status as unknown.
	statusUnknown bool
	// refuseNative, when set, makes sessions native continuers that
	// prove the real boundary and refuse every continuation with this
	// status, admitting nothing.
	refuseNative string

	// requests, when set, records every create and dispatch the
	// provider receives (shared by a reconnected client).
	requests *requestLog

	mu      sync.Mutex
	cancels []string // the status of every acknowledgement, in order
	created []string // the id of every environment Create returned
}

// requestLog is what a provider received: each create's and each
// dispatch's credential request, and each dispatched turn's canonical
// bytes.
type requestLog struct {
	mu          sync.Mutex
	credentials []*contract.CredentialRequest
	occasions   []string // "create" or "dispatch", in order
	turns       [][]byte
}

func (l *requestLog) add(occasion string, c *contract.CredentialRequest, turn *contract.TurnInput) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.occasions = append(l.occasions, occasion)
	l.credentials = append(l.credentials, c)
	if turn != nil {
		v, _ := canonjson.ToValue(turn)
		l.turns = append(l.turns, canonjson.Marshal(v))
	}
}

func (w *wrapped) acks() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.cancels...)
}

func (w *wrapped) wrap(env contract.Environment, err error) (contract.Environment, error) {
	if env == nil || err != nil {
		return env, err
	}
	return &wrappedEnv{Environment: env, w: w}, nil
}

func (w *wrapped) Create(ctx context.Context, in *contract.CreateInput) (contract.Environment, error) {
	w.requests.add("create", in.Credential, nil)
	env, err := w.Provider.Create(ctx, in)
	if err == nil {
		w.mu.Lock()
		w.created = append(w.created, env.ID())
		w.mu.Unlock()
	}
	return w.wrap(env, err)
}

func (w *wrapped) Get(ctx context.Context, id string) (contract.Environment, error) {
	return w.wrap(w.Provider.Get(ctx, id))
}

type wrappedEnv struct {
	contract.Environment
	w *wrapped
}

func (e *wrappedEnv) Dispatch(ctx context.Context, in *contract.TurnInput) (*contract.SessionRef, error) {
	e.w.requests.add("dispatch", in.Credential, in)
	ref, err := e.Environment.(contract.Dispatcher).Dispatch(ctx, in)
	if err == nil && e.w.dispatchErr != nil {
		return nil, e.w.dispatchErr
	}
	return ref, err
}

func (e *wrappedEnv) Session(ctx context.Context, id string, ref *contract.RunControlRef) (contract.Session, error) {
	s, err := e.Environment.(contract.SessionOpener).Session(ctx, id, ref)
	if err != nil {
		return nil, err
	}
	ws := &wrappedSession{Session: s, w: e.w}
	if e.w.refuseNative != "" {
		return &refusingSession{cancellingSession{ws}}, nil
	}
	if e.w.noCancel {
		return ws, nil
	}
	return &cancellingSession{ws}, nil
}

// refusingSession proves its session's real boundary and refuses every
// native continuation (wrapped.refuseNative), admitting nothing.
type refusingSession struct{ cancellingSession }

func (s *refusingSession) ContextBoundary(ctx context.Context) (*contract.NativeContextBoundaryProof, error) {
	return s.Session.(contract.NativeContinuer).ContextBoundary(ctx)
}

func (s *refusingSession) ContinueNative(_ context.Context, req *contract.NativeContextContinuationRequest, _ contract.NativeContinuationOptions) (*contract.NativeContinuationResult, error) {
	msg := "refused by the test"
	return &contract.NativeContinuationResult{Acknowledgement: contract.NativeContextContinuationAcknowledgement{
		OperationID: req.OperationID, RequestDigest: req.RequestDigest, Status: s.w.refuseNative, Message: &msg}}, nil
}

type wrappedSession struct {
	contract.Session
	w *wrapped
}

func (s *wrappedSession) Events(ctx context.Context, since, executionID string) iter.Seq2[contract.EnvironmentEvent, error] {
	evs := s.Session.Events(ctx, since, executionID)
	if s.w.events != nil {
		return s.w.events(evs)
	}
	return evs
}

type cancellingSession struct{ *wrappedSession }

func (s *wrappedSession) Status(ctx context.Context) (contract.SessionStatus, bool, error) {
	if s.w.statusUnknown {
		return "", false, nil
	}
	return s.Session.Status(ctx)
}

func (s *cancellingSession) CancelRun(ctx context.Context, req *contract.RunCancellationRequest) (*contract.RunCancellationAcknowledgement, error) {
	if s.w.cancelErr != nil {
		return nil, s.w.cancelErr
	}
	if s.w.cancelHangs.Load() {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	ack, err := s.Session.(contract.RunCanceller).CancelRun(ctx, req)
	if err == nil {
		s.w.mu.Lock()
		s.w.cancels = append(s.w.cancels, ack.Status)
		s.w.mu.Unlock()
	}
	return ack, err
}
