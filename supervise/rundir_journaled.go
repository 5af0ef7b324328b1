package supervise

import (
	"context"
	"errors"
	"path/filepath"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/journal"
)

// RunDirJournaled reports whether the spawn journal of run directory dir
// holds at least one record, reading it as ReadRunDir does (without
// locking; corrupt lines and lines that are no Record passed over, a
// torn tail ignored) but only up to its first record, so the question
// costs the same on a journal of five records and of five thousand. A
// missing journal is an error matching fs.ErrNotExist.
func RunDirJournaled(ctx context.Context, dir string) (bool, error) {
	for e, err := range journal.Read(ctx, filepath.Join(dir, SpawnJournalFile), 1, journal.Options{}) {
		if err != nil {
			if _, corrupt := errors.AsType[*journal.CorruptError](err); corrupt {
				continue
			}
			return false, err
		}
		var r Record
		if canonjson.FromValue(e.Value, &r) == nil {
			return true, nil
		}
	}
	return false, nil
}
