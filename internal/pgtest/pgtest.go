package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Environment variables.
const (
	// URLEnv names the PostgreSQL database the tests may use (they create
	// and drop schemas in it).
	URLEnv = "AGENTRT_TEST_DATABASE_URL"
	// RequireEnv, set to 1, turns the skip into a failure.
	RequireEnv = "AGENTRT_REQUIRE_POSTGRES"
)

// HowTo says how to run the PostgreSQL tests.
const HowTo = URLEnv + ` is not set, so the PostgreSQL tests are skipped. To run them (Debian/Ubuntu, as root or with sudo):
    apt-get install -y postgresql
    pg_ctlcluster $(ls /usr/lib/postgresql | sort -V | tail -n1) main start    # or: service postgresql start
    runuser -u postgres -- psql -c "CREATE ROLE agentrt LOGIN PASSWORD 'agentrt'" -c "CREATE DATABASE agentrt_test OWNER agentrt"
    export ` + URLEnv + `='postgres://agentrt:agentrt@localhost:5432/agentrt_test?sslmode=disable'
    go test ./...
(.ci/run does all of this and sets ` + RequireEnv + `=1, which makes a missing database a failure.)`

// URL returns the test database URL. Without one it skips the test with
// HowTo, or fails it when RequireEnv is 1.
func URL(t testing.TB) string {
	t.Helper()
	u := os.Getenv(URLEnv)
	if u == "" {
		if os.Getenv(RequireEnv) == "1" {
			t.Fatal(RequireEnv + "=1 but " + HowTo)
		}
		t.Skip(HowTo)
	}
	return u
}

// Schema creates a fresh, uniquely named schema in the test database,
// drops it (with everything in it) when the test ends, and returns a
// connection string whose search_path is that schema.
func Schema(t testing.TB) string {
	t.Helper()
	base := URL(t)
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	name := "agentrt_test_" + hex.EncodeToString(b[:])
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("connecting to %s: %v", URLEnv, err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, base)
		if err != nil {
			t.Errorf("dropping schema %s: %v", name, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP SCHEMA "+name+" CASCADE"); err != nil {
			t.Errorf("dropping schema %s: %v", name, err)
		}
	})
	return WithSearchPath(t, base, name)
}

// WithSearchPath returns conn (a URL or a key=value string) with its
// search_path set to schema.
func WithSearchPath(t testing.TB, conn, schema string) string {
	t.Helper()
	if strings.HasPrefix(conn, "postgres://") || strings.HasPrefix(conn, "postgresql://") {
		u, err := url.Parse(conn)
		if err != nil {
			t.Fatalf("%s: %v", URLEnv, err)
		}
		q := u.Query()
		q.Set("search_path", schema)
		u.RawQuery = q.Encode()
		return u.String()
	}
	return conn + " search_path=" + schema
}
