package ctxsleep_test

import (
	"context"
	"testing"
	"time"

	"github.com/agentrt/agentrt/internal/ctxsleep"
)

func TestSleep(t *testing.T) {
	live := context.Background()
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	cases := []struct {
		name string
		ctx  context.Context
		d    time.Duration
		want bool
	}{
		{"a short wait passes", live, time.Millisecond, true},
		{"no wait on a live context", live, 0, true},
		{"no wait on an ended context", ended, 0, false},
		{"an ended context cuts an hour", ended, time.Hour, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			if got := ctxsleep.Sleep(tc.ctx, tc.d); got != tc.want {
				t.Errorf("Sleep = %v, want %v", got, tc.want)
			}
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("Sleep took %s", d)
			}
		})
	}
}

// A context that ends during the wait ends it then.
func TestSleepCutShort(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	start := time.Now()
	if ctxsleep.Sleep(ctx, time.Hour) {
		t.Error("Sleep reported the hour passed")
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("Sleep took %s after its context ended", d)
	}
}
