package supervise

import "testing"

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
