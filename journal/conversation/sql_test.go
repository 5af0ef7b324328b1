package conversation_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/agentrt/agentrt/internal/pgtest"
	"github.com/agentrt/agentrt/journal/conversation"
	"github.com/agentrt/agentrt/journal/conversation/conversationtest"
)

// sqlBackend opens journals on one fresh database and runs raw
// statements (written with ? placeholders) against it.
type sqlBackend struct {
	open func(t *testing.T, opts conversation.SQLOptions) *conversation.SQL
	exec func(t *testing.T, query string, args ...any)
	one  func(t *testing.T, query string, args ...any) int64
}

func sqliteBackend(t *testing.T) sqlBackend {
	path := filepath.Join(t.TempDir(), "agentrt.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return sqlBackend{
		open: func(t *testing.T, opts conversation.SQLOptions) *conversation.SQL { return openSQLite(t, path, opts) },
		exec: func(t *testing.T, query string, args ...any) {
			t.Helper()
			if _, err := db.Exec(query, args...); err != nil {
				t.Fatal(err)
			}
		},
		one: func(t *testing.T, query string, args ...any) (n int64) {
			t.Helper()
			if err := db.QueryRow(query, args...).Scan(&n); err != nil {
				t.Fatal(err)
			}
			return n
		},
	}
}

func pgBackend(t *testing.T) sqlBackend {
	conn := pgtest.Schema(t)
	c, err := pgx.Connect(context.Background(), conn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	rebind := func(q string) string {
		for n := 1; strings.Contains(q, "?"); n++ {
			q = strings.Replace(q, "?", "$"+strconv.Itoa(n), 1)
		}
		return q
	}
	return sqlBackend{
		open: func(t *testing.T, opts conversation.SQLOptions) *conversation.SQL { return openPostgres(t, conn, opts) },
		exec: func(t *testing.T, query string, args ...any) {
			t.Helper()
			if _, err := c.Exec(context.Background(), rebind(query), args...); err != nil {
				t.Fatal(err)
			}
		},
		one: func(t *testing.T, query string, args ...any) (n int64) {
			t.Helper()
			if err := c.QueryRow(context.Background(), rebind(query), args...).Scan(&n); err != nil {
				t.Fatal(err)
			}
			return n
		},
	}
}

// forEachSQL runs fn against SQLite and PostgreSQL.
func forEachSQL(t *testing.T, fn func(t *testing.T, b sqlBackend)) {
	t.Run("sqlite", func(t *testing.T) { fn(t, sqliteBackend(t)) })
	t.Run("postgres", func(t *testing.T) { fn(t, pgBackend(t)) })
}

// Behaviour 62 (spec §15): Migrate twice succeeds, and so do journals
// opening (and migrating) the same database at once.
func TestSQLMigrateIsIdempotentBehaviour62(t *testing.T) {
	forEachSQL(t, func(t *testing.T, b sqlBackend) {
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() { b.open(t, conversation.SQLOptions{}) })
		}
		wg.Wait()
		s := b.open(t, conversation.SQLOptions{})
		for range 2 {
			if err := s.Migrate(context.Background()); err != nil {
				t.Fatalf("Migrate again: %v", err)
			}
		}
		if n := b.one(t, `SELECT count(*) FROM agent_runtime_journal_migrations`); n != 1 {
			t.Fatalf("%d migrations recorded, want 1", n)
		}
		mustBegin(t, s, "r")
	})
}

// The prefix is part of every statement, so only a plain identifier is
// accepted; journals with different prefixes share a database apart.
func TestSQLPrefix(t *testing.T) {
	for _, p := range []string{"1abc", "a-b", "a b", "x;DROP TABLE y", `a"b`, strings.Repeat("p", 49), "é"} {
		_, err := conversation.OpenSQLite(context.Background(), filepath.Join(t.TempDir(), "x.db"), conversation.SQLOptions{Prefix: p})
		if !errors.Is(err, conversation.ErrInvalidPrefix) {
			t.Errorf("prefix %q: %v, want ErrInvalidPrefix", p, err)
		}
	}
	forEachSQL(t, func(t *testing.T, b sqlBackend) {
		a := b.open(t, conversation.SQLOptions{Prefix: "product_a"})
		z := b.open(t, conversation.SQLOptions{Prefix: "Product_B_" + strings.Repeat("x", 38)})
		mustBegin(t, a, "r")
		if err := a.AppendTurn(context.Background(), "r", conversationtest.MakeTurn("r", 0, "a")); err != nil {
			t.Fatal(err)
		}
		if e, err := z.LoadRun(context.Background(), "r"); err != nil || e != nil {
			t.Fatalf("the other prefix sees %+v, %v", e, err)
		}
		if n := b.one(t, `SELECT count(*) FROM product_a_turns`); n != 1 {
			t.Fatalf("product_a_turns holds %d rows", n)
		}
	})
}

