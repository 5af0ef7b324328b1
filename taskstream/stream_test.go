package taskstream_test

import (
	"context"
	"errors"
	"iter"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/taskstream"
)

// fakeBackend yields text deltas, then fails with err (nil: completes).
// It can block after its deltas until the context ends.
type fakeBackend struct {
	kind    string
	deltas  []string
	err     error
	block   bool
	stopped atomic.Int32
	reason  string
	stopErr error
}

func (b *fakeBackend) Kind() string { return b.kind }

func (b *fakeBackend) Stream(ctx context.Context, _ taskstream.Input, _ taskstream.BackendContext) iter.Seq2[taskstream.Event, error] {
	return func(yield func(taskstream.Event, error) bool) {
		for _, d := range b.deltas {
			if !yield(taskstream.Event{Type: taskstream.EventTextDelta, Text: d}, nil) {
				return
			}
		}
		if b.block {
			<-ctx.Done()
			yield(taskstream.Event{}, ctx.Err())
			return
		}
		if b.err != nil {
			yield(taskstream.Event{}, b.err)
		}
	}
}

func (b *fakeBackend) Stop(_ context.Context, _ taskstream.Session, reason string) error {
	b.stopped.Add(1)
	b.reason = reason
	return b.stopErr
}

var task = taskstream.Task{ID: "t1", Intent: "write a release note"}

func collect(t *testing.T, seq iter.Seq2[taskstream.Event, error]) ([]taskstream.Event, error) {
	t.Helper()
	var out []taskstream.Event
	for e, err := range seq {
		if err != nil {
			return out, err
		}
		out = append(out, e)
	}
	return out, nil
}

func types(es []taskstream.Event) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.Type)
	}
	return out
}

// Behaviour 22 (FD-01): a successful backend yields the exact event
// order, ending in final{completed} whose text is the deltas joined; the
// session store records the session and every event after it was
// created.
func TestBehaviour22SuccessOrder(t *testing.T) {
	sessions := &taskstream.MemorySessionStore{}
	b := &fakeBackend{kind: "fake", deltas: []string{"Ship", "ped."}}
	// RunAgentTaskStream is the seeds' name for Run.
	events, err := collect(t, taskstream.RunAgentTaskStream(context.Background(), taskstream.Options{Task: task, Backend: b, Sessions: sessions, SessionID: "s1"}))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"task_start", "readiness_start", "readiness_end", "session_created", "backend_start",
		"text_delta", "text_delta", "backend_end", "task_end", "final"}
	if diff := cmp.Diff(want, types(events)); diff != "" {
		t.Fatalf("events (-want +got):\n%s", diff)
	}
	final := events[len(events)-1]
	if final.Status != taskstream.StatusCompleted || final.Text != "Shipped." || final.Reason != "backend completed" {
		t.Errorf("final %+v", final)
	}
	for _, e := range events {
		if e.TaskID != "t1" || e.Timestamp.IsZero() {
			t.Errorf("%s event without task id or timestamp", e.Type)
		}
	}
	s, _ := sessions.Get(context.Background(), "s1")
	if s == nil || s.Status != taskstream.SessionCompleted || s.Backend != "fake" {
		t.Errorf("recorded session %+v", s)
	}
	if got := types(sessions.Events("s1")); !cmp.Equal(got, want[3:]) {
		t.Errorf("recorded events %v; want %v", got, want[3:])
	}
	if b.stopped.Load() != 0 {
		t.Error("Stop called on a completed run")
	}
}

