package conversation_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/agentrt/agentrt/internal/pgtest"
	"github.com/agentrt/agentrt/journal/conversation"
	"github.com/agentrt/agentrt/journal/conversation/conversationtest"
)

// Every adapter passes the same contract cases (RES-04).

func TestMemoryContract(t *testing.T) {
	conversationtest.Run(t, func(t *testing.T, lim conversation.Limits) conversationtest.Subject {
		m := conversation.NewMemory(lim)
		t.Cleanup(func() { m.Close() })
		return conversationtest.Subject{Journal: m, Reopen: func(*testing.T) conversation.Journal { return m }}
	})
}

func openFile(t *testing.T, path string, lim conversation.Limits) *conversation.File {
	t.Helper()
	f, err := conversation.OpenFile(context.Background(), path, conversation.FileOptions{Limits: lim})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func TestFileContract(t *testing.T) {
	conversationtest.Run(t, func(t *testing.T, lim conversation.Limits) conversationtest.Subject {
		path := filepath.Join(t.TempDir(), "conversations.jsonl")
		f := openFile(t, path, lim)
		return conversationtest.Subject{Journal: f, Reopen: func(t *testing.T) conversation.Journal {
			f.Close()
			f = openFile(t, path, lim)
			return f
		}}
	})
}

func openSQLite(t *testing.T, path string, opts conversation.SQLOptions) *conversation.SQL {
	t.Helper()
	s, err := conversation.OpenSQLite(context.Background(), path, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestSQLiteContract(t *testing.T) {
	conversationtest.Run(t, func(t *testing.T, lim conversation.Limits) conversationtest.Subject {
		path := filepath.Join(t.TempDir(), "agentrt.db")
		opts := conversation.SQLOptions{Limits: lim, Prefix: "conv"}
		s := openSQLite(t, path, opts)
		return conversationtest.Subject{Journal: s, Reopen: func(t *testing.T) conversation.Journal {
			s.Close()
			s = openSQLite(t, path, opts)
			return s
		}}
	})
}

func openPostgres(t *testing.T, conn string, opts conversation.SQLOptions) *conversation.SQL {
	t.Helper()
	s, err := conversation.OpenPostgres(context.Background(), conn, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestPostgresContract(t *testing.T) {
	pgtest.URL(t)
	conversationtest.Run(t, func(t *testing.T, lim conversation.Limits) conversationtest.Subject {
		conn := pgtest.Schema(t)
		opts := conversation.SQLOptions{Limits: lim}
		s := openPostgres(t, conn, opts)
		return conversationtest.Subject{Journal: s, Reopen: func(t *testing.T) conversation.Journal {
			s.Close()
			s = openPostgres(t, conn, opts)
			return s
		}}
	})
}
