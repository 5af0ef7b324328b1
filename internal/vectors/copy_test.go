package vectors

import (
	"bytes"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// provenance is the module copy's own note, the one file that is not a
// copy of the shared vectors.
const provenance = "PROVENANCE.md"

// TestCopyMatchesShared cross-checks the module's copy against the shared
// vectors when they are at hand (../shared/vectors on the developers'
// machines and CI): the same files with the same bytes. A clone without
// them has nothing to compare and passes.
func TestCopyMatchesShared(t *testing.T) {
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	shared := sharedDir(root)
	if shared == "" {
		t.Logf("no shared/vectors beside %s or its ancestors; nothing to cross-check the module's copy against", root)
		return
	}
	own := filepath.Join(root, "testdata", "vectors")
	want := readTree(t, shared)
	got := readTree(t, own)
	delete(got, provenance)

	var problems []string
	for _, name := range slices.Sorted(maps.Keys(want)) {
		g, ok := got[name]
		switch {
		case !ok:
			problems = append(problems, name+": missing from the module's copy")
		case !bytes.Equal(g, want[name]):
			problems = append(problems, name+": bytes differ")
		}
	}
	for _, name := range slices.Sorted(maps.Keys(got)) {
		if _, ok := want[name]; !ok {
			problems = append(problems, name+": not in the shared vectors")
		}
	}
	if len(problems) > 0 {
		t.Errorf("the module's vectors (%s) differ from the shared vectors (%s):\n\t%s\nrefresh them with: scripts/sync-vectors %s",
			own, shared, strings.Join(problems, "\n\t"), shared)
		return
	}
	t.Logf("the module's copy matches %s (%d files)", shared, len(want))
}

// sharedDir returns the first shared/vectors holding an INDEX.tsv beside
// the module root or beside one of its ancestors, or "".
func sharedDir(root string) string {
	for d := filepath.Dir(root); ; d = filepath.Dir(d) {
		dir := filepath.Join(d, "shared", "vectors")
		if _, err := os.Stat(filepath.Join(dir, "INDEX.tsv")); err == nil {
			return dir
		}
		if d == filepath.Dir(d) {
			return ""
		}
	}
}

// readTree returns every regular file under dir by its slash-separated
// path relative to dir. Anything else (a symbolic link, a device) fails t.
func readTree(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		if !d.Type().IsRegular() {
			t.Errorf("%s: not a regular file", path)
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		files[filepath.ToSlash(rel)] = data
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}
