package verify

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentrt/agentrt/candidate/wsarchive"
)

// TestRescan: the re-scan of §3.5 accepts exactly the manifest (and a
// root .git in a task workspace) and refuses a symbolic link, a hard
// link, another mode or byte, an extra file or an empty directory.
func TestRescan(t *testing.T) {
	files := []wsarchive.File{{Path: "a.txt", Mode: 0o644, Data: []byte("a\n")}, {Path: "bin/run", Mode: 0o755, Data: []byte("#!/bin/sh\n")}}
	material := wsarchive.Manifest(files)
	for _, tc := range []struct {
		name   string
		task   bool
		change func(root string) error
		ok     bool
	}{
		{"exact", false, func(string) error { return nil }, true},
		{"task .git", true, func(root string) error { return os.MkdirAll(filepath.Join(root, ".git", "objects"), 0o755) }, true},
		{"candidate .git", false, func(root string) error { return os.MkdirAll(filepath.Join(root, ".git", "objects"), 0o755) }, false},
		{"symbolic link", false, func(root string) error { return os.Symlink("a.txt", filepath.Join(root, "link")) }, false},
		{"hard link", false, func(root string) error {
			return os.Link(filepath.Join(root, "a.txt"), filepath.Join(root, "..", "outside"))
		}, false},
		{"another mode", false, func(root string) error { return os.Chmod(filepath.Join(root, "a.txt"), 0o600) }, false},
		{"another byte", false, func(root string) error { return os.WriteFile(filepath.Join(root, "a.txt"), []byte("b\n"), 0o644) }, false},
		{"extra file", false, func(root string) error { return os.WriteFile(filepath.Join(root, "extra"), nil, 0o644) }, false},
		{"empty directory", false, func(root string) error { return os.Mkdir(filepath.Join(root, "empty"), 0o755) }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x := &tree{root: filepath.Join(t.TempDir(), "root"), files: files, material: &material, task: tc.task}
			if _, err := prepareRoot(x.root); err != nil {
				t.Fatal(err)
			}
			if err := x.write(); err != nil {
				t.Fatal(err)
			}
			if err := tc.change(x.root); err != nil {
				t.Fatal(err)
			}
			err := x.rescan()
			var me *MaterializationError
			switch {
			case tc.ok && err != nil:
				t.Fatalf("refused: %v", err)
			case !tc.ok && (!errors.As(err, &me) || me.Code != MatRescan):
				t.Fatalf("error %v, want a rescan-mismatch", err)
			}
		})
	}
}
