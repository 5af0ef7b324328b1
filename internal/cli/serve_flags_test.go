package cli_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/internal/cli"
	"github.com/agentrt/agentrt/internal/pgtest"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/providers/remote"
)

// keyedCreate creates an environment on the server at url under key.
func keyedCreate(t *testing.T, ctx context.Context, url, key string) contract.Environment {
	t.Helper()
	p, err := remote.New(remote.Options{BaseURL: url, Token: serveToken})
	if err != nil {
		t.Fatal(err)
	}
	env, err := p.Create(ctx, &contract.CreateInput{Profile: profile.Ref{Inline: &profile.Profile{Name: profile.Ptr("t")}}, IdempotencyKey: &key})
	if err != nil {
		t.Fatalf("create under %s at %s: %v", key, url, err)
	}
	return env
}

// ENV-12 (issue 14: "Keyed creates are persisted in the server's store,
// so a restarted server replays a retried create"): without --db or
// --database, agentrt serve records keyed creates in the default run
// store ($AGENTRT_HOME/agentrt.db, as agentrt run does), so a server
// restarted on the same home answers a retried create replayed, with the
// same environment, instead of making a second one. --db :memory: opts
// out: the restarted server has forgotten the key and creates anew.
func TestServeDefaultStoreReplaysKeyedCreateAfterRestart(t *testing.T) {
	for _, tc := range []struct {
		name   string
		args   []string
		replay bool
	}{
		{"default store", nil, true},
		{"in memory", []string{"--db", ":memory:"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			home := t.TempDir()
			env := []string{"AGENTRT_HOME=" + home, "AGENTRT_DATABASE_URL="}
			args := append([]string{"--provider", "scripted"}, tc.args...)
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			first := startServeProc(t, env, args...)
			made := keyedCreate(t, ctx, first.url, "restart-key")
			if made.Creation() != contract.CreationCreated {
				t.Fatalf("the first create: %q, want created", made.Creation())
			}
			first.stop(t, os.Interrupt, time.Minute)
			if _, err := os.Stat(home + "/agentrt.db"); (err == nil) != tc.replay {
				t.Fatalf("the home's store after the first server: %v; want it there: %v", err, tc.replay)
			}
			again := keyedCreate(t, ctx, startServeProc(t, env, args...).url, "restart-key")
			if tc.replay {
				if again.Creation() != contract.CreationReplayed || again.ID() != made.ID() {
					t.Fatalf("the restarted server's create: %q %s, want replayed %s", again.Creation(), again.ID(), made.ID())
				}
				return
			}
			// (The scripted provider numbers its environments from 1 in
			// every process: the new one may carry the old one's id.)
			if again.Creation() != contract.CreationCreated {
				t.Fatalf("the restarted in-memory server's create: %q %s, want a new environment", again.Creation(), again.ID())
			}
		})
	}
}

// --database-schema puts the server's records in their own PostgreSQL
// schema (created if missing; issue 14 Deliver 3): two servers on the
// same database and schema replay each other's keyed creates, and the
// store's tables are in that schema, not in the connection's search_path.
func TestServeDatabaseSchema(t *testing.T) {
	base := pgtest.URL(t)
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	schema := "agentrt_serve_" + hex.EncodeToString(b[:])
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, _ = conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+schema+" CASCADE")
		conn.Close(ctx)
	})
	args := []string{"--provider", "scripted", "--database", base, "--database-schema", schema}
	a, b2 := startServe(t, args...), startServe(t, args...)
	made := keyedCreate(t, ctx, a, "schema-key")
	again := keyedCreate(t, ctx, b2, "schema-key")
	if again.Creation() != contract.CreationReplayed || again.ID() != made.ID() {
		t.Fatalf("the other server's create: %q %s, want replayed %s", again.Creation(), again.ID(), made.ID())
	}
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM information_schema.tables WHERE table_schema = $1 AND table_name = 'idempotency'", schema).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Errorf("the idempotency table is not in schema %s", schema)
	}
	var rows int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM "+schema+".idempotency").Scan(&rows); err != nil || rows == 0 {
		t.Errorf("records in %s.idempotency: %d, %v; want the keyed create's", schema, rows, err)
	}
}

