package supervise

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/canonjson"
)

// ReadRunDir passes over what a live or crashed writer leaves: a bad line
// in the middle is skipped and counted, a torn tail is ignored, and the
// records around them all come back.
func TestReadRunDir(t *testing.T) {
	tests := []struct {
		name        string
		journal     string
		want        []Record
		wantSkipped int
	}{
		{
			name:    "torn tail",
			journal: `{"kind":"run-started","runId":"r1","startedAtMs":1,"task":"t"}` + "\n" + `{"kind":"spawned","label":"a","node":"r1:s1"}` + "\n" + `{"kind":"settled","no`,
			want:    []Record{{Kind: KindRunStarted, RunID: "r1", StartedAtMS: 1, Task: "t"}, {Kind: KindSpawned, Node: "r1:s1", Label: "a"}},
		},
		{
			name:        "corrupt middle line",
			journal:     `{"kind":"run-started","runId":"r1"}` + "\n" + "not json\n" + `{"kind":"finished","outcome":"delivered"}` + "\n",
			want:        []Record{{Kind: KindRunStarted, RunID: "r1"}, {Kind: KindFinished, Outcome: "delivered"}},
			wantSkipped: 1,
		},
		{
			name:        "a record that is not a spawn-journal record",
			journal:     `{"kind":"run-started","runId":"r1"}` + "\n" + `{"kind":7}` + "\n" + `{"kind":"finished"}` + "\n",
			want:        []Record{{Kind: KindRunStarted, RunID: "r1"}, {Kind: KindFinished}},
			wantSkipped: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, SpawnJournalFile)
			if err := os.WriteFile(path, []byte(tt.journal), 0o600); err != nil {
				t.Fatal(err)
			}
			got, skipped, err := ReadRunDir(context.Background(), dir)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got, cmp.Comparer(canonjson.Equal)); diff != "" {
				t.Errorf("records (-want +got):\n%s", diff)
			}
			if skipped != tt.wantSkipped {
				t.Errorf("skipped %d lines, want %d", skipped, tt.wantSkipped)
			}
			after, err := os.ReadFile(path)
			if err != nil || string(after) != tt.journal {
				t.Errorf("reading changed the journal: %q, %v", after, err)
			}
		})
	}
	if _, _, err := ReadRunDir(context.Background(), t.TempDir()); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a directory without a journal: %v, want fs.ErrNotExist", err)
	}
}
