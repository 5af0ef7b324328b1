package sqlite_test

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/sqlite"
)

// BenchmarkEventAppendSQLite appends one event per durable commit through
// the store, beside a raw INSERT of the same row on a bare connection with
// the same pragmas (WAL, synchronous FULL): the store's overhead is the
// difference.
func BenchmarkEventAppendSQLite(b *testing.B) {
	ctx := context.Background()
	body, _ := canonjson.Decode([]byte(`{"type":"message.delta","delta":"Hello from the scripted worker.","messageId":"m1"}`))
	canonical, _ := canonjson.Canonical(body)

	b.Run("store", func(b *testing.B) {
		s, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "agentrt.db"), sqlite.Options{})
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		if _, err := s.CreateRun(ctx, store.Run{ID: "r", Kind: "execute", Status: store.StatusRunning}); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			i++
			if _, err := s.AppendEvents(ctx, store.Fence{RunID: "r", Generation: 1}, []store.NewEvent{{ID: fmt.Sprint("e", i), Type: "message.delta", Time: time.Now(), Body: body}}); err != nil {
				b.Fatal(err)
			}
		}
	})

	b.Run("raw-insert", func(b *testing.B) {
		q := url.Values{}
		q.Add("_pragma", "journal_mode(WAL)")
		q.Add("_pragma", "synchronous(FULL)")
		db, err := sql.Open("sqlite", "file:"+filepath.Join(b.TempDir(), "raw.db")+"?"+q.Encode())
		if err != nil {
			b.Fatal(err)
		}
		defer db.Close()
		db.SetMaxOpenConns(1)
		if _, err := db.Exec(`CREATE TABLE events (run_id TEXT NOT NULL, seq INTEGER NOT NULL, id TEXT NOT NULL, type TEXT NOT NULL, time INTEGER NOT NULL, body TEXT NOT NULL, PRIMARY KEY (run_id, seq)) STRICT, WITHOUT ROWID`); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			i++
			if _, err := db.Exec(`INSERT INTO events (run_id, seq, id, type, time, body) VALUES (?, ?, ?, ?, ?, ?)`,
				"r", i, fmt.Sprint("e", i), "message.delta", time.Now().UnixNano(), string(canonical)); err != nil {
				b.Fatal(err)
			}
		}
	})
}
