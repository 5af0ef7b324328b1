package supervise

// WithoutControlScan makes a run leave its run dir's steer and cancel
// requests to run end, so tests can observe their expiry.
func WithoutControlScan(o *Options) { o.noControlScan = true }
