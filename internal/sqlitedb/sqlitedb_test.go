package sqlitedb_test

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/agentrt/agentrt/internal/sqlitedb"
)

// Several processes (here: pools) opening one new database at once must
// wait for each other's switch to WAL, not fail with SQLITE_BUSY: the busy
// timeout has to be in force before journal_mode is set.
func TestConcurrentOpenOfNewDatabaseWaits(t *testing.T) {
	for round := range 20 {
		path := filepath.Join(t.TempDir(), "new.db")
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for range 8 {
			wg.Go(func() {
				w, r, err := sqlitedb.Open(context.Background(), path, 5*time.Second)
				if err != nil {
					errs <- err
					return
				}
				defer w.Close()
				defer r.Close()
				steps := []sqlitedb.Migration{{Version: "0001", SQL: `CREATE TABLE IF NOT EXISTS t (x INTEGER) STRICT`}}
				if err := sqlitedb.MigrateSteps(context.Background(), w, steps, "m", time.Unix(0, 0)); err != nil {
					errs <- err
					return
				}
				if err := r.PingContext(context.Background()); err != nil {
					errs <- err
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatalf("round %d: %v", round, err)
		}
	}
}
