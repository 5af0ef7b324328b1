package archtest

import "testing"

// TestJournalDependencies: the journal writer, shared by every journal of
// the runtime (spec/runtime.md §13), depends on the standard library,
// canonjson, internal/regularfile and internal/flock (both standard
// library only) only, so any layer-4 package can reuse it.
func TestJournalDependencies(t *testing.T) {
	seen := 0
	for _, f := range moduleFiles(t) {
		if f.dir != "journal" || f.test {
			continue
		}
		seen++
		for _, imp := range f.imports {
			if isStd(imp) || imp == Module+"/canonjson" || imp == Module+"/internal/regularfile" || imp == Module+"/internal/flock" {
				continue
			}
			t.Errorf("%s imports %s: the journal package uses the standard library, canonjson, internal/regularfile and internal/flock only", f.path, imp)
		}
	}
	if seen == 0 {
		t.Fatal("no journal package files found")
	}
}
