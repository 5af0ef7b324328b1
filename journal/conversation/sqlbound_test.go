package conversation_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentrt/agentrt/internal/pgtest"
	"github.com/agentrt/agentrt/internal/sqlitetest"
	"github.com/agentrt/agentrt/journal/conversation"
	"github.com/agentrt/agentrt/journal/conversation/conversationtest"
)

// boundCallTimeout is the CallTimeout of the journals a database that
// stops answering is given.
const boundCallTimeout = time.Second

// stoppingDatabase is a database that stops answering on fail and
// answers again on restore (idempotent).
type stoppingDatabase struct {
	open func(t *testing.T) *conversation.SQL
	// openPrefix opens (and so migrates) another journal in the same
	// database, its tables named by prefix.
	openPrefix    func(ctx context.Context, prefix string) (*conversation.SQL, error)
	fail, restore func()
}

// stoppingDatabases are the databases that stop answering: PostgreSQL
// black-holed by a proxy, SQLite's write lock held by another connection
// past a long busy timeout.
func stoppingDatabases() []struct {
	name string
	db   func(t *testing.T) stoppingDatabase
} {
	return []struct {
		name string
		db   func(t *testing.T) stoppingDatabase
	}{
		{"postgres/black-hole", func(t *testing.T) stoppingDatabase {
			conn, proxy := pgtest.ProxiedSchema(t)
			return stoppingDatabase{
				open: func(t *testing.T) *conversation.SQL {
					return openPostgres(t, conn, conversation.SQLOptions{CallTimeout: boundCallTimeout})
				},
				openPrefix: func(ctx context.Context, prefix string) (*conversation.SQL, error) {
					return conversation.OpenPostgres(ctx, conn, conversation.SQLOptions{Prefix: prefix, CallTimeout: boundCallTimeout})
				},
				fail: proxy.BlackHole, restore: proxy.Restore,
			}
		}},
		{"sqlite/locked", func(t *testing.T) stoppingDatabase {
			path := filepath.Join(t.TempDir(), "agentrt.db")
			var lock *sqlitetest.Lock
			return stoppingDatabase{
				open: func(t *testing.T) *conversation.SQL {
					// A busy timeout far past the call's bound: the call's
					// bound, not SQLite's, ends the wait.
					return openSQLite(t, path, conversation.SQLOptions{CallTimeout: boundCallTimeout, BusyTimeout: 10 * time.Minute})
				},
				openPrefix: func(ctx context.Context, prefix string) (*conversation.SQL, error) {
					return conversation.OpenSQLite(ctx, path, conversation.SQLOptions{Prefix: prefix, CallTimeout: boundCallTimeout, BusyTimeout: 10 * time.Minute})
				},
				fail: func() { lock = sqlitetest.Hold(t, path, 20*time.Second) },
				restore: func() {
					if lock == nil {
						return
					}
					if err := lock.Release(); err != nil {
						t.Error(err)
					}
				},
			}
		}},
	}
}

// A SQL journal whose database stops answering (PostgreSQL black-holed,
// SQLite's write lock held by another connection past a long busy
// timeout) ends each call of a caller without a deadline with a
// *TimeoutError within its CallTimeout, never hangs; once the database
// answers again the same append, retried, succeeds and records the turn
// once (RES-04: the append is idempotent). Calls once had no bound of
// their own and hung on a black-holed PostgreSQL.
func TestSQLCallsOnADatabaseThatStopsAnsweringEndTyped(t *testing.T) {
	const callTimeout = boundCallTimeout
	for _, tc := range stoppingDatabases() {
		t.Run(tc.name, func(t *testing.T) {
			d := tc.db(t)
			j := d.open(t)
			const runID = "run-bounded"
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if err := j.BeginRun(ctx, runID, time.UnixMilli(1_700_000_000_000)); err != nil {
				t.Fatal(err)
			}
			turn := conversationtest.MakeTurn(runID, 0, "Researcher")
			d.fail()
			// Restored when the test ends too, so a call that hung (the
			// defect) does not outlive it.
			t.Cleanup(d.restore)
			done := make(chan error, 1)
			go func() { done <- j.AppendTurn(context.Background(), runID, turn) }()
			select {
			case err := <-done:
				var te *conversation.TimeoutError
				if !errors.As(err, &te) || te.Op != "append" || te.RunID != runID || te.After != callTimeout || !errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("AppendTurn on a database that stopped answering: %v; want a *conversation.TimeoutError after %v", err, callTimeout)
				}
			case <-time.After(45 * time.Second):
				t.Fatalf("AppendTurn still blocked after 45s (call timeout %v)", callTimeout)
			}
			d.restore()
			if err := j.AppendTurn(ctx, runID, turn); err != nil {
				t.Fatalf("the retried append once the database answers: %v", err)
			}
			e, err := j.LoadRun(ctx, runID)
			if err != nil {
				t.Fatal(err)
			}
			if len(e.Turns) != 1 {
				t.Fatalf("the run holds %d turns after the retried append, want 1", len(e.Turns))
			}
		})
	}
}

// Migrate is bounded like every other call of a SQL journal: opening a
// journal (which migrates its tables) in a database that stops answering
// (PostgreSQL black-holed, SQLite's write lock held past a long busy
// timeout) ends, for a caller without a deadline, with a *TimeoutError
// (Op "migrate") within the CallTimeout; once the database answers
// again the same open succeeds (Migrate is idempotent) and the journal
// works. Migrate was once bounded only by the caller's context and hung.
func TestSQLMigrateOnADatabaseThatStopsAnsweringEndsTyped(t *testing.T) {
	for _, tc := range stoppingDatabases() {
		t.Run(tc.name, func(t *testing.T) {
			d := tc.db(t)
			d.open(t) // the database exists, with another journal in it
			d.fail()
			t.Cleanup(d.restore)
			done := make(chan error, 1)
			go func() {
				j, err := d.openPrefix(context.Background(), "late")
				if err == nil {
					j.Close()
				}
				done <- err
			}()
			select {
			case err := <-done:
				var te *conversation.TimeoutError
				if !errors.As(err, &te) || te.Op != "migrate" || te.After != boundCallTimeout || !errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("opening a journal in a database that stopped answering: %v; want a *conversation.TimeoutError after %v", err, boundCallTimeout)
				}
			case <-time.After(45 * time.Second):
				t.Fatalf("opening a journal still blocked after 45s (call timeout %v)", boundCallTimeout)
			}
			d.restore()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			j, err := d.openPrefix(ctx, "late")
			if err != nil {
				t.Fatalf("opening the journal again once the database answers: %v", err)
			}
			defer j.Close()
			if err := j.Migrate(ctx); err != nil {
				t.Fatal(err)
			}
			if err := j.BeginRun(ctx, "run-after-migrate", time.UnixMilli(1_700_000_000_000)); err != nil {
				t.Fatal(err)
			}
		})
	}
}
