package archtest

import (
	"strings"
	"testing"
)

// TestWorkspaceCoreIsPlatformFree: the workspace contract package has no
// operating-system or network imports; storage backends live in its
// sub-packages (checklist WST-15, the Go reading of "no node: imports").
func TestWorkspaceCoreIsPlatformFree(t *testing.T) {
	seen := 0
	for _, f := range moduleFiles(t) {
		if f.dir != "workspace" || f.test {
			continue
		}
		seen++
		for _, imp := range f.imports {
			if imp == "os" || strings.HasPrefix(imp, "os/") || imp == "net" || strings.HasPrefix(imp, "net/") ||
				imp == "syscall" || imp == "plugin" || imp == "unsafe" || imp == "database/sql" {
				t.Errorf("%s imports %s: the workspace core must stay free of OS, network and storage imports", f.path, imp)
			}
		}
	}
	if seen == 0 {
		t.Fatal("no workspace package files found")
	}
}
