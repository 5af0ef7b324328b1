package sqlite_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentrt/agentrt/store/sqlite"
)

func TestOpenMustExist(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	for _, path := range []string{filepath.Join(dir, "missing", "agentrt.db"), filepath.Join(dir, "agentrt.db")} {
		if _, err := sqlite.Open(ctx, path, sqlite.Options{MustExist: true}); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s: err = %v, want fs.ErrNotExist", path, err)
		}
		if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s was created: %v", path, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the missing directory was created: %v", err)
	}
	if _, err := sqlite.Open(ctx, dir, sqlite.Options{MustExist: true}); err == nil {
		t.Error("a directory opened as a store")
	}
	path := filepath.Join(dir, "agentrt.db")
	s, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	s, err = sqlite.Open(ctx, path, sqlite.Options{MustExist: true})
	if err != nil {
		t.Fatalf("an existing store: %v", err)
	}
	s.Close()
}
