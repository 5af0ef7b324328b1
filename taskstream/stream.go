package taskstream

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"iter"
	"time"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/internal/boundediter"
)

// Task is what the turn is for.
type Task struct {
	ID       string                     `json:"id"`
	Intent   string                     `json:"intent"`
	Domain   string                     `json:"domain,omitzero"`
	Inputs   map[string]canonjson.Value `json:"inputs,omitzero"`
	Metadata map[string]canonjson.Value `json:"metadata,omitzero"`
}

// Input is what the backend is given: the task and the caller's message.
type Input struct {
	Task    Task
	Message string
	Inputs  map[string]canonjson.Value
}

// BackendContext is what a backend knows about the turn.
type BackendContext struct {
	Task      Task
	Knowledge Readiness
	// Session is the session the turn runs in (zero in Start).
	Session Session
}

// Backend executes a task's turn and yields its events (text_delta,
// reasoning_delta, tool_call, tool_result, llm_call, …; the lifecycle
// events are the stream's own). A failure is the sequence's error; a
// transport failure a *TransportError. A backend may also implement
// Starter, Resumer and Stopper.
type Backend interface {
	Kind() string
	Stream(ctx context.Context, in Input, bc BackendContext) iter.Seq2[Event, error]
}

// Starter opens a backend session; requestedID is the caller's session
// id, or "".
type Starter interface {
	Start(ctx context.Context, in Input, bc BackendContext, requestedID string) (Session, error)
}

// Resumer resumes a recorded session.
type Resumer interface {
	Resume(ctx context.Context, s Session, in Input, bc BackendContext) (Session, error)
}

// Stopper stops a session after a failure; reason says why.
type Stopper interface {
	Stop(ctx context.Context, s Session, reason string) error
}

// StopTimeout bounds a backend's Stop after a failure.
const StopTimeout = 5 * time.Second

// BackendGrace is how long a backend's stream has to end once the turn's
// context ended: past it the turn ends aborted without waiting for the
// backend any longer.
const BackendGrace = 5 * time.Second

// Options configure Run.
type Options struct {
	Task    Task
	Backend Backend
	Input   Input
	// Knowledge gates the task on knowledge readiness; without it the
	// task is ready.
	Knowledge Knowledge
	// Sessions, when set, keeps the session and every event emitted
	// after it was created.
	Sessions SessionStore
	// SessionID names the session to create, or to resume with Resume.
	SessionID string
	// Resume resumes SessionID when Sessions has it (a session recorded
	// under another backend kind is a *SessionMismatchError).
	Resume bool
	// MinimumReadinessScore is DefaultMinimumReadinessScore when nil.
	MinimumReadinessScore *float64
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

// RunAgentTaskStream is Run under the name the seeds give it (spec
// §3.2, runAgentTaskStream): one agent turn as the runtime's stream
// vocabulary, from task_start to a guaranteed final.
func RunAgentTaskStream(ctx context.Context, o Options) iter.Seq2[Event, error] { return Run(ctx, o) }

// Run runs the turn and yields its events. Whatever the backend does,
// a run that reached its backend ends with task_end and final; a backend
// failure is reported in the stream (backend_error), never as the
// sequence's error. The sequence's error is for what fails before the
// backend runs: invalid options, the knowledge provider, the session
// store, a session mismatch, a backend that cannot start a session.
func Run(ctx context.Context, o Options) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		r := &run{o: o, now: o.Now, yield: yield}
		if r.now == nil {
			r.now = time.Now
		}
		if err := r.check(); err != nil {
			yield(Event{}, err)
			return
		}
		r.do(ctx)
	}
}

type run struct {
	o       Options
	now     func() time.Time
	yield   func(Event, error) bool
	stopped bool
	session *Session
}

