package supervise

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt/store"
)

// TestStoreSpawnLogLeaseEndIsOnTheMonotonicClock: the lease a store
// spawn journal believes it holds is compared with time.Now on the
// monotonic clock, so a step of the wall clock (an NTP correction, a
// resumed VM) neither gives up a lease renewed in time nor keeps one
// that ran out. A wall-clock instant (Unix ms, as it was kept) carries
// no monotonic reading.
func TestStoreSpawnLogLeaseEndIsOnTheMonotonicClock(t *testing.T) {
	l := &StoreSpawnLog{base: time.Now()}
	end := time.Now().Add(15 * time.Second)
	l.extend(end)
	got := l.until()
	if !strings.Contains(got.String(), " m=") {
		t.Fatalf("the lease's end %s has no monotonic reading: wall-clock steps would lapse or stretch it", got)
	}
	if d := got.Sub(end); d < -time.Microsecond || d > time.Microsecond {
		t.Errorf("the lease's end moved by %s", d)
	}
	l.extend(end.Add(-time.Second))
	if d := l.until().Sub(end); d < -time.Microsecond || d > time.Microsecond {
		t.Errorf("an earlier end moved the lease's end by %s; want it ignored", d)
	}
	if err := l.lapsed(time.Now()); err != nil {
		t.Errorf("lapsed before the end: %v", err)
	}
	err := l.lapsed(end.Add(time.Millisecond))
	var fe *store.FenceError
	if !errors.As(err, &fe) || fe.Reason != store.FenceLapsed {
		t.Fatalf("lapsed after the end = %v, want a *store.FenceError of reason %q", err, store.FenceLapsed)
	}
	if strings.Contains(fe.LeaseUntil.String(), " m=") {
		t.Errorf("the refusal's LeaseUntil %s carries a monotonic reading into what callers print", fe.LeaseUntil)
	}
}
