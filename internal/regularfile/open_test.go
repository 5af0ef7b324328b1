//go:build unix

package regularfile_test

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/agentrt/agentrt/internal/regularfile"
)

// A regular file opens and reads; a FIFO no one writes, a directory and
// a device are refused at once with *NotRegularError (a FIFO would
// block a plain open for ever); a missing path matches fs.ErrNotExist.
func TestOpen(t *testing.T) {
	dir := t.TempDir()
	reg := filepath.Join(dir, "state.json")
	if err := os.WriteFile(reg, []byte(`{"ok":true}`), 0o600); err != nil {
		t.Fatal(err)
	}
	f, st, err := regularfile.Open(reg)
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(f)
	f.Close()
	if err != nil || string(data) != `{"ok":true}` || st.Size() != int64(len(data)) {
		t.Errorf("read %q (size %d), %v", data, st.Size(), err)
	}
	fifo := filepath.Join(dir, "requests.ndjson")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{fifo, dir, "/dev/null"} {
		_, _, err := regularfile.Open(path)
		var nr *regularfile.NotRegularError
		if !errors.As(err, &nr) || nr.Path != path {
			t.Errorf("Open(%s) = %v, want *NotRegularError naming it", path, err)
		}
	}
	if _, _, err := regularfile.Open(filepath.Join(dir, "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing path: %v, want fs.ErrNotExist", err)
	}
}
