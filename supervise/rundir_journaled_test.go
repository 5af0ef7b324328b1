package supervise_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/supervise"
)

// RunDirJournaled answers as len(ReadRunDir) > 0 does: a journal of
// records, one whose only lines are corrupt, torn or no Record, an empty
// one, and a missing one (fs.ErrNotExist).
func TestRunDirJournaled(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		journal *string
		want    bool
	}{
		{name: "records", journal: new(recordLine(1) + recordLine(2)), want: true},
		{name: "a corrupt line before a record", journal: new("{oops\n" + recordLine(1)), want: true},
		{name: "only corrupt lines", journal: new("{oops\n" + `{"kind":7}` + "\n")},
		{name: "only a torn line", journal: new(recordLine(1)[:10])},
		{name: "empty", journal: new("")},
		{name: "missing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if tc.journal != nil {
				if err := os.WriteFile(filepath.Join(dir, supervise.SpawnJournalFile), []byte(*tc.journal), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			got, err := supervise.RunDirJournaled(ctx, dir)
			if tc.journal == nil {
				if !errors.Is(err, fs.ErrNotExist) {
					t.Fatalf("a missing journal: %v, want fs.ErrNotExist", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			recs, _, err := supervise.ReadRunDir(ctx, dir)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want || got != (len(recs) > 0) {
				t.Fatalf("RunDirJournaled = %v, want %v (ReadRunDir read %d records)", got, tc.want, len(recs))
			}
		})
	}
}

// BenchmarkRunDirJournaled is the question delegation asks of a run dir
// before an attempt, on a 5,000-record journal: "read" reads the whole
// journal (what it did before), "first" reads up to its first record.
func BenchmarkRunDirJournaled(b *testing.B) {
	ctx := context.Background()
	dir := b.TempDir()
	var sb strings.Builder
	for i := range 5000 {
		sb.WriteString(recordLine(i))
	}
	if err := os.WriteFile(filepath.Join(dir, supervise.SpawnJournalFile), []byte(sb.String()), 0o600); err != nil {
		b.Fatal(err)
	}
	b.Run("read", func(b *testing.B) {
		for b.Loop() {
			if recs, _, err := supervise.ReadRunDir(ctx, dir); err != nil || len(recs) == 0 {
				b.Fatal(err)
			}
		}
	})
	b.Run("first", func(b *testing.B) {
		for b.Loop() {
			if ok, err := supervise.RunDirJournaled(ctx, dir); err != nil || !ok {
				b.Fatal(err)
			}
		}
	})
}
