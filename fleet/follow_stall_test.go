package fleet_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/fleet"
	"github.com/agentrt/agentrt/store"
)

// stallingStore answers its first `answer` event reads, then stalls
// every read until the caller gives up: a database that stopped
// answering without closing the connection (a frozen proxy, a network
// partition), which no TCP error ever reports.
type stallingStore struct {
	store.Store
	answer int64
	reads  atomic.Int64
}

func (s *stallingStore) stall(ctx context.Context) error {
	<-ctx.Done()
	return ctx.Err()
}

func (s *stallingStore) Events(ctx context.Context, runID, after string, limit int) ([]store.Event, error) {
	if s.reads.Add(1) > s.answer {
		return nil, s.stall(ctx)
	}
	return s.Store.Events(ctx, runID, after, limit)
}

// Issue 14 (`runs events --follow` from another machine; every wait
// bounded): a follower whose database stops answering mid-run does not
// wait for it forever. Each read is bounded by ReadTimeout, and the
// error says how far the follower got, so it resumes there.
func TestFollowBoundsAStalledRead(t *testing.T) {
	base, id := twoAttemptRun(t, 3, 4)
	s := &stallingStore{Store: base, answer: 1} // the first attempt's events, then nothing
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	var got []string
	var err error
	for e, e2 := range fleet.Follow(ctx, s, id, fleet.FollowOptions{Follow: true, ReadTimeout: 50 * time.Millisecond}) {
		if e2 != nil {
			err = e2
			break
		}
		got = append(got, e.FleetCursor().String())
	}
	if ctx.Err() != nil {
		t.Fatalf("the follower waited for the stalled store until its caller gave up: %v", err)
	}
	var se *fleet.StalledError
	if !errors.As(err, &se) {
		t.Fatalf("error = %v, want a *fleet.StalledError", err)
	}
	if len(got) != 3 {
		t.Fatalf("yielded %v before the stall, want the first attempt's 3 events", got)
	}
	want := fleet.StalledError{RunID: id, Timeout: 50 * time.Millisecond, Cursor: got[len(got)-1]}
	if diff := cmp.Diff(want, *se, cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".Err" }, cmp.Ignore())); diff != "" {
		t.Errorf("StalledError (-want +got):\n%s", diff)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("error %v does not wrap context.DeadlineExceeded", err)
	}
}
