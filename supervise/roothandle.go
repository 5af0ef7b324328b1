package supervise

import (
	"errors"
	"sync"
)

// ErrRootNotLive: the RootHandle is not bound to a live run (the run has
// not started, or has returned).
var ErrRootNotLive = errors.New("supervise: the root handle is not bound to a live run")

// ErrRootInUse: Supervise was given a RootHandle that already serves a
// live run; a handle serves one run at a time.
var ErrRootInUse = errors.New("supervise: the root handle already serves a live run")

// RootHandle is a caller's handle on a live supervised run (§3.6
// rootHandle): Options.Root binds it for the run's life. Abort is the
// caller-facing abort, distinct from a cancellation: a cancelled run
// (its caller's context, CancelRun) ends no-winner cancelled, an
// aborted one no-winner aborted.
type RootHandle struct {
	mu    sync.Mutex
	inUse bool
	abort func(reason string) error
}

// NewRootHandle returns a handle to pass as Options.Root.
func NewRootHandle() *RootHandle { return &RootHandle{} }

// Abort ends the run the handle is bound to: the abort is journaled
// (KindAborted, with reason), the scope refuses every later spawn
// scope-aborted, the manager is stopped and every live worker
// cancelled, and the run ends no-winner aborted. Aborting a run already
// aborted (or whose breaker tripped) changes nothing. A handle bound to
// no run whose manager drives returns ErrRootNotLive. An abort the
// journal did not take still aborts the run, which then returns its
// result with a *JournalLossError.
func (h *RootHandle) Abort(reason string) error {
	h.mu.Lock()
	abort := h.abort
	h.mu.Unlock()
	if abort == nil {
		return ErrRootNotLive
	}
	return abort(reason)
}

// reserve takes h for one run (ErrRootInUse when another holds it); set
// makes it reach that run's abort once the run is live; release frees
// it.
func (h *RootHandle) reserve() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.inUse {
		return ErrRootInUse
	}
	h.inUse = true
	return nil
}

func (h *RootHandle) set(abort func(reason string) error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.abort = abort
}

func (h *RootHandle) release() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.inUse, h.abort = false, nil
}