// Rows another writer serialized in another member order (the reference
// uses JSON.stringify) load, and retries compare equal to them.
func TestSQLReadsReferenceRows(t *testing.T) {
	forEachSQL(t, func(t *testing.T, b sqlBackend) {
		s := b.open(t, conversation.SQLOptions{})
		ctx := context.Background()
		b.exec(t, `INSERT INTO agent_runtime_journal_runs (run_id, started_at) VALUES (?, ?)`, "run_abc", "2026-12-01T12:00:00.000Z")
		b.exec(t, `INSERT INTO agent_runtime_journal_turns (run_id, turn_index, payload) VALUES (?, ?, ?)`, "run_abc", 0,
			`{"index":0,"speaker":"Researcher","turnId":"run_abc.t0.researcher","text":"hi","attempts":1,"startedAt":"2026-12-01T12:00:00.000Z","endedAt":"2026-12-01T12:00:00.500Z"}`)
		want := conversationtest.MakeTurn("run_abc", 0, "Researcher")
		want.Text = "hi"
		e, err := s.LoadRun(ctx, "run_abc")
		if err != nil || len(e.Turns) != 1 || e.Turns[0] != want {
			t.Fatalf("LoadRun = %+v, %v", e, err)
		}
		if err := s.AppendTurn(ctx, "run_abc", want); err != nil {
			t.Fatalf("retrying the recorded turn: %v", err)
		}
		b.exec(t, `UPDATE agent_runtime_journal_runs SET halted_kind = ?, halted_payload = ?, ended_at = ? WHERE run_id = ?`,
			"max_credits", `{"kind":"max_credits","spentCents":250,"capCents":200}`, "2026-12-01T12:01:00.000Z", "run_abc")
		halt := conversation.Halt{Kind: conversation.HaltMaxCredits, SpentCents: 250, CapCents: 200}
		if err := s.RecordHalt(ctx, "run_abc", halt, conversationtest.T0.Add(60e9)); err != nil {
			t.Fatalf("retrying the recorded halt: %v", err)
		}
		if e, err := s.LoadRun(ctx, "run_abc"); err != nil || e.Halt == nil || *e.Halt != halt {
			t.Fatalf("LoadRun = %+v, %v", e, err)
		}
	})
}

// Rows that do not decode or break the rules are reported, with where
// they are, never read as a shorter transcript.
func TestSQLCorruptRows(t *testing.T) {
	turn := func(i int, text string) string {
		return fmt.Sprintf(`{"attempts":1,"endedAt":"2026-12-01T12:00:01.000Z","index":%d,"speaker":"a","startedAt":"2026-12-01T12:00:00.000Z","text":%q,"turnId":"r.t%d.a"}`, i, text, i)
	}
	cases := []struct {
		name  string
		setup func(t *testing.T, b sqlBackend)
		load  func(t *testing.T, err error)
	}{
		{"payload not JSON", func(t *testing.T, b sqlBackend) {
			b.exec(t, `INSERT INTO p_turns (run_id, turn_index, payload) VALUES ('r', 0, 'not json')`)
		}, wantCorrupt(`run "r" turn 0`)},
		{"payload index differs", func(t *testing.T, b sqlBackend) {
			b.exec(t, `INSERT INTO p_turns (run_id, turn_index, payload) VALUES ('r', 0, ?)`, turn(1, "x"))
		}, wantCorrupt(`run "r" turn 0`)},
		{"gap", func(t *testing.T, b sqlBackend) {
			b.exec(t, `INSERT INTO p_turns (run_id, turn_index, payload) VALUES ('r', 0, ?), ('r', 2, ?)`, turn(0, "x"), turn(2, "y"))
		}, wantCorrupt(`run "r" turn 2`)},
		{"unknown member", func(t *testing.T, b sqlBackend) {
			b.exec(t, `INSERT INTO p_turns (run_id, turn_index, payload) VALUES ('r', 0, ?)`, strings.Replace(turn(0, "x"), `{`, `{"extra":true,`, 1))
		}, wantCorrupt(`run "r" turn 0`)},
		{"bad start", func(t *testing.T, b sqlBackend) {
			b.exec(t, `UPDATE p_runs SET started_at = 'yesterday'`)
		}, wantCorrupt(`run "r"`)},
		{"halt kind differs", func(t *testing.T, b sqlBackend) {
			b.exec(t, `UPDATE p_runs SET halted_kind = 'abort', halted_payload = '{"kind":"max_turns","turns":1}', ended_at = '2026-12-01T12:00:00.000Z'`)
		}, wantCorrupt(`run "r"`)},
		{"turn over the limit", func(t *testing.T, b sqlBackend) {
			b.exec(t, `INSERT INTO p_turns (run_id, turn_index, payload) VALUES ('r', 0, ?)`, turn(0, strings.Repeat("x", 700)))
		}, func(t *testing.T, err error) {
			var tl *conversation.TooLargeError
			if !errors.As(err, &tl) || tl.What != "turn" {
				t.Fatalf("LoadRun = %v, want a turn *TooLargeError", err)
			}
		}},
	}
	forEachSQL(t, func(t *testing.T, b sqlBackend) {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				s := b.open(t, conversation.SQLOptions{Prefix: "p", Limits: conversation.Limits{MaxTurnBytes: 600}})
				mustBegin(t, s, "r")
				c.setup(t, b)
				_, err := s.LoadRun(context.Background(), "r")
				c.load(t, err)
				// Leave the next case a clean run.
				b.exec(t, `DELETE FROM p_turns`)
				b.exec(t, `DELETE FROM p_runs`)
			})
		}
	})
}

func wantCorrupt(where string) func(t *testing.T, err error) {
	return func(t *testing.T, err error) {
		t.Helper()
		var ce *conversation.CorruptError
		if !errors.As(err, &ce) || ce.Where != where {
			t.Fatalf("LoadRun = %v, want a *CorruptError at %s", err, where)
		}
	}
}
