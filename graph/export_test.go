package graph

// SetBeforeLensRoute makes o's run call f in each lens finding's
// settlement hook before the finding is routed and ledgered.
func SetBeforeLensRoute(o *Options, f func()) { o.beforeLensRoute = f }

// SetAfterRouteSteer makes o's run call f when a routed finding's steer
// was delivered to its destination worker, before its row is ledgered.
func SetAfterRouteSteer(o *Options, f func()) { o.afterRouteSteer = f }
