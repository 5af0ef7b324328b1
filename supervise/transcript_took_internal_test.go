package supervise

import (
	"fmt"
	"slices"
	"testing"
)

// Issue 13, resume (RES-03): the events a resumed manager's recorded
// await_event calls took (TranscriptMessage.Took) are dropped from its
// queue only where the replay queued them again — settlements and
// findings. A question is not queued again by the replay, so a question
// queued by the time the manager drives again (a nested manager driven
// again first re-asks its parent; a recovered worker asks again) is a
// new one and must stay for the manager: dropping it would leave its
// asker waiting for a decision no one is shown.
func TestDropTakenKeepsQuestions(t *testing.T) {
	c := &Coordinator{core: &core{}, wake: make(chan struct{})}
	c.mu.Lock()
	c.pushLocked(Event{Kind: EventSettled, WorkerID: "run1:s1"})
	c.pushLocked(Event{Kind: EventQuestion, WorkerID: "run1:s1", Question: &Question{ID: "q2"}})
	c.mu.Unlock()
	c.dropTaken([]TakenEvent{{Kind: EventSettled, WorkerID: "run1:s1"}, {Kind: EventQuestion, WorkerID: "run1:s1"}})
	c.mu.Lock()
	defer c.mu.Unlock()
	ev, ok := c.takeLocked(nil)
	if !ok || ev.Kind != EventQuestion || ev.Question == nil || ev.Question.ID != "q2" {
		t.Fatalf("the queue holds %+v (%v), want the new question q2", ev, ok)
	}
	if ev, ok := c.takeLocked(nil); ok {
		t.Fatalf("the replayed settlement the conversation had is queued again: %+v", ev)
	}
}

// Issue 13, resume (RES-03): each taken settlement or finding drops the
// earliest queued event of its kind and worker, and only that one; what
// is left keeps its recorded order (the seqs Await orders kinds by).
func TestDropTakenDropsTheEarliestOfEachWorker(t *testing.T) {
	c := &Coordinator{core: &core{}, wake: make(chan struct{})}
	c.mu.Lock()
	for _, ev := range []Event{
		{Kind: EventSettled, WorkerID: "a", Label: "a1"}, {Kind: EventFinding, WorkerID: "x", Label: "x1"},
		{Kind: EventSettled, WorkerID: "b", Label: "b1"}, {Kind: EventSettled, WorkerID: "a", Label: "a2"},
		{Kind: EventSettled, WorkerID: "c", Label: "c1"}, {Kind: EventFinding, WorkerID: "x", Label: "x2"},
		{Kind: EventSettled, WorkerID: "a", Label: "a3"},
	} {
		c.pushLocked(ev)
	}
	c.mu.Unlock()
	c.dropTaken([]TakenEvent{{Kind: EventSettled, WorkerID: "a"}, {Kind: EventSettled, WorkerID: "c"},
		{Kind: EventFinding, WorkerID: "x"}, {Kind: EventSettled, WorkerID: "a"}, {Kind: EventSettled, WorkerID: "gone"}})
	c.mu.Lock()
	defer c.mu.Unlock()
	var got []string
	for {
		ev, ok := c.takeLocked(nil)
		if !ok {
			break
		}
		got = append(got, ev.Label)
	}
	if want := []string{"b1", "x2", "a3"}; !slices.Equal(got, want) {
		t.Fatalf("left queued %v, want %v", got, want)
	}
}

// queueSettled returns a coordinator with n settlements queued, one per
// worker, in order, and the events a transcript that awaited every one
// of them took.
func queueSettled(n int) (*Coordinator, []TakenEvent) {
	c := &Coordinator{core: &core{}, wake: make(chan struct{})}
	took := make([]TakenEvent, n)
	c.mu.Lock()
	for i := range n {
		id := NodeID(fmt.Sprintf("run1:s%d", i+1))
		c.pushLocked(Event{Kind: EventSettled, WorkerID: id})
		took[i] = TakenEvent{Kind: EventSettled, WorkerID: id}
	}
	c.mu.Unlock()
	return c, took
}

// BenchmarkDropTaken: a resumed manager that awaited every one of n
// replayed settlements drops them all from its queue (resume of a wide
// run, RES-03).
func BenchmarkDropTaken(b *testing.B) {
	for _, n := range []int{1_000, 10_000, 50_000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				c, took := queueSettled(n)
				b.StartTimer()
				c.dropTaken(took)
			}
		})
	}
}

// A worker settles once, under one kind: a taken event drops its
// worker's settlement whatever kind the taking call saw. A graph's
// await_event names an analyst node's settlement a finding, while the
// coordinator queued it as settled; a resumed graph root must not be
// handed that finding again.
func TestDropTakenMatchesAWorkerAcrossKinds(t *testing.T) {
	c := &Coordinator{core: &core{}, wake: make(chan struct{})}
	c.mu.Lock()
	c.pushLocked(Event{Kind: EventSettled, WorkerID: "g:s2", Label: "analyst"})
	c.pushLocked(Event{Kind: EventSettled, WorkerID: "g:s3", Label: "coder"})
	c.mu.Unlock()
	c.dropTaken([]TakenEvent{{Kind: EventFinding, WorkerID: "g:s2"}})
	c.mu.Lock()
	defer c.mu.Unlock()
	ev, ok := c.takeLocked(nil)
	if !ok || ev.Label != "coder" {
		t.Fatalf("first queued %+v (%v), want the coder: the finding the root took is queued again", ev, ok)
	}
	if ev, ok := c.takeLocked(nil); ok {
		t.Fatalf("left queued %+v, want nothing", ev)
	}
}
