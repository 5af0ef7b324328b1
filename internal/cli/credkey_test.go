package cli_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agentrt/agentrt/internal/cli"
	"github.com/agentrt/agentrt/retained"
)

// RG-12 by default (issue 15): a SQLite store's credential key file is
// made once — 32 random bytes, readable by its owner only — and read
// back as it is; a file that is not one agentrt would use (readable by
// others, the wrong size, not a file) is refused with what to do, and
// left as it was.
func TestStoreCredentialKeyFile(t *testing.T) {
	t.Parallel()
	key := bytes.Repeat([]byte{7}, retained.MinCredentialKeySize)
	for _, tc := range []struct {
		name string
		make func(t *testing.T, path string)
		want string // in the refusal; "" for a key
	}{
		{"none yet", func(*testing.T, string) {}, ""},
		{"agentrt's", func(t *testing.T, path string) { writeKeyFile(t, path, key, 0o600) }, ""},
		{"readable by the group", func(t *testing.T, path string) { writeKeyFile(t, path, key, 0o640) }, "chmod 600"},
		{"readable by all", func(t *testing.T, path string) { writeKeyFile(t, path, key, 0o644) }, "chmod 600"},
		{"too short", func(t *testing.T, path string) { writeKeyFile(t, path, key[:16], 0o600) }, "has 16 bytes"},
		{"too long", func(t *testing.T, path string) { writeKeyFile(t, path, append(key, '\n'), 0o600) }, "has 33 bytes"},
		{"empty", func(t *testing.T, path string) { writeKeyFile(t, path, nil, 0o600) }, "has 0 bytes"},
		{"a directory", func(t *testing.T, path string) {
			if err := os.Mkdir(path, 0o700); err != nil {
				t.Fatal(err)
			}
		}, "is not a file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "agentrt.db"+cli.CredentialKeySuffix)
			tc.make(t, path)
			before, _ := os.ReadFile(path)
			got, err := cli.StoreCredentialKey(path)
			if tc.want != "" {
				var fe *cli.CredentialKeyFileError
				if !errors.As(err, &fe) || fe.Path != path || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("key %x, error %v; want a *CredentialKeyFileError saying %q", got, err, tc.want)
				}
				if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
					t.Errorf("the refused file changed")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode().Perm() != 0o600 || len(got) != retained.MinCredentialKeySize {
				t.Errorf("key file mode %v, key of %d bytes; want 0600 and %d", fi.Mode().Perm(), len(got), retained.MinCredentialKeySize)
			}
			if onDisk, _ := os.ReadFile(path); !bytes.Equal(onDisk, got) {
				t.Errorf("the key given is not the file's")
			}
			again, err := cli.StoreCredentialKey(path)
			if err != nil || !bytes.Equal(again, got) {
				t.Errorf("read again: %v; want the same key", err)
			}
			if before != nil && !bytes.Equal(got, before) {
				t.Errorf("an existing key was replaced")
			}
		})
	}
}

// Commands started together on one store race to make its key file:
// each ends with the one key that won, never a partly written file, and
// no stray file is left beside the store.
func TestStoreCredentialKeyConcurrentCreation(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "agentrt.db"+cli.CredentialKeySuffix)
	const racers = 16
	keys := make([][]byte, racers)
	errs := make([]error, racers)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range racers {
		wg.Go(func() {
			<-start
			keys[i], errs[i] = cli.StoreCredentialKey(path)
		})
	}
	close(start)
	wg.Wait()
	for i := range racers {
		if errs[i] != nil {
			t.Fatalf("racer %d: %v", i, errs[i])
		}
		if !bytes.Equal(keys[i], keys[0]) {
			t.Fatalf("racer %d ended with another key than racer 0", i)
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Name() != filepath.Base(path) {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("files beside the store: %v; want the key file only", names)
	}
}

func writeKeyFile(t *testing.T, path string, key []byte, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, key, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil { // past the umask
		t.Fatal(err)
	}
}