// --log-format json (as agentrt worker has): every line the server
// writes on stderr, from listening to stopped, is one JSON object with
// a level and a message, and carries no token.
func TestServeLogFormatJSON(t *testing.T) {
	p := startServeProc(t, []string{"AGENTRT_DATABASE_URL="}, "--provider", "scripted", "--db", ":memory:", "--log-format", "json")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	keyedCreate(t, ctx, p.url, "json-log-key")
	p.stop(t, os.Interrupt, time.Minute)
	logged := p.logged()
	lines := strings.Split(strings.TrimSpace(logged), "\n")
	var msgs []string
	for _, line := range lines {
		var rec struct {
			Level string `json:"level"`
			Msg   string `json:"msg"`
		}
		dec := json.NewDecoder(strings.NewReader(line))
		if err := dec.Decode(&rec); err != nil || rec.Level == "" || rec.Msg == "" || dec.More() {
			t.Fatalf("a line that is no JSON log record (%v): %q\nlog:\n%s", err, line, logged)
		}
		msgs = append(msgs, rec.Msg)
	}
	all := strings.Join(msgs, "\n")
	if !strings.Contains(all, "agentrt serve: listening on http://127.0.0.1:") || !strings.Contains(all, "agentrt serve: stopped") {
		t.Errorf("the JSON log does not say where it listened and that it stopped:\n%s", logged)
	}
}

// Usage errors of the store and log flags, refused before anything is
// served.
func TestServeStoreAndLogFlagsRefused(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--log-format", "yaml"}, "--log-format must be text or json"},
		{[]string{"--db", ":memory:", "--database", "postgres://h/db"}, "two different stores"},
		{[]string{"--db", ":memory:", "--database-schema", "s"}, "--database-schema applies to a PostgreSQL store"},
		{[]string{"--db", t.TempDir() + "/x.db", "--database-schema", "s"}, "--database-schema names a PostgreSQL schema"},
	} {
		var out, errOut bytes.Buffer
		code := cli.Main(context.Background(), append([]string{"serve", "--listen", "127.0.0.1:0"}, tc.args...), cli.IO{In: strings.NewReader(""), Out: &out, Err: &errOut})
		if code != cli.ExitUsage || !strings.Contains(errOut.String(), tc.want) {
			t.Errorf("serve %q: exit %d, %s; want usage saying %q", tc.args, code, errOut.String(), tc.want)
		}
	}
}

// With --log-format json, the error a long-running command ends with is
// its last JSON log line (the command, its exit status, the error), not
// a plain-text line a JSON collector would miss; the exit status is the
// same. Every line on stderr is one JSON object.
func TestLongRunningCommandsEndWithAJSONLogLine(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"worker", []string{"worker", "--database", "postgres://agentrt:agentrt@127.0.0.1:1/none?sslmode=disable", "--log-format", "json"}, cli.ExitFailed, "127.0.0.1"},
		{"serve", []string{"serve", "--listen", "0.0.0.0:0", "--db", ":memory:", "--log-format", "json"}, cli.ExitUsage, "refusing to listen on 0.0.0.0:0 without a token"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("AGENTRT_SERVE_TOKEN", "")
			t.Setenv("AGENTRT_DATABASE_URL", "")
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			var out, errOut bytes.Buffer
			code := cli.Main(ctx, tc.args, cli.IO{In: strings.NewReader(""), Out: &out, Err: &errOut})
			if code != tc.code {
				t.Fatalf("exit %d, want %d\n%s", code, tc.code, errOut.String())
			}
			var last struct {
				Level string  `json:"level"`
				Msg   string  `json:"msg"`
				Exit  float64 `json:"exit"`
				Err   string  `json:"err"`
			}
			for _, line := range strings.Split(strings.TrimSpace(errOut.String()), "\n") {
				dec := json.NewDecoder(strings.NewReader(line))
				if err := dec.Decode(&last); err != nil || last.Level == "" || dec.More() {
					t.Fatalf("a line that is no JSON log record (%v): %q\nlog:\n%s", err, line, errOut.String())
				}
			}
			if last.Level != "ERROR" || last.Msg != "agentrt "+tc.name+" stopped" || int(last.Exit) != tc.code || !strings.Contains(last.Err, tc.want) {
				t.Errorf("last line %+v; want an ERROR %q with exit %d and an err naming %q", last, "agentrt "+tc.name+" stopped", tc.code, tc.want)
			}
		})
	}
}
