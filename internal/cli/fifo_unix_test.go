//go:build unix

package cli_test

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestCandidateVerifyArtifactNotARegularFile: an artifact in --artifacts
// that is a FIFO or a device is unavailable, found so without opening it
// (opening a FIFO would wait for a writer forever).
func TestCandidateVerifyArtifactNotARegularFile(t *testing.T) {
	sum := sha256.Sum256([]byte(seedBytes))
	hexSum := hex.EncodeToString(sum[:])
	seeded := writeFile(t, "v33.json", sealedText(t, `{"mode":"isolated","scope":"task","seed":{"byteLength":10,"locator":{"bucket":"candidate-artifacts","key":"seeds/memory.json","kind":"s3","region":"us-east-1"},"sha256":"sha256:`+hexSum+`"}}`))
	tests := []struct {
		name string
		make func(path string) error
	}{
		{"fifo", func(p string) error { return syscall.Mkfifo(p, 0o644) }},
		{"device", func(p string) error { return os.Symlink(os.DevNull, p) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			store := t.TempDir()
			path := filepath.Join(store, hexSum)
			if err := tc.make(path); err != nil {
				t.Fatal(err)
			}
			type result struct {
				out  string
				code int
			}
			done := make(chan result, 1)
			go func() {
				out, _, code := run(t, "", "candidate", "verify", "--offline", "--artifacts", store, seeded)
				done <- result{out, code}
			}()
			select {
			case r := <-done:
				if r.code != 1 || !strings.Contains(r.out, "artifact-unavailable /memory/seed") {
					t.Errorf("exit %d, want 1 with artifact-unavailable:\n%s", r.code, r.out)
				}
			case <-time.After(10 * time.Second):
				// Release a reader stuck opening the FIFO before failing.
				if w, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
					w.Close()
				}
				t.Fatal("verify is still reading the artifact after 10s")
			}
		})
	}
}
