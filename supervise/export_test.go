package supervise

import (
	"context"
	"time"
)

// WithoutControlScan returns a context on which Supervise leaves its run
// dir's steer and cancel requests to run end, so tests can observe their
// expiry.
func WithoutControlScan(ctx context.Context) context.Context {
	return context.WithValue(ctx, noControlScanKey{}, true)
}

// WithUnsyncedJournal returns a context on which Supervise opens its run
// dir's spawn journal without fsyncs, for benchmarks that measure a
// spawn and settlement without the disk flush.
func WithUnsyncedJournal(ctx context.Context) context.Context {
	return context.WithValue(ctx, unsyncedJournalKey{}, true)
}

// WithSpawnLogWrapper returns a context on which Supervise wraps its
// run's spawn journal in wrap (the wrapper hides the journal's optional
// interfaces: its appends go through Append).
func WithSpawnLogWrapper(ctx context.Context, wrap func(SpawnLog) SpawnLog) context.Context {
	return context.WithValue(ctx, spawnLogWrapKey{}, wrap)
}

// WithEscalateTimeout returns a context on which Supervise bounds each
// call of its EscalateQuestion by d instead of
// DefaultEscalateQuestionTimeout.
func WithEscalateTimeout(ctx context.Context, d time.Duration) context.Context {
	return context.WithValue(ctx, escalateTimeoutKey{}, d)
}

// WithStopRuleTimeout returns a context on which Supervise bounds each
// call of its StopRule and OnProgressStop by d instead of
// DefaultStopRuleTimeout.
func WithStopRuleTimeout(ctx context.Context, d time.Duration) context.Context {
	return context.WithValue(ctx, stopRuleTimeoutKey{}, d)
}

// SetAuthorizeSpawnTimeout bounds each call of s's AuthorizeSpawn by d
// instead of DefaultAuthorizeSpawnTimeout.
func SetAuthorizeSpawnTimeout(s *Scope, d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.authorizeTimeout = d
}
