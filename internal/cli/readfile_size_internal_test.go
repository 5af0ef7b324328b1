package cli

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// TestReadFileRefusesAnOversizedFileUnread: a file larger than
// maxInputLen is refused from its size, before a byte of it is read —
// reading up to the cap first held over 200 MB for a 300 MB graph file
// (the buffer grows by doubling past the cap's 64 MiB).
func TestReadFileRefusesAnOversizedFileUnread(t *testing.T) {
	path := filepath.Join(t.TempDir(), "huge.json")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(4 * maxInputLen); err != nil { // sparse: no disk used
		t.Fatal(err)
	}
	f.Close()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err = readFile(path)
	runtime.ReadMemStats(&after)
	var exit *exitError
	if !errors.As(err, &exit) || exit.code != ExitUsage {
		t.Fatalf("readFile of a %d-byte file = %v, want a usage error", 4*maxInputLen, err)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 1<<20 {
		t.Errorf("refusing it allocated %d bytes; want it refused from its size, unread", n)
	}
}
