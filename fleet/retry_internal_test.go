package fleet

import (
	"testing"
	"time"

	"github.com/riverqueue/river/rivertype"
)

// A run's job is retried after at most MaxRetryBackoff, however many
// errors it had (River's default would wait errors^4 seconds: 625 s
// after the fifth), with jitter that only shortens the wait.
func TestRetryBackoffIsCapped(t *testing.T) {
	for _, tc := range []struct {
		errors int
		jitter float64
		want   time.Duration
	}{
		{0, 0, time.Second},
		{1, 0, time.Second},
		{2, 0, 2 * time.Second},
		{5, 0, 16 * time.Second},
		{6, 0, MaxRetryBackoff},
		{25, 0, MaxRetryBackoff},
		{1 << 20, 0, MaxRetryBackoff},
		{25, 0.999, MaxRetryBackoff - time.Duration(float64(MaxRetryBackoff)*0.2*0.999)},
	} {
		if got := retryBackoff(tc.errors, tc.jitter); got != tc.want {
			t.Errorf("retryBackoff(%d, %v) = %v, want %v", tc.errors, tc.jitter, got, tc.want)
		}
	}
	job := &rivertype.JobRow{Errors: make([]rivertype.AttemptError, 40)}
	if wait := time.Until(retryPolicy{}.NextRetry(job)); wait > MaxRetryBackoff || wait < MaxRetryBackoff*7/10 {
		t.Errorf("NextRetry after 40 errors is %v away, want within (0.8, 1] × %v", wait, MaxRetryBackoff)
	}
}
