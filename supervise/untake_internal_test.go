package supervise

import (
	"slices"
	"testing"
)

// An event put back by untake (an await_event whose result the
// manager's loop never recorded) is taken again in its recorded place:
// before every event of any kind queued after it, also once its kind's
// queue was compacted by a push meanwhile, and the wait of an Await is
// woken by it.
func TestUntakePutsTheEventBackInItsPlace(t *testing.T) {
	c := &Coordinator{core: &core{}, wake: make(chan struct{})}
	c.mu.Lock()
	c.pushLocked(Event{Kind: EventQuestion, WorkerID: "a"})
	c.pushLocked(Event{Kind: EventSettled, WorkerID: "b"})
	ev, seq, ok := c.takeSeqLocked(nil)
	if !ok || ev.WorkerID != "a" {
		c.mu.Unlock()
		t.Fatalf("took %+v (%v), want a's question", ev, ok)
	}
	// A push after the take compacts the question queue (its head was
	// taken): the event goes back in front of the later one all the same.
	c.pushLocked(Event{Kind: EventQuestion, WorkerID: "c"})
	wake := c.wake
	c.mu.Unlock()
	c.untake(ev, seq)
	select {
	case <-wake:
	default:
		t.Error("untake did not wake a waiting Await")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var order []NodeID
	for {
		ev, ok := c.takeLocked(nil)
		if !ok {
			break
		}
		order = append(order, ev.WorkerID)
	}
	if want := []NodeID{"a", "b", "c"}; !slices.Equal(order, want) {
		t.Errorf("taken in order %v, want %v", order, want)
	}
}
