package supervise

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// journalKinds, the kinds read_journal's filter takes, is every record
// kind the package declares (a const Kind… of a string), sorted: a kind
// added without it would be refused to a manager asking for it.
func TestJournalKindsAreEveryRecordKind(t *testing.T) {
	// Not record kinds: the store run kinds of a supervised run.
	notRecords := map[string]bool{"KindSupervise": true}
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var declared []string
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, id := range vs.Names {
					if !strings.HasPrefix(id.Name, "Kind") || notRecords[id.Name] || i >= len(vs.Values) {
						continue
					}
					lit, ok := vs.Values[i].(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						continue
					}
					v, err := strconv.Unquote(lit.Value)
					if err != nil {
						t.Fatal(err)
					}
					declared = append(declared, v)
				}
			}
		}
	}
	slices.Sort(declared)
	if diff := cmp.Diff(declared, journalKinds); diff != "" {
		t.Errorf("journalKinds (-declared +listed):\n%s", diff)
	}
	if !slices.IsSorted(journalKinds) {
		t.Error("journalKinds is not sorted")
	}
}
