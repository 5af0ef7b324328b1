package sqlitetest

import (
	"context"
	"database/sql"
	"net/url"
	"strconv"
	"sync"
	"testing"
	"time"

	_ "modernc.org/sqlite" // the driver the stores use
)

// Lock is a second connection holding an exclusive transaction (BEGIN
// EXCLUSIVE) on a SQLite file: while it is held, every other
// connection's write waits on busy and then fails (SQLITE_BUSY); in WAL
// mode, reads still answer.
type Lock struct {
	db   *sql.DB
	conn *sql.Conn
	once sync.Once
	err  error
}

// Hold takes the file's write lock, waiting up to wait for a writer
// that holds it now, and releases it when t ends if the test did not.
func Hold(t testing.TB, path string, wait time.Duration) *Lock {
	t.Helper()
	q := url.Values{}
	q.Add("_pragma", "busy_timeout("+strconv.FormatInt(wait.Milliseconds(), 10)+")")
	db, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
	if err != nil {
		t.Fatalf("sqlitetest: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait+10*time.Second)
	defer cancel()
	conn, err := db.Conn(ctx)
	if err != nil {
		db.Close()
		t.Fatalf("sqlitetest: %v", err)
	}
	if _, err := conn.ExecContext(ctx, "BEGIN EXCLUSIVE"); err != nil {
		conn.Close()
		db.Close()
		t.Fatalf("sqlitetest: taking the write lock of %s: %v", path, err)
	}
	l := &Lock{db: db, conn: conn}
	t.Cleanup(func() {
		if err := l.Release(); err != nil {
			t.Errorf("sqlitetest: releasing the write lock of %s: %v", path, err)
		}
	})
	return l
}

// Release rolls the exclusive transaction back and closes the
// connection; writers go on. It is idempotent.
func (l *Lock) Release() error {
	l.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err := l.conn.ExecContext(ctx, "ROLLBACK")
		l.err = err
		if err := l.conn.Close(); l.err == nil {
			l.err = err
		}
		if err := l.db.Close(); l.err == nil {
			l.err = err
		}
	})
	return l.err
}