func (r *run) check() error {
	var errs []error
	if r.o.Backend == nil {
		errs = append(errs, errors.New("taskstream: a backend is required"))
	} else if r.o.Backend.Kind() == "" {
		errs = append(errs, errors.New("taskstream: the backend has no kind"))
	}
	if r.o.Task.ID == "" {
		errs = append(errs, errors.New("taskstream: the task needs an id"))
	}
	if m := r.o.MinimumReadinessScore; m != nil {
		if _, err := Decide(Readiness{}, *m); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// emit stamps and yields e, recording it in the session store once a
// session exists. It reports whether the consumer wants more.
func (r *run) emit(ctx context.Context, e Event) bool {
	if r.stopped {
		return false
	}
	if e.Timestamp.IsZero() {
		e.Timestamp = r.now()
	}
	e.TaskID = r.o.Task.ID
	if r.session != nil {
		if e.Session == nil {
			s := *r.session
			e.Session = &s
		}
		if st := r.o.Sessions; st != nil {
			if err := st.AppendEvent(context.WithoutCancel(ctx), r.session.ID, e); err != nil {
				r.stopped = true
				r.yield(Event{}, fmt.Errorf("taskstream: recording a %s event: %w", e.Type, err))
				return false
			}
		}
	}
	if !r.yield(e, nil) {
		r.stopped = true
	}
	return !r.stopped
}

func (r *run) fail(err error) {
	if !r.stopped {
		r.stopped = true
		r.yield(Event{}, err)
	}
}

func (r *run) do(ctx context.Context) {
	o := r.o
	if !r.emit(ctx, Event{Type: EventTaskStart}) || !r.emit(ctx, Event{Type: EventReadinessStart}) {
		return
	}
	knowledge, ok := r.readiness(ctx)
	if !ok {
		return
	}
	minimum := DefaultMinimumReadinessScore
	if o.MinimumReadinessScore != nil {
		minimum = *o.MinimumReadinessScore
	}
	decision, _ := Decide(knowledge, minimum) // checked in check
	if !r.emit(ctx, Event{Type: EventReadinessEnd, Knowledge: &knowledge, Decision: &decision}) {
		return
	}
	if decision.Status == DecisionBlocked {
		reason := "knowledge readiness blocked: " + decision.Reason
		if r.emit(ctx, Event{Type: EventTaskEnd, Status: StatusBlocked, Reason: reason}) {
			r.emit(ctx, Event{Type: EventFinal, Status: StatusBlocked, Reason: reason})
		}
		return
	}
	in := o.Input
	in.Task = o.Task
	bc := BackendContext{Task: o.Task, Knowledge: knowledge}
	session, resumed, ok := r.openSession(ctx, in, bc)
	if !ok {
		return
	}
	r.session = &session
	bc.Session = session
	kind := EventSessionCreated
	if resumed {
		kind = EventSessionResumed
	}
	if !r.emit(ctx, Event{Type: kind}) || !r.emit(ctx, Event{Type: EventBackendStart, Backend: o.Backend.Kind()}) {
		return
	}
	r.drive(ctx, in, bc)
}

// readiness builds the knowledge report, runs the preflight (questions,
// acquisition) and refreshes the report when the preflight brought
// something.
func (r *run) readiness(ctx context.Context) (Readiness, bool) {
	k := r.o.Knowledge
	if k == nil {
		return Readiness{Score: 1, Reason: "no knowledge requirements", BlockingMissing: []Requirement{}, NonBlockingGaps: []Requirement{}}, true
	}
	rep, err := k.Readiness(ctx, r.o.Task)
	if err != nil {
		r.fail(fmt.Errorf("taskstream: knowledge readiness: %w", err))
		return Readiness{}, false
	}
	var answers map[string]string
	var evidence []string
	if qs := questionsFor(rep); len(qs) > 0 {
		if qa, ok := k.(QuestionAnswerer); ok {
			if !r.emit(ctx, Event{Type: EventQuestionsStart, Questions: qs}) {
				return Readiness{}, false
			}
			if answers, err = qa.AnswerQuestions(ctx, qs, r.o.Task); err != nil {
				r.fail(fmt.Errorf("taskstream: answering the knowledge questions: %w", err))
				return Readiness{}, false
			}
			if !r.emit(ctx, Event{Type: EventQuestionsEnd, Questions: qs, UserAnswers: answers}) {
				return Readiness{}, false
			}
		}
	}
	if plans := plansFor(rep); len(plans) > 0 {
		if aq, ok := k.(Acquirer); ok {
			if !r.emit(ctx, Event{Type: EventAcquisitionStart, AcquisitionPlans: plans}) {
				return Readiness{}, false
			}
			if evidence, err = aq.Acquire(ctx, plans, r.o.Task); err != nil {
				r.fail(fmt.Errorf("taskstream: acquiring knowledge: %w", err))
				return Readiness{}, false
			}
			if !r.emit(ctx, Event{Type: EventAcquisitionEnd, AcquisitionPlans: plans, AcquiredEvidenceIDs: evidence}) {
				return Readiness{}, false
			}
		}
	}
	if rf, ok := k.(Refresher); ok && (len(answers) > 0 || len(evidence) > 0) {
		if !r.emit(ctx, Event{Type: EventReadinessStart}) {
			return Readiness{}, false
		}
		if rep, err = rf.RefreshReadiness(ctx, r.o.Task, rep, answers, evidence); err != nil {
			r.fail(fmt.Errorf("taskstream: refreshing knowledge readiness: %w", err))
			return Readiness{}, false
		}
	}
	return rep, true
}

// openSession resumes the recorded session when asked and there is one,
// otherwise starts a new one; the session store records it.
func (r *run) openSession(ctx context.Context, in Input, bc BackendContext) (Session, bool, bool) {
	o := r.o
	var existing *Session
	if o.Sessions != nil && o.SessionID != "" {
		var err error
		if existing, err = o.Sessions.Get(ctx, o.SessionID); err != nil {
			r.fail(fmt.Errorf("taskstream: reading session %s: %w", o.SessionID, err))
			return Session{}, false, false
		}
	}
	var s Session
	var err error
	resumed := o.Resume && existing != nil
	now := r.now()
	switch {
	case resumed && existing.Backend != o.Backend.Kind():
		r.fail(&SessionMismatchError{SessionID: existing.ID, RecordedBackend: existing.Backend, Backend: o.Backend.Kind()})
		return Session{}, false, false
	case resumed:
		if rs, ok := o.Backend.(Resumer); ok {
			s, err = rs.Resume(ctx, *existing, in, bc)
		} else {
			s = *existing
			s.Status = SessionActive
		}
	default:
		if st, ok := o.Backend.(Starter); ok {
			s, err = st.Start(ctx, in, bc, o.SessionID)
		} else {
			id := o.SessionID
			if id == "" {
				id = "session-" + rand.Text()
			}
			s = Session{ID: id, Backend: o.Backend.Kind(), Status: SessionActive, CreatedAt: now}
		}
	}
	if err != nil {
		r.fail(fmt.Errorf("taskstream: opening the %s session: %w", o.Backend.Kind(), err))
		return Session{}, false, false
	}
	if s.ID == "" || s.Backend == "" {
		r.fail(fmt.Errorf("taskstream: the %s backend opened a session without an id or backend", o.Backend.Kind()))
		return Session{}, false, false
	}
	s.UpdatedAt = now
	if o.Sessions != nil {
		if err := o.Sessions.Put(ctx, s); err != nil {
			r.fail(fmt.Errorf("taskstream: recording session %s: %w", s.ID, err))
			return Session{}, false, false
		}
	}
	return s, resumed, true
}

// lifecycle are the event types only the stream itself emits.
var lifecycle = map[string]bool{
	EventTaskStart: true, EventReadinessStart: true, EventReadinessEnd: true, EventSessionCreated: true,
	EventSessionResumed: true, EventBackendStart: true, EventBackendEnd: true, EventBackendError: true,
	EventTaskEnd: true, EventFinal: true,
}

// drive streams the backend's events and ends the task.
func (r *run) drive(ctx context.Context, in Input, bc BackendContext) {
	o := r.o
	var text []byte
	err := func() error {
		// The backend is the caller's code: a panic in it, or a backend
		// that ignores its context past the grace, ends the turn failed
		// or aborted instead of crashing or holding the stream open.
		for e, err := range boundediter.Seq2(ctx, o.Backend.Stream(ctx, in, bc), BackendGrace) {
			if err != nil {
				return err
			}
			if e.Type == "" || lifecycle[e.Type] {
				return fmt.Errorf("the backend emitted a %q event, which only the task stream may emit", e.Type)
			}
			if e.Type == EventTextDelta {
				text = append(text, e.Text...)
			}
			if !r.emit(ctx, e) {
				return errConsumerGone
			}
		}
		// A backend that stops yielding once the context ended did not
		// complete.
		return context.Cause(ctx)
	}()
	if errors.Is(err, errConsumerGone) {
		return
	}
	if err == nil {
		r.end(ctx, SessionCompleted)
		if r.emit(ctx, Event{Type: EventBackendEnd, Backend: o.Backend.Kind()}) &&
			r.emit(ctx, Event{Type: EventTaskEnd, Status: StatusCompleted, Reason: "backend completed"}) {
			r.emit(ctx, Event{Type: EventFinal, Status: StatusCompleted, Reason: "backend completed", Text: string(text)})
		}
		return
	}
	aborted := ctx.Err() != nil
	status, sessionStatus := StatusFailed, SessionFailed
	if aborted {
		status, sessionStatus = StatusAborted, SessionAborted
	}
	r.end(ctx, sessionStatus)
	msg := err.Error()
	combined := msg
	if st, ok := o.Backend.(Stopper); ok {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), StopTimeout)
		if serr := st.Stop(sctx, *r.session, msg); serr != nil {
			combined = msg + "; backend stop failed: " + serr.Error()
		}
		cancel()
	}
	detail := detailOf(err, combined)
	recoverable := !aborted
	if r.emit(ctx, Event{Type: EventBackendError, Backend: o.Backend.Kind(), Message: combined, Recoverable: &recoverable, Error: detail}) &&
		r.emit(ctx, Event{Type: EventTaskEnd, Status: status, Reason: msg}) {
		r.emit(ctx, Event{Type: EventFinal, Status: status, Reason: msg, Text: string(text), Error: detail})
	}
}

var errConsumerGone = errors.New("taskstream: the consumer stopped reading")

// end records the session's terminal status.
func (r *run) end(ctx context.Context, status string) {
	r.session.Status, r.session.UpdatedAt = status, r.now()
	if st := r.o.Sessions; st != nil {
		if err := st.Put(context.WithoutCancel(ctx), *r.session); err != nil {
			r.fail(fmt.Errorf("taskstream: recording session %s: %w", r.session.ID, err))
		}
	}
}
