package supervise

import (
	"context"
	"errors"
	"path/filepath"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/journal"
)

// ReadRunDir reads the spawn journal of run directory dir without
// locking or changing anything, so an observer may read while the
// supervising process appends. It returns every record that decodes and
// how many lines it skipped: a corrupt line or one that is not a Record
// is counted and passed over, never hiding the lines after it, and a
// torn tail (an append still under way, or one that never returned) is
// ignored, as the journal's tolerant reader does. A missing journal is an
// error matching fs.ErrNotExist.
func ReadRunDir(ctx context.Context, dir string) ([]Record, int, error) {
	return readTolerant[Record](ctx, filepath.Join(dir, SpawnJournalFile))
}

// readTolerant reads the journal at path without locking it: every line
// that decodes as a T, and how many lines it skipped (a corrupt line, or
// one that is not a T, is counted and passed over; a torn tail is
// ignored, as the journal's tolerant reader does).
func readTolerant[T any](ctx context.Context, path string) ([]T, int, error) {
	var recs []T
	skipped := 0
	for e, err := range journal.Read(ctx, path, 1, journal.Options{}) {
		if err != nil {
			var corrupt *journal.CorruptError
			if errors.As(err, &corrupt) {
				skipped++
				continue
			}
			return recs, skipped, err
		}
		var r T
		if err := canonjson.FromValue(e.Value, &r); err != nil {
			skipped++
			continue
		}
		recs = append(recs, r)
	}
	return recs, skipped, nil
}
