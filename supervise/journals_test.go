package supervise_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/internal/pgtest"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/store/postgres"
	"github.com/agentrt/agentrt/store/sqlite"
	"github.com/agentrt/agentrt/supervise"
)

// spawnJournal is one spawn journal a resume test runs on: set opens it
// (a store is closed at the test's end) and returns what puts it in a
// run's options.
type spawnJournal struct {
	name string
	set  func(t *testing.T) func(*supervise.Options)
}

// spawnJournals are the run dir's file (set changes nothing), a SQLite
// store and a PostgreSQL store (§3.6, §13: one journal contract).
func spawnJournals() []spawnJournal {
	return []spawnJournal{
		{"file", func(*testing.T) func(*supervise.Options) { return func(*supervise.Options) {} }},
		{"sqlite", sqliteJournal},
		{"postgres", postgresJournal},
	}
}

// sqliteJournal opens a fresh SQLite store as a run's spawn journal.
func sqliteJournal(t *testing.T) func(*supervise.Options) {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "runs.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return func(o *supervise.Options) { o.SpawnStore, o.SpawnLeaseTTL = st, kernel.MinLeaseTTL }
}

// postgresJournal opens a fresh PostgreSQL schema as a run's spawn
// journal.
func postgresJournal(t *testing.T) func(*supervise.Options) {
	t.Helper()
	st, err := postgres.Open(context.Background(), pgtest.Schema(t), postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return func(o *supervise.Options) { o.SpawnStore, o.SpawnLeaseTTL = st, kernel.MinLeaseTTL }
}

// journaledToolAnswers are the tool answers the run dir's transcripts
// hold, by tool call id.
func journaledToolAnswers(t *testing.T, dir string) map[string]string {
	t.Helper()
	recs, _, err := supervise.ReadRunDir(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	answers := map[string]string{}
	for _, r := range recs {
		for _, m := range r.Messages {
			if r.Kind == supervise.KindTranscript && m.Role == contract.ChatTool && m.Content != nil {
				answers[m.ToolCallID] = *m.Content
			}
		}
	}
	return answers
}
