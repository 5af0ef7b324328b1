package supervise

import (
	"encoding/json"
	"testing"
	"time"
)

// §9 await_event: omitted waits the default fence, a positive timeout
// waits that long up to the most, and a negative one ("unbounded") the
// most a wait may last.
func TestAwaitBound(t *testing.T) {
	for ms, want := range map[int64]time.Duration{
		0:                                  DefaultAwaitTimeout,
		1500:                               1500 * time.Millisecond,
		MaxAwaitTimeout.Milliseconds() * 2: MaxAwaitTimeout,
		-1:                                 MaxAwaitTimeout,
	} {
		if got := awaitBound(ms); got != want {
			t.Errorf("awaitBound(%d) = %v, want %v", ms, got, want)
		}
	}
}

// §9 await_event "≤0 = unbounded": in a tool call's JSON an explicit
// timeoutMs 0 is the unbounded wait, not the omitted default; unknown
// members are still refused.
func TestAwaitArgsExplicitZeroIsUnbounded(t *testing.T) {
	for _, tc := range []struct {
		args string
		want time.Duration
	}{
		{`{}`, DefaultAwaitTimeout},
		{`{"kinds": ["settled"]}`, DefaultAwaitTimeout},
		{`{"timeoutMs": 0}`, MaxAwaitTimeout},
		{`{"timeoutMs": -5}`, MaxAwaitTimeout},
		{`{"timeoutMs": 250, "kinds": ["question"]}`, 250 * time.Millisecond},
	} {
		var a AwaitArgs
		if err := json.Unmarshal([]byte(tc.args), &a); err != nil {
			t.Fatalf("%s: %v", tc.args, err)
		}
		if got := awaitBound(a.TimeoutMS); got != tc.want {
			t.Errorf("%s: waits %v, want %v", tc.args, got, tc.want)
		}
	}
	var a AwaitArgs
	if err := json.Unmarshal([]byte(`{"timeoutMs": 0, "extra": 1}`), &a); err == nil {
		t.Error("an unknown member was accepted")
	}
}
