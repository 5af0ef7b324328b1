package supervise

import "context"

// WithoutControlScan returns a context on which Supervise leaves its run
// dir's steer and cancel requests to run end, so tests can observe their
// expiry.
func WithoutControlScan(ctx context.Context) context.Context {
	return context.WithValue(ctx, noControlScanKey{}, true)
}
