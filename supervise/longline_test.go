package supervise_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/agentrt/agentrt/supervise"
)

// A run dir file with a line far over the record limit (24 MiB here, for
// the 1 GiB the issue names: three times the allocation bound, and small
// on a CI machine's disk) between two good records is read tolerantly by
// each reader: the long line is skipped and counted, the
// records after it are read, and the reader allocates a bounded amount
// whatever the line's length (it never holds the line).
func TestRunDirReadersSkipAHugeLine(t *testing.T) {
	const huge = 24 << 20
	const allocBound = 8 << 20
	line := bytes.Repeat([]byte("x"), huge)
	for _, tc := range []struct {
		name, file, first, last string
		read                    func(ctx context.Context, dir string) (int, int, error)
	}{
		{"spawn journal", supervise.SpawnJournalFile,
			`{"kind":"run-started","runId":"run1","startedAtMs":1,"task":"t"}`, `{"kind":"spawned","node":"run1:s1","profile":"writer","task":"x"}`,
			func(ctx context.Context, dir string) (int, int, error) {
				recs, skipped, err := supervise.ReadRunDir(ctx, dir)
				return len(recs), skipped, err
			}},
		{"spawn journal, followed", supervise.SpawnJournalFile,
			`{"kind":"run-started","runId":"run1","startedAtMs":1,"task":"t"}`, `{"kind":"spawned","node":"run1:s1","profile":"writer","task":"x"}`,
			func(ctx context.Context, dir string) (int, int, error) {
				tail := supervise.TailRunDir(dir)
				recs, _, err := tail.Next(ctx)
				return len(recs), tail.Skipped(), err
			}},
		{"progress", supervise.ProgressFile,
			`{"id":"spawn:run1:s1","kind":"spawn","atMs":1,"node":"run1:s1"}`, `{"id":"settle:run1:s1","kind":"settle","atMs":2,"node":"run1:s1","state":"done"}`,
			func(ctx context.Context, dir string) (int, int, error) {
				recs, skipped, err := supervise.ReadProgress(ctx, dir)
				return len(recs), skipped, err
			}},
		{"inbox", filepath.Join(supervise.WorkersDir, supervise.WorkerStem("run1:s1")+".inbox.ndjson"),
			`{"kind":"posted","seq":1,"atMs":1,"message":"a"}`, `{"kind":"taken","seq":1,"atMs":2}`,
			func(ctx context.Context, dir string) (int, int, error) {
				recs, skipped, err := supervise.ReadInbox(ctx, dir, "run1:s1")
				return len(recs), skipped, err
			}},
		{"root stream", supervise.RootStreamFile,
			`{"kind":"turn-started","atMs":1}`, `{"kind":"turn-ended","atMs":2}`,
			func(ctx context.Context, dir string) (int, int, error) {
				recs, skipped, err := supervise.ReadRootStream(ctx, dir)
				return len(recs), skipped, err
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, tc.file)
			if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
				t.Fatal(err)
			}
			var data bytes.Buffer
			data.WriteString(tc.first + "\n")
			data.Write(line)
			data.WriteString("\n" + tc.last + "\n")
			if err := os.WriteFile(path, data.Bytes(), 0o600); err != nil {
				t.Fatal(err)
			}
			data.Reset()
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			n, skipped, err := tc.read(t.Context(), dir)
			runtime.ReadMemStats(&after)
			if err != nil || n != 2 || skipped != 1 {
				t.Fatalf("read %d records, skipped %d, %v; want 2 read and the long line skipped", n, skipped, err)
			}
			if got := after.TotalAlloc - before.TotalAlloc; got > allocBound {
				t.Errorf("reading a %d-byte line allocated %d bytes; want at most %d", huge, got, allocBound)

			}
		})
	}
}
