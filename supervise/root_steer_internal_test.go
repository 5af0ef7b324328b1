package supervise

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// managerInboxFor is the root's inbox a process of the run in dir opens.
func managerInboxFor(dir string) *Inbox {
	in := newInbox("run1", dir, time.Now, slog.New(slog.DiscardHandler))
	in.manager = true
	in.continueSeq(context.Background())
	return in
}

// postAsync posts msg and returns the channel its outcome arrives on.
func postAsync(in *Inbox, msg, op string) <-chan [2]string {
	out := make(chan [2]string, 1)
	go func() {
		effect, why := in.post(context.Background(), msg, op)
		out <- [2]string{string(effect), why}
	}()
	return out
}

// waitPending waits, at most a minute, until n steers wait in in.
func waitPending(t *testing.T, in *Inbox, n int) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		in.mu.Lock()
		got := len(in.pending)
		in.mu.Unlock()
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d steers pending, want %d", got, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Behaviour 48, root steer across processes: the root's inbox projection
// outlives the process that wrote it, so a resumed run's manager numbers
// its steers on from the last one, and a steer still waiting when the
// manager returns is not_live, saying the manager took its last turn.
func TestManagerInboxAcrossProcessesBehaviour48(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()

	first := managerInboxFor(dir)
	got := postAsync(first, "one", "op-1")
	waitPending(t, first, 1)
	if msgs := first.Take(ctx); len(msgs) != 1 || msgs[0].Seq != 1 {
		t.Fatalf("took %+v, want steer 1", msgs)
	}
	if r := <-got; r != [2]string{string(SteerDelivered), ""} {
		t.Errorf("first steer %v, want delivered", r)
	}
	first.close(ctx)

	resumed := managerInboxFor(dir)
	got = postAsync(resumed, "two", "op-2")
	waitPending(t, resumed, 1)
	if msgs := resumed.Take(ctx); len(msgs) != 1 || msgs[0].Seq != 2 {
		t.Fatalf("the resumed manager took %+v, want steer 2", msgs)
	}
	<-got
	late := postAsync(resumed, "three", "op-3")
	waitPending(t, resumed, 1)
	resumed.close(ctx)
	if r := <-late; r != [2]string{string(SteerNotLive), "the manager took its last turn before taking the message"} {
		t.Errorf("steer waiting at the manager's return: %v, want not_live", r)
	}

	recs, skipped, err := ReadInbox(ctx, dir, "run1")
	if err != nil || skipped != 0 {
		t.Fatalf("projection: %v (%d skipped)", err, skipped)
	}
	type line struct {
		Kind string
		Seq  int64
	}
	var lines []line
	for _, r := range recs {
		lines = append(lines, line{r.Kind, r.Seq})
	}
	want := []line{{InboxPosted, 1}, {InboxTaken, 1}, {InboxPosted, 2}, {InboxTaken, 2}, {InboxPosted, 3}, {InboxDropped, 3}}
	if diff := cmp.Diff(want, lines); diff != "" {
		t.Errorf("projection (-want +got):\n%s", diff)
	}
}

// Behaviour 48, root steer to an external-harness manager (issue 13):
// TakeAtMost hands on the oldest waiting steers whose messages fit the
// bound — always the oldest, even alone over it — and leaves the rest
// waiting, undelivered, for the next take; each is delivered when taken.
func TestInboxTakeAtMostBoundsTheTakeBehaviour48(t *testing.T) {
	ctx := context.Background()
	in := managerInboxFor(t.TempDir())
	big := string(make([]byte, 40))
	var outs []<-chan [2]string
	for i, msg := range []string{big, "a", big, "b"} {
		outs = append(outs, postAsync(in, msg, ""))
		waitPending(t, in, i+1)
	}
	var took [][]int64
	for range 4 {
		var seqs []int64
		for _, m := range in.TakeAtMost(ctx, 41) {
			seqs = append(seqs, m.Seq)
		}
		took = append(took, seqs)
	}
	if diff := cmp.Diff([][]int64{{1, 2}, {3, 4}, nil, nil}, took); diff != "" {
		t.Errorf("takes of at most 41 bytes (-want +got):\n%s", diff)
	}
	// Over the bound alone: taken by itself.
	over := postAsync(in, big+big, "")
	waitPending(t, in, 1)
	if msgs := in.TakeAtMost(ctx, 41); len(msgs) != 1 || msgs[0].Seq != 5 {
		t.Errorf("took %+v, want the oversized steer 5 alone", msgs)
	}
	for i, out := range append(outs, over) {
		select {
		case got := <-out:
			if got[0] != string(SteerDelivered) {
				t.Errorf("steer %d: %v, want delivered", i+1, got)
			}
		case <-time.After(time.Minute):
			t.Fatalf("steer %d has no outcome", i+1)
		}
	}
	in.close(ctx)
}

// isClosed reports whether ch is closed (nil is never ready).
func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// Behaviour 48, issue 13: Waiting tells a reader blocked elsewhere (an
// external harness's await_event) that a steer waits: its channel closes
// on the next post, is closed at once while one waits, is open again
// once they were taken, and is never ready for a sealed inbox.
func TestInboxWaitingSignalsAPostBehaviour48(t *testing.T) {
	ctx := context.Background()
	in := managerInboxFor(t.TempDir())
	before := in.Waiting()
	if isClosed(before) {
		t.Fatal("Waiting is ready with nothing posted")
	}
	out := postAsync(in, "one", "")
	select {
	case <-before:
	case <-time.After(time.Minute):
		t.Fatal("Waiting did not close when a steer was posted")
	}
	if !isClosed(in.Waiting()) {
		t.Error("Waiting is not ready while a steer waits")
	}
	if msgs := in.Take(ctx); len(msgs) != 1 {
		t.Fatalf("took %+v", msgs)
	}
	if isClosed(in.Waiting()) {
		t.Error("Waiting is ready after the steer was taken")
	}
	if got := <-out; got[0] != string(SteerDelivered) {
		t.Errorf("steer: %v, want delivered", got)
	}
	in.close(ctx)
	if in.Waiting() != nil {
		t.Error("a sealed inbox's Waiting is not nil")
	}
	var none *Inbox
	if none.Waiting() != nil {
		t.Error("a nil inbox's Waiting is not nil")
	}
}
