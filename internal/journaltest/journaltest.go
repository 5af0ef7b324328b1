package journaltest

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentrt/agentrt/supervise"
)

// KeepThrough truncates the spawn journal in run dir just after its n-th
// record of kind (n ≥ 1): a process killed after that append was
// durable. The manager's metered records interleave with the workers'
// as turns and workers end, so a line count would not name one moment;
// a kind and its ordinal do. It fails the test when the journal holds
// fewer such records.
func KeepThrough(t testing.TB, dir, kind string, n int) {
	t.Helper()
	path := filepath.Join(dir, supervise.SpawnJournalFile)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(data, []byte("\n"))
	left := n
	for i, line := range lines {
		var r struct {
			Kind string `json:"kind"`
		}
		if json.Unmarshal(line, &r) != nil || r.Kind != kind {
			continue
		}
		if left--; left == 0 {
			if err := os.WriteFile(path, bytes.Join(lines[:i+1], nil), 0o600); err != nil {
				t.Fatal(err)
			}
			return
		}
	}
	t.Fatalf("journaltest: the journal in %s has fewer than %d %s records", dir, n, kind)
}

// KeepRecords truncates the spawn journal in run dir to its first n
// records (all of them when it holds no more) and returns how many it
// held: a process killed after its n-th append was durable.
func KeepRecords(t testing.TB, dir string, n int) int {
	t.Helper()
	path := filepath.Join(dir, supervise.SpawnJournalFile)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(data, []byte("\n"))
	if len(lines) > 0 && len(lines[len(lines)-1]) == 0 {
		lines = lines[:len(lines)-1]
	}
	if n < len(lines) {
		if err := os.WriteFile(path, bytes.Join(lines[:n], nil), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return len(lines)
}

// CopyRunDir copies run dir from into to (created as needed): the state
// a process killed at that moment leaves. from may belong to a live run:
// a file it renamed away while the copy walked (a temporary write) is
// passed over.
func CopyRunDir(t testing.TB, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(p string, d os.DirEntry, err error) error {
		if os.IsNotExist(err) {
			return nil
		}
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(from, p)
		if err != nil {
			return err
		}
		dst := filepath.Join(to, rel)
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		b, err := os.ReadFile(p)
		if os.IsNotExist(err) {
			return nil
		}
		if err != nil {
			return err
		}
		return os.WriteFile(dst, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}
