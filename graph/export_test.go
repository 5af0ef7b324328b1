package graph

// SetBeforeLensRoute makes o's run call f in each lens finding's
// settlement hook before the finding is routed and ledgered.
func SetBeforeLensRoute(o *Options, f func()) { o.beforeLensRoute = f }
