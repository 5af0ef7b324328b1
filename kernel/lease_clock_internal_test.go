package kernel

import (
	"strings"
	"testing"
	"time"
)

// The lease this process believes it holds is kept on the monotonic
// clock: a step of the wall clock (a VM's time sync) must not lapse a
// lease renewed in time. A fresh-clone CI run here lost a 15 s lease
// in a 5.5 s test ("ran out before it could be renewed"); the lease's
// end was a wall-clock instant (time.Unix), so every comparison with
// time.Now used the wall clock. until now carries a monotonic reading
// (time.Time's String shows it as "m=").
func TestLeaseEndIsOnTheMonotonicClock(t *testing.T) {
	l := &life{base: time.Now()}
	end := time.Now().Add(15 * time.Second)
	l.setUntil(end)
	got := l.until()
	if !strings.Contains(got.String(), " m=") {
		t.Fatalf("the lease's end %s has no monotonic reading: wall-clock steps would lapse or stretch it", got)
	}
	if d := got.Sub(end); d < -time.Microsecond || d > time.Microsecond {
		t.Errorf("the lease's end moved by %s", d)
	}
	if l.lapsed(time.Now()) || !l.lapsed(end.Add(time.Millisecond)) {
		t.Error("lapsed does not compare with the lease's end")
	}
}