// Behaviour 23: a transport error yields backend_error{kind transport,
// status, body ≤ 2 KiB, recoverable} then task_end and final{failed}
// with the error, after Stop was called (its failure joins the message).
func TestBehaviour23TransportError(t *testing.T) {
	body := strings.Repeat("é", 3000) // 6000 bytes, two per rune
	b := &fakeBackend{kind: "fake", deltas: []string{"par"}, err: &taskstream.TransportError{Status: 402, Body: body, Err: errors.New("payment required")},
		stopErr: errors.New("box gone")}
	events, err := collect(t, taskstream.Run(context.Background(), taskstream.Options{Task: task, Backend: b}))
	if err != nil {
		t.Fatal(err)
	}
	n := len(events)
	if diff := cmp.Diff([]string{"text_delta", "backend_error", "task_end", "final"}, types(events[n-4:])); diff != "" {
		t.Fatalf("events (-want +got):\n%s", diff)
	}
	be := events[n-3]
	if be.Recoverable == nil || !*be.Recoverable || be.Error == nil || be.Error.Kind != taskstream.ErrorKindTransport || *be.Error.Status != 402 {
		t.Fatalf("backend_error %+v", be)
	}
	if len(be.Error.Body) > taskstream.MaxErrorBody || len(be.Error.Body) < taskstream.MaxErrorBody-1 || !strings.HasPrefix(body, be.Error.Body) {
		t.Errorf("body of %d bytes; want the first ≤ %d bytes, whole runes", len(be.Error.Body), taskstream.MaxErrorBody)
	}
	if !strings.Contains(be.Message, "payment required") || !strings.Contains(be.Message, "backend stop failed: box gone") {
		t.Errorf("message %q", be.Message)
	}
	final := events[n-1]
	if final.Status != taskstream.StatusFailed || final.Error == nil || final.Text != "par" {
		t.Errorf("final %+v; want failed with the error and the partial text", final)
	}
	if b.stopped.Load() != 1 {
		t.Errorf("Stop called %d times", b.stopped.Load())
	}
}

// Behaviour 24: cancelling mid-stream ends in final{aborted} and a
// backend_error that is not recoverable.
func TestBehaviour24Cancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b := &fakeBackend{kind: "fake", deltas: []string{"a"}, block: true}
	var events []taskstream.Event
	for e, err := range taskstream.Run(ctx, taskstream.Options{Task: task, Backend: b}) {
		if err != nil {
			t.Fatal(err)
		}
		events = append(events, e)
		if e.Type == taskstream.EventTextDelta {
			cancel()
		}
	}
	n := len(events)
	final, be := events[n-1], events[n-3]
	if final.Type != taskstream.EventFinal || final.Status != taskstream.StatusAborted {
		t.Fatalf("final %+v", final)
	}
	if be.Type != taskstream.EventBackendError || be.Recoverable == nil || *be.Recoverable {
		t.Errorf("backend_error %+v; want recoverable false", be)
	}
}

type knowledge struct {
	rep     taskstream.Readiness
	answers map[string]string
	refresh *taskstream.Readiness
}

func (k *knowledge) Readiness(context.Context, taskstream.Task) (taskstream.Readiness, error) {
	return k.rep, nil
}

func (k *knowledge) AnswerQuestions(context.Context, []taskstream.Question, taskstream.Task) (map[string]string, error) {
	return k.answers, nil
}

func (k *knowledge) RefreshReadiness(context.Context, taskstream.Task, taskstream.Readiness, map[string]string, []string) (taskstream.Readiness, error) {
	return *k.refresh, nil
}

// Behaviour 25: blocking readiness ends with task_end{blocked} and
// final{blocked}, with no session events; answers that close the gap
// let the task run.
func TestBehaviour25BlockedReadiness(t *testing.T) {
	gap := taskstream.Readiness{Score: 0.2, Reason: "the release version is unknown",
		BlockingMissing: []taskstream.Requirement{{ID: "version", Description: "Which version ships?"}}}
	b := &fakeBackend{kind: "fake", deltas: []string{"x"}}
	events, err := collect(t, taskstream.Run(context.Background(), taskstream.Options{Task: task, Backend: b, Knowledge: &knowledge{rep: gap}}))
	if err != nil {
		t.Fatal(err)
	}
	// The provider was asked and had no answer: still blocked.
	if diff := cmp.Diff([]string{"task_start", "readiness_start", "questions_start", "questions_end", "readiness_end", "task_end", "final"}, types(events)); diff != "" {
		t.Fatalf("events (-want +got):\n%s", diff)
	}
	if f := events[6]; f.Status != taskstream.StatusBlocked || !strings.Contains(f.Reason, "release version") {
		t.Errorf("final %+v", f)
	}
	ready := taskstream.Readiness{Score: 0.9, Reason: "answered"}
	events, err = collect(t, taskstream.Run(context.Background(), taskstream.Options{Task: task, Backend: b,
		Knowledge: &knowledge{rep: gap, answers: map[string]string{"version": "2.4"}, refresh: &ready}}))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"task_start", "readiness_start", "questions_start", "questions_end", "readiness_start", "readiness_end",
		"session_created", "backend_start", "text_delta", "backend_end", "task_end", "final"}
	if diff := cmp.Diff(want, types(events)); diff != "" {
		t.Errorf("events after answers (-want +got):\n%s", diff)
	}
}

