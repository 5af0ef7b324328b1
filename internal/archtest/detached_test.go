package archtest

import (
	"testing"
)

// TestDetached: the packages of the detached table import none of the
// packages it lists for them (RTP-13).
func TestDetached(t *testing.T) {
	seen := map[string]bool{}
	for _, f := range moduleFiles(t) {
		banned, ok := detached[f.dir]
		if !ok || f.test {
			continue
		}
		seen[f.dir] = true
		for _, imp := range f.imports {
			for _, b := range banned {
				if imp == Module+"/"+b {
					t.Errorf("%s imports %s: search and activation stay detached", f.path, b)
				}
			}
		}
	}
	for dir := range detached {
		if !seen[dir] {
			t.Errorf("no files of %s found: update the detached table", dir)
		}
	}
}
