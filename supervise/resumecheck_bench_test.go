package supervise_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentrt/agentrt/supervise"
)

// BenchmarkReadRunStarted reads the run-started record of journals of
// growing length: it reads the first line only, so its cost does not
// grow with the journal (what a --resume pays before it starts).
func BenchmarkReadRunStarted(b *testing.B) {
	for _, lines := range []int{10, 100_000} {
		b.Run(fmt.Sprintf("lines=%d", lines), func(b *testing.B) {
			dir := b.TempDir()
			var buf bytes.Buffer
			buf.WriteString(`{"kind":"run-started","runId":"r","startedAtMs":1,"task":"ship","budget":{"tokens":10000,"iterations":10},"managerDigest":"sha256:0000000000000000000000000000000000000000000000000000000000000000"}` + "\n")
			for i := range lines {
				fmt.Fprintf(&buf, `{"kind":"metered","node":"r","spent":{"tokens":%d}}`+"\n", i)
			}
			if err := os.WriteFile(filepath.Join(dir, supervise.SpawnJournalFile), buf.Bytes(), 0o600); err != nil {
				b.Fatal(err)
			}
			o := supervise.Options{RunDir: dir}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := supervise.ReadRunStarted(context.Background(), o); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
