package supervise_test

// QR13: questions across nested managers (§3.6 "Questions", §9
// ask_parent / answer_question / list_questions / stop, §15 behaviour 54).

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentrt/agentrt/store"

	"github.com/agentrt/agentrt/supervise"
)

// askUpWaiters counts the goroutines waiting, for a nested manager, on a
// decision made upstream (askUp's; before the decision on an escalated
// question went down to its asker under the lock, one each).
func askUpWaiters() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	return strings.Count(string(buf), "supervise.(*Coordinator).askUp.func")
}

// checklist: behaviour 54 through a nested manager. A question a nested
// manager escalated whose asking worker gave up holds nothing at the
// nested manager any more: the wait for the parent's decision ends with
// the question, not with the nested manager (a long-lived nested manager
// with many abandoned questions would otherwise keep one goroutine each).
func TestQR13AbandonedEscalationEndsItsUpstreamWait(t *testing.T) {
	r := newOutsideRun(t)
	giveUp := make(chan struct{})
	outerDone := make(chan struct{})
	// The nested manager lives on meanwhile.
	nestedEscalator{awaitAsker: true, until: outerDone}.install(t, r)
	_, err := r.drive(func(ctx context.Context, c *supervise.Coordinator) error {
		defer close(outerDone)
		if err := r.spawnDeepAsk(ctx, t, c, outsideOutcome{res: supervise.WorkResult{Text: "gave up PASS", Spent: outsideSpent(100)}, ask: giveUpAsk(giveUp)}); err != nil {
			return err
		}
		if _, err := awaitKind(ctx, c, supervise.EventQuestion); err != nil {
			return err
		}
		close(giveUp)
		if !pollWithin(10*time.Millisecond, func() bool { return askUpWaiters() == 0 }) {
			t.Errorf("the nested manager still waits for the decision on a question whose asker gave up: %d askUp goroutines after %v", askUpWaiters(), outsideWait)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("Supervise: %v", err)
	}
}

// holdQuestions is a store whose appends of a question's record wait
// until the scenario releases them (release, when set): the asker is
// still journaling its question when its manager decides it.
type holdQuestions struct {
	store.Store
	mu      sync.Mutex
	release chan struct{}
}

func (s *holdQuestions) hold() chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.release = make(chan struct{})
	return s.release
}

func (s *holdQuestions) AppendEvents(ctx context.Context, f store.Fence, evs []store.NewEvent) ([]store.Event, error) {
	for _, e := range evs {
		if e.Type != supervise.KindQuestionAsked {
			continue
		}
		s.mu.Lock()
		r := s.release
		s.mu.Unlock()
		if r != nil {
			select {
			case <-r:
			case <-ctx.Done():
			}
		}
	}
	return s.Store.AppendEvents(ctx, f, evs)
}

// checklist: §9 answer_question "answers are routed down and resolve only
// when delivered". An answer that races its asker giving up is exactly
// one of delivered (the asker gets it) or not (the asker gave up and
// the question expired): never reported delivered while the asker got
// its give-up. Each round decides the question while the asker is still
// journaling it, then ends the asker's wait; the asker then finds both
// the decision and its give-up ready.
func TestQR13AnswerRacingGiveUpIsDeliveredOrExpired(t *testing.T) {
	const rounds = 12
	r := newOutsideRun(t)
	hs := &holdQuestions{Store: questionStores[0].open(t)}
	r.opts.SpawnStore, r.opts.RunID, r.opts.SpawnLeaseTTL = hs, "qr13race", 30*time.Second
	r.opts.Budget.Iterations, r.opts.Budget.Tokens = i64(rounds+2), i64(100_000)
	_, err := r.drive(func(ctx context.Context, c *supervise.Coordinator) error {
		for i := range rounds {
			task := fmt.Sprintf("race-%d", i)
			if _, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "w", Task: task}); err != nil {
				return err
			}
			r.workers.waitStarted(t, task)
			release := hs.hold()
			cancels := make(chan context.CancelFunc, 1)
			got := make(chan bool, 1) // whether Ask returned the decision
			r.workers.finishWith(task, outsideOutcome{res: supervise.WorkResult{Text: "PASS", Spent: outsideSpent(100)},
				ask: cancellableAsk(cancels, got, supervise.UrgencyBlocksStep)})
			ev, err := awaitKind(ctx, c, supervise.EventQuestion)
			if err != nil {
				return err
			}
			answered := make(chan supervise.AnswerResult, 1)
			go func() {
				ans, _ := c.AnswerQuestion(ctx, supervise.AnswerArgs{QuestionID: ev.Question.ID, Answer: "this one"})
				answered <- ans
			}()
			// The decision is made (it waits for the question's record
			// only to journal itself); then the asker gives up.
			waitAnswered(t, c, func(n int) int { return n - 1 }, fmt.Sprintf("round %d: ", i))
			(<-cancels)() // sent before the asker asked
			close(release)
			ans, asker := recvWithin(t, answered), recvWithin(t, got)
			if ans.Delivered != asker {
				t.Errorf("round %d: answer_question reported delivered=%v, the asker received it: %v", i, ans.Delivered, asker)
			}
			if err := awaitSettlementOf(ctx, c, ev.Question.From); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("Supervise: %v", err)
	}
}

// queueQuestions is a store whose appends of a question's record each
// wait, in the order they arrived, until the scenario releases them.
type queueQuestions struct {
	store.Store
	mu      sync.Mutex
	waiting []chan struct{}
	arrived chan struct{}
}

func (s *queueQuestions) AppendEvents(ctx context.Context, f store.Fence, evs []store.NewEvent) ([]store.Event, error) {
	for _, e := range evs {
		if e.Type != supervise.KindQuestionAsked {
			continue
		}
		r := make(chan struct{})
		s.mu.Lock()
		s.waiting = append(s.waiting, r)
		s.mu.Unlock()
		s.arrived <- struct{}{}
		select {
		case <-r:
		case <-ctx.Done():
		}
	}
	return s.Store.AppendEvents(ctx, f, evs)
}

// releaseFirst lets the earliest held question record be written.
func (s *queueQuestions) releaseFirst() {
	s.mu.Lock()
	defer s.mu.Unlock()
	close(s.waiting[0])
	s.waiting = s.waiting[1:]
}

// checklist: §9 answer_question "resolve only when delivered" through a
// nested manager. The outer manager answers the question a nested
// manager escalated while its asking worker gives up: the answer is
// reported delivered only if the worker receives it. The escalated
// copy's record is still being written when the answer is made, and the
// worker gives up before it is. (The worker's own record lands first: a
// nested manager escalates a question only once its record is journaled,
// so a journal never holds the copy without its origin.)
func TestQR13EscalatedAnswerRacingGiveUpIsDeliveredOrExpired(t *testing.T) {
	r := newOutsideRun(t)
	qs := &queueQuestions{Store: questionStores[0].open(t), arrived: make(chan struct{}, 4)}
	r.opts.SpawnStore, r.opts.RunID, r.opts.SpawnLeaseTTL = qs, "qr13nested", 30*time.Second
	outerDone := make(chan struct{})
	nestedEscalator{until: outerDone}.install(t, r)
	cancels := make(chan context.CancelFunc, 1)
	got := make(chan bool, 1)
	_, err := r.drive(func(ctx context.Context, c *supervise.Coordinator) error {
		defer close(outerDone)
		arrived := func() error {
			select {
			case <-qs.arrived:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		if err := r.spawnDeepAsk(ctx, t, c, outsideOutcome{res: supervise.WorkResult{Text: "PASS", Spent: outsideSpent(100)},
			ask: cancellableAsk(cancels, got, supervise.UrgencyBlocksRun)}); err != nil {
			return err
		}
		// The worker's record is written; then the nested manager
		// escalates, and the copy's record is held.
		if err := arrived(); err != nil {
			return err
		}
		qs.releaseFirst()
		ev, err := awaitKind(ctx, c, supervise.EventQuestion) // the escalated copy
		if err != nil {
			return err
		}
		if err := arrived(); err != nil {
			return err
		}
		answered := make(chan supervise.AnswerResult, 1)
		go func() {
			ans, _ := c.AnswerQuestion(ctx, supervise.AnswerArgs{QuestionID: ev.Question.ID, Answer: "this one"})
			answered <- ans
		}()
		waitAnswered(t, c, func(int) int { return 0 }, "")
		(<-cancels)() // the worker gives up
		asker := recvWithin(t, got)
		qs.releaseFirst() // the escalated copy's
		ans := recvWithin(t, answered)
		if ans.Delivered != asker {
			t.Errorf("answer_question at the outer manager reported delivered=%v, the asking worker received it: %v", ans.Delivered, asker)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("Supervise: %v", err)
	}
}

// recvWithin receives from ch, failing the test after outsideWait.
func recvWithin[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(outsideWait):
		t.Fatalf("nothing received within %v", outsideWait)
		var zero T
		return zero
	}
}
