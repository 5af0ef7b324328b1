//go:build !unix || solaris || aix

package supervise

import (
	"errors"
	"os"
)

var errLockHeld = errors.New("supervise: supervise.lock is held")

// flockNB refuses where no advisory lock is implemented, as the journal
// does: a run dir two supervisors could drive is not owned.
func flockNB(*os.File) error {
	return errors.New("supervise: advisory file locks are not supported on this system")
}

func unflock(*os.File) error { return nil }
