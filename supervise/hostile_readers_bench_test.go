package supervise_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/supervise"
)

// hostileShape is run dir file content scaled by k: one long line, many
// short lines, or a line of deeply nested brackets.
type hostileShape struct {
	name string
	data func(k int) []byte
}

// hostileShapes at k=4 are the sizes task ED7 names: a 50 MB line,
// 200k short lines, a line of 10^6 nested brackets. k=1 is a quarter
// of each.
var hostileShapes = []hostileShape{
	{"long-line", func(k int) []byte {
		return append(append([]byte(`{"kind":"posted","seq":1,"message":"`), bytes.Repeat([]byte("x"), k*50<<20/4)...), "\"}\n"...)
	}},
	{"short-lines", func(k int) []byte {
		return bytes.Repeat([]byte(`{"kind":"x"}`+"\n"), k*200_000/4)
	}},
	{"nested", func(k int) []byte {
		n := k * 1_000_000 / 4
		return []byte(strings.Repeat("[", n) + strings.Repeat("]", n) + "\n")
	}},
}

// hostileReaders read one run dir file each; write places data where
// the reader reads.
var hostileReaders = []struct {
	name  string
	write func(dir string) string
	read  func(ctx context.Context, dir string) (int, error)
}{
	{"coordination-log", func(dir string) string { return filepath.Join(dir, supervise.CoordinationLogFile) },
		func(ctx context.Context, dir string) (int, error) {
			r, s, err := supervise.ReadCoordinationLog(ctx, dir)
			return len(r) + s, err
		}},
	{"progress", func(dir string) string { return filepath.Join(dir, supervise.ProgressFile) },
		func(ctx context.Context, dir string) (int, error) {
			r, s, err := supervise.ReadProgress(ctx, dir)
			return len(r) + s, err
		}},
	{"inbox", func(dir string) string { return supervise.InboxPath(dir, "run1:s1") },
		func(ctx context.Context, dir string) (int, error) {
			r, s, err := supervise.ReadInbox(ctx, dir, "run1:s1")
			return len(r) + s, err
		}},
	{"worker-log", func(dir string) string { return supervise.WorkerLogPath(dir, "a") },
		func(ctx context.Context, dir string) (int, error) {
			r, s, err := supervise.ReadWorkerLog(ctx, dir, "a")
			return len(r) + s, err
		}},
}

// BenchmarkHostileRunDirReaders: each tolerant run dir reader over each
// hostile shape at k=1 and k=4 (task ED7: 50 MB line, 200k short lines,
// 10^6 nested brackets at k=4). Cost must grow at most linearly: ns/op
// at k=4 is at most ~4x k=1 (the long line and the nested line are
// skipped past a record limit, so less). Compare the pair; nothing here
// is a timed assertion.
func BenchmarkHostileRunDirReaders(b *testing.B) {
	ctx := context.Background()
	for _, r := range hostileReaders {
		for _, sh := range hostileShapes {
			for _, k := range []int{1, 4} {
				b.Run(fmt.Sprintf("%s/%s/k=%d", r.name, sh.name, k), func(b *testing.B) {
					dir := b.TempDir()
					path := r.write(dir)
					if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
						b.Fatal(err)
					}
					data := sh.data(k)
					if err := os.WriteFile(path, data, 0o600); err != nil {
						b.Fatal(err)
					}
					b.SetBytes(int64(len(data)))
					b.ReportAllocs()
					for b.Loop() {
						n, err := r.read(ctx, dir)
						if err != nil {
							b.Fatal(err)
						}
						if lines := bytes.Count(data, []byte("\n")); n > lines {
							b.Fatalf("%d records and skips from %d lines", n, lines)
						}
					}
				})
			}
		}
	}
}