// Behaviour 26: resuming a session recorded under another backend kind
// is a session mismatch, before the backend runs.
func TestBehaviour26SessionMismatch(t *testing.T) {
	sessions := &taskstream.MemorySessionStore{}
	first := &fakeBackend{kind: "claude-code"}
	if _, err := collect(t, taskstream.Run(context.Background(), taskstream.Options{Task: task, Backend: first, Sessions: sessions, SessionID: "s1"})); err != nil {
		t.Fatal(err)
	}
	other := &fakeBackend{kind: "codex", deltas: []string{"never"}}
	events, err := collect(t, taskstream.Run(context.Background(), taskstream.Options{Task: task, Backend: other, Sessions: sessions, SessionID: "s1", Resume: true}))
	var mm *taskstream.SessionMismatchError
	if !errors.As(err, &mm) || mm.RecordedBackend != "claude-code" || mm.Backend != "codex" {
		t.Fatalf("err %v; want a *SessionMismatchError", err)
	}
	for _, e := range events {
		if e.Type == taskstream.EventTextDelta {
			t.Error("the mismatched backend ran")
		}
	}
	// The same backend resumes it.
	again := &fakeBackend{kind: "claude-code", deltas: []string{"more"}}
	events, err = collect(t, taskstream.Run(context.Background(), taskstream.Options{Task: task, Backend: again, Sessions: sessions, SessionID: "s1", Resume: true}))
	if err != nil || events[3].Type != taskstream.EventSessionResumed || events[3].Session.ID != "s1" {
		t.Errorf("resume: %v, %v", types(events), err)
	}
}

// A backend that emits a lifecycle event itself fails the run rather
// than end it twice.
func TestBackendCannotEmitLifecycle(t *testing.T) {
	b := backendFunc(func(yield func(taskstream.Event, error) bool) {
		yield(taskstream.Event{Type: taskstream.EventFinal, Status: taskstream.StatusCompleted}, nil)
	})
	events, err := collect(t, taskstream.Run(context.Background(), taskstream.Options{Task: task, Backend: b}))
	if err != nil {
		t.Fatal(err)
	}
	finals := 0
	for _, e := range events {
		if e.Type == taskstream.EventFinal {
			finals++
			if e.Status != taskstream.StatusFailed {
				t.Errorf("final %+v", e)
			}
		}
	}
	if finals != 1 {
		t.Errorf("%d finals", finals)
	}
}

type backendFunc func(yield func(taskstream.Event, error) bool)

func (backendFunc) Kind() string { return "func" }
func (f backendFunc) Stream(context.Context, taskstream.Input, taskstream.BackendContext) iter.Seq2[taskstream.Event, error] {
	return iter.Seq2[taskstream.Event, error](f)
}

func TestRunRefusesBadOptions(t *testing.T) {
	bad := 1.5
	_, err := collect(t, taskstream.Run(context.Background(), taskstream.Options{Task: taskstream.Task{}, MinimumReadinessScore: &bad}))
	for _, want := range []string{"backend is required", "task needs an id", "minimum readiness score"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("err %v; want it to say %q", err, want)
		}
	}
}
