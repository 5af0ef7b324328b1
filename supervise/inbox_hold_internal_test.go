package supervise

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// projectionKinds is the kinds of the root inbox projection in dir.
func projectionKinds(t *testing.T, dir string) []string {
	t.Helper()
	recs, _, err := ReadInbox(context.Background(), dir, "run1")
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, r := range recs {
		kinds = append(kinds, r.Kind)
	}
	return kinds
}

// noOutcome fails when the steer's sender already has its outcome.
func noOutcome(t *testing.T, got <-chan [2]string, when string) {
	t.Helper()
	select {
	case r := <-got:
		t.Fatalf("%s the sender was answered %v; want no outcome yet", when, r)
	default:
	}
}

// Issue 13, §3.6 steer semantics: the two-step take. A held steer is not
// delivered: its sender waits, and the projection has no taken line,
// until the holder confirms it; released, it waits again for the next
// turn; held while its sender's wait ends, or while the inbox is sealed,
// the release answers refused (withdrawn) or not_live, never delivered.
func TestInboxHoldDeliversOnlyOnConfirm(t *testing.T) {
	ctx := context.Background()

	t.Run("release then confirm", func(t *testing.T) {
		dir := t.TempDir()
		in := managerInboxFor(dir)
		got := postAsync(in, "one", "op-1")
		waitPending(t, in, 1)
		held := in.hold(false, 0)
		if len(held) != 1 || held[0].msg.Message != "one" {
			t.Fatalf("held %d steers, want one", len(held))
		}
		if in.Pending() != 0 {
			t.Errorf("%d steers wait while held, want 0", in.Pending())
		}
		noOutcome(t, got, "held,")
		in.release(ctx, held)
		waitPending(t, in, 1)
		noOutcome(t, got, "released,")
		if diff := cmp.Diff([]string{InboxPosted}, projectionKinds(t, dir)); diff != "" {
			t.Errorf("projection before the confirm (-want +got):\n%s", diff)
		}
		again := in.hold(false, 0)
		in.confirm(ctx, again)
		if r := <-got; r != [2]string{string(SteerDelivered), ""} {
			t.Errorf("confirmed, the sender got %v, want delivered", r)
		}
		if diff := cmp.Diff([]string{InboxPosted, InboxTaken}, projectionKinds(t, dir)); diff != "" {
			t.Errorf("projection after the confirm (-want +got):\n%s", diff)
		}
	})

	t.Run("sender's wait ends while held", func(t *testing.T) {
		dir := t.TempDir()
		in := managerInboxFor(dir)
		sendCtx, cancel := context.WithCancel(ctx)
		got := make(chan [2]string, 1)
		go func() {
			effect, why := in.post(sendCtx, "one", "op-1")
			got <- [2]string{string(effect), why}
		}()
		waitPending(t, in, 1)
		held := in.hold(false, 0)
		cancel()
		in.release(ctx, held)
		if r := <-got; r[0] != string(SteerRefused) {
			t.Errorf("the sender got %v, want refused (withdrawn)", r)
		}
		if in.Pending() != 0 {
			t.Errorf("%d steers wait after the withdrawal, want 0", in.Pending())
		}
		if diff := cmp.Diff([]string{InboxPosted, InboxDropped}, projectionKinds(t, dir)); diff != "" {
			t.Errorf("projection (-want +got):\n%s", diff)
		}
	})

	t.Run("sealed while held", func(t *testing.T) {
		dir := t.TempDir()
		in := managerInboxFor(dir)
		got := postAsync(in, "one", "op-1")
		waitPending(t, in, 1)
		held := in.hold(false, 0)
		if n := in.Seal(ctx); n != 0 {
			t.Errorf("Seal dropped %d steers, want 0: the held one is its holder's", n)
		}
		noOutcome(t, got, "sealed while held,")
		in.release(ctx, held)
		if r := <-got; r[0] != string(SteerNotLive) {
			t.Errorf("the sender got %v, want not_live", r)
		}
		if diff := cmp.Diff([]string{InboxPosted, InboxDropped}, projectionKinds(t, dir)); diff != "" {
			t.Errorf("projection (-want +got):\n%s", diff)
		}
	})
}

// A steer whose sender's deadline ends before the worker's next turn
// takes it is withdrawn, and the refusal names the wait it really had —
// the sender's deadline, not MaxSteerWait.
func TestSteerWithdrawnNamesTheSendersDeadline(t *testing.T) {
	in := managerInboxFor(t.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	effect, why := in.post(ctx, "one", "op-1")
	if effect != SteerRefused || !strings.Contains(why, "within ") || strings.Contains(why, MaxSteerWait.String()) {
		t.Errorf("post = %s, %q; want refused, naming a wait under %s", effect, why, MaxSteerWait)
	}
}
