package supervise_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/supervise"
)

// await_event with and without kinds (§3.6 coordination verbs; the
// settlement order of behaviour 46's replay-safe drivers): a filtered
// Await returns the earliest event of its kinds and leaves the others
// queued; an unfiltered one returns what is left in recorded order.
func TestAwaitKindsKeepsRecordedOrder(t *testing.T) {
	backlogRun(t, 3, func(ctx context.Context, c *supervise.Coordinator) error {
		ask := func(q string) error {
			_, err := c.AskParent(ctx, supervise.AskArgs{Level: "driver", Question: q, Reason: "test", Urgency: supervise.UrgencyContinueWithout})
			return err
		}
		// Queued now: settled s1, s2, s3; then questions q1, q2.
		if err := ask("first?"); err != nil {
			return err
		}
		if err := ask("second?"); err != nil {
			return err
		}
		var got []string
		take := func(kinds ...string) error {
			r, err := c.Await(ctx, supervise.AwaitArgs{TimeoutMS: 1_000, Kinds: kinds})
			switch {
			case err != nil:
				return err
			case r.Idle:
				got = append(got, "idle")
			case r.Event == nil:
				return fmt.Errorf("await %v: %+v", kinds, r)
			case r.Event.Question != nil:
				got = append(got, r.Event.Question.Question)
			default:
				got = append(got, string(r.Event.WorkerID))
			}
			return nil
		}
		for _, kinds := range [][]string{
			{supervise.EventQuestion}, {supervise.EventSettled}, nil, {supervise.EventSettled, supervise.EventQuestion}, nil, nil,
		} {
			if err := take(kinds...); err != nil {
				return err
			}
		}
		// The settlements' recorded order is the journal's (workers
		// settle concurrently).
		var s []string
		for _, r := range c.ReadJournal(supervise.JournalArgs{Kinds: []string{supervise.KindSettled}}).Rows {
			s = append(s, string(r.Node))
		}
		if len(s) != 3 {
			return fmt.Errorf("journaled settlements %v, want 3", s)
		}
		want := []string{"first?", s[0], s[1], s[2], "second?", "idle"}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("awaited (-want +got):\n%s", diff)
		}
		return nil
	})
}

// Await's cost per call does not grow with what is queued (issue 13):
// asking a question and awaiting it by kind allocates the same with 10
// settlements queued unreturned as with 5000 (before, a filtered Await
// walked — and copied — every queued event of other kinds on each call).
func TestAwaitKindsCostFlatInBacklog(t *testing.T) {
	if testing.Short() {
		t.Skip("settles 5000 workers")
	}
	allocs := map[int]float64{}
	for _, n := range []int{10, 5_000} {
		backlogRun(t, n, func(ctx context.Context, c *supervise.Coordinator) error {
			ask := supervise.AskArgs{Level: "driver", Question: "which?", Reason: "test", Urgency: supervise.UrgencyContinueWithout}
			var failed error
			allocs[n] = testing.AllocsPerRun(200, func() {
				if _, err := c.AskParent(ctx, ask); err != nil {
					failed = err
					return
				}
				r, err := c.Await(ctx, supervise.AwaitArgs{TimeoutMS: 60_000, Kinds: []string{supervise.EventQuestion}})
				if err != nil || r.Event == nil || r.Event.Kind != supervise.EventQuestion {
					failed = fmt.Errorf("await: %+v %v", r, err)
				}
			})
			return failed
		})
	}
	if allocs[5_000] > allocs[10] {
		t.Errorf("ask+await by kind allocates %.0f with 5000 settlements queued, %.0f with 10: its cost grows with the queue", allocs[5_000], allocs[10])
	}
}

// An await_event kind that is not one (§9: settled, question, finding)
// is refused invalid-kind naming its index, and takes nothing: before,
// a misspelt kind matched no event, so the call waited out its timeout
// and answered idle while the events it meant stayed queued.
func TestAwaitRefusesAnUnknownKind(t *testing.T) {
	backlogRun(t, 1, func(ctx context.Context, c *supervise.Coordinator) error {
		for _, kinds := range [][]string{{"no-such-kind"}, {supervise.EventSettled, "Settled"}, {""}} {
			_, err := c.Await(ctx, supervise.AwaitArgs{TimeoutMS: 60_000, Kinds: kinds})
			var r *supervise.VerbRefusal
			if !errors.As(err, &r) || r.Code != "invalid-kind" || !strings.Contains(r.Reason, fmt.Sprintf("/kinds/%d", len(kinds)-1)) {
				return fmt.Errorf("await %q: %v, want an invalid-kind refusal naming /kinds/%d", kinds, err, len(kinds)-1)
			}
		}
		r, err := c.Await(ctx, supervise.AwaitArgs{TimeoutMS: 1_000, Kinds: []string{supervise.EventSettled}})
		if err != nil || r.Event == nil {
			return fmt.Errorf("the settlement after the refusals: %+v, %v; want it still queued", r, err)
		}
		return nil
	})
}

// An await_event for some kinds answered idle — nothing of those kinds
// will come — with settlements still queued, and did not say so: a
// manager waiting for questions read "idle" as nothing left and could
// stop with three results unread. Idle (and pending) answers to a
// filtered call count the other kinds still queued; an unfiltered call
// has none to count.
func TestAwaitIdleNamesWhatElseIsQueued(t *testing.T) {
	backlogRun(t, 3, func(ctx context.Context, c *supervise.Coordinator) error {
		r, err := c.Await(ctx, supervise.AwaitArgs{TimeoutMS: 1_000, Kinds: []string{supervise.EventQuestion}})
		if err != nil {
			return err
		}
		if diff := cmp.Diff(map[string]int{supervise.EventSettled: 3}, r.Queued); !r.Idle || diff != "" {
			t.Errorf("idle for questions: %+v (queued -want +got):\n%s", r, diff)
		}
		for range 3 {
			if r, err := c.Await(ctx, supervise.AwaitArgs{TimeoutMS: 1_000}); err != nil || r.Event == nil {
				return fmt.Errorf("await: %+v, %v", r, err)
			}
		}
		r, err = c.Await(ctx, supervise.AwaitArgs{TimeoutMS: 1_000, Kinds: []string{supervise.EventQuestion}})
		if err != nil {
			return err
		}
		if !r.Idle || r.Queued != nil {
			t.Errorf("idle with nothing queued: %+v, want no queued", r)
		}
		return nil
	})
}
