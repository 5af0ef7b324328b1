package retained

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/store"
)

// EventsGrace is how long Run.Events waits, once the caller's context
// ended or the caller stopped reading, for the provider's stream to
// return before it leaves it behind. A stream that ignores its context
// never holds the reader longer than that.
const EventsGrace = 200 * time.Millisecond

// storeFailure types the error of one store call a retained run made
// under the caller's ctx: a *kernel.StoreError of op for run id when the
// store failed or did not answer within storeTimeout. The store's own
// answers (not found, exists, invalid, conflict, ended) and a caller's
// context that ended are returned as they are: they are not the store
// failing.
func storeFailure(ctx context.Context, id, op string, err error) error {
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil,
		errors.Is(err, store.ErrNotFound), errors.Is(err, store.ErrExists), errors.Is(err, store.ErrInvalid),
		errors.Is(err, store.ErrConflict), errors.Is(err, store.ErrTerminal):
		return fmt.Errorf("retained: %s of run %s: %w", op, id, err)
	}
	return &kernel.StoreError{RunID: id, Op: op, Err: err}
}
