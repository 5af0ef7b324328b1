//go:build unix

package verify_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentrt/agentrt/candidate"
	"github.com/agentrt/agentrt/candidate/verify"
)

// TestLocalStoresReadOnlyRegularFiles: Dir and OCILayout answer a FIFO
// or a device with ErrUnavailable at once, without waiting on it.
func TestLocalStoresReadOnlyRegularFiles(t *testing.T) {
	hex := strings.Repeat("ab", 32)
	for _, tc := range []struct {
		name string
		make func(path string) error
	}{
		{"fifo", func(p string) error { return syscall.Mkfifo(p, 0o644) }},
		{"device", func(p string) error { return os.Symlink(os.DevNull, p) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			blobs := filepath.Join(dir, "blobs", "sha256")
			if err := os.MkdirAll(blobs, 0o755); err != nil {
				t.Fatal(err)
			}
			for _, p := range []string{filepath.Join(dir, hex), filepath.Join(blobs, hex)} {
				if err := tc.make(p); err != nil {
					t.Fatal(err)
				}
			}
			reads := map[string]func() error{
				"Dir": func() error {
					_, err := verify.Dir(dir).Read(context.Background(), candidate.ArtifactRef{SHA256: "sha256:" + hex, ByteLength: 1})
					return err
				},
				"OCILayout": func() error {
					_, err := verify.OCILayout(dir).Blob(context.Background(), "", "sha256:"+hex)
					return err
				},
			}
			for name, read := range reads {
				done := make(chan error, 1)
				go func() { done <- read() }()
				select {
				case err := <-done:
					if !errors.Is(err, verify.ErrUnavailable) {
						t.Errorf("%s: err = %v, want ErrUnavailable", name, err)
					}
				case <-time.After(5 * time.Second):
					for _, p := range []string{filepath.Join(dir, hex), filepath.Join(blobs, hex)} {
						if w, err := os.OpenFile(p, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
							w.Close()
						}
					}
					t.Fatalf("%s is still reading after 5s", name)
				}
			}
		})
	}
}
