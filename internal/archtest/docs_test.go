package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func moduleRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

func readDoc(t *testing.T, root, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestExamplesREADME: the learning path lists every example program
// (REPO-01), and every Example function it points to exists.
func TestExamplesREADME(t *testing.T) {
	root := moduleRoot(t)
	readme := readDoc(t, root, "examples/README.md")
	entries, err := os.ReadDir(filepath.Join(root, "examples"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if _, err := os.Stat(filepath.Join(root, "examples", e.Name(), "main.go")); err != nil {
			continue
		}
		if !strings.Contains(readme, "]("+e.Name()+")") || !strings.Contains(readme, "go run ./examples/"+e.Name()) {
			t.Errorf("examples/README.md does not list examples/%s with its command", e.Name())
		}
	}
	row := regexp.MustCompile("(?m)^\\| `([a-z/]+)` \\| (.*) \\|$")
	name := regexp.MustCompile("`(Example\\w*)`")
	rows := row.FindAllStringSubmatch(readme, -1)
	if len(rows) == 0 {
		t.Fatal("examples/README.md lists no Example functions")
	}
	for _, r := range rows {
		tests := exampleFuncs(t, filepath.Join(root, r[1]))
		for _, n := range name.FindAllStringSubmatch(r[2], -1) {
			if !tests[n[1]] {
				t.Errorf("examples/README.md: %s has no %s", r[1], n[1])
			}
		}
	}
}

func exampleFuncs(t *testing.T, dir string) map[string]bool {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*_test.go"))
	found := map[string]bool{}
	fset := token.NewFileSet()
	for _, path := range files {
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv == nil && strings.HasPrefix(fn.Name.Name, "Example") {
				found[fn.Name.Name] = true
			}
		}
	}
	return found
}

// TestCanonicalAPINames: every package path and Go name that
// docs/canonical-api.md gives (REPO-02) exists in the module.
func TestCanonicalAPINames(t *testing.T) {
	root := moduleRoot(t)
	doc := readDoc(t, root, "docs/canonical-api.md")
	names := exportedNames(t, root)
	span := regexp.MustCompile("`([^`]+)`")
	ref := regexp.MustCompile(`\b([a-z][a-z0-9]*)\.([A-Z]\w*)(?:\.([A-Z]\w*))?`)
	pkgPath := regexp.MustCompile(`^[a-z]+(/[a-z]+)+$`)
	checked := 0
	for _, s := range span.FindAllStringSubmatch(doc, -1) {
		if pkgPath.MatchString(s[1]) {
			if _, err := os.Stat(filepath.Join(root, s[1], "doc.go")); err != nil {
				t.Errorf("docs/canonical-api.md: no package %s", s[1])
			}
			checked++
		}
		for _, m := range ref.FindAllStringSubmatch(s[1], -1) {
			n := m[2]
			if m[3] != "" {
				n += "." + m[3]
			}
			if !names[m[1]][n] {
				t.Errorf("docs/canonical-api.md: no package named %s has %s", m[1], n)
			}
			checked++
		}
	}
	if checked < 20 {
		t.Errorf("only %d names checked in docs/canonical-api.md", checked)
	}
}

// exportedNames maps each package name in the module to its exported
// top-level names, methods and struct fields (as Type.Name).
func exportedNames(t *testing.T, root string) map[string]map[string]bool {
	t.Helper()
	names := map[string]map[string]bool{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); path != root && (strings.HasPrefix(n, ".") || n == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		set := names[f.Name.Name]
		if set == nil {
			set = map[string]bool{}
			names[f.Name.Name] = set
		}
		for _, decl := range f.Decls {
			switch d := decl.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil {
					set[d.Name.Name] = true
					continue
				}
				recv := d.Recv.List[0].Type
				if s, ok := recv.(*ast.StarExpr); ok {
					recv = s.X
				}
				if ix, ok := recv.(*ast.IndexExpr); ok {
					recv = ix.X
				}
				if ix, ok := recv.(*ast.IndexListExpr); ok {
					recv = ix.X
				}
				if id, ok := recv.(*ast.Ident); ok {
					set[id.Name+"."+d.Name.Name] = true
				}
			case *ast.GenDecl:
				for _, spec := range d.Specs {
					switch s := spec.(type) {
					case *ast.ValueSpec:
						for _, n := range s.Names {
							set[n.Name] = true
						}
					case *ast.TypeSpec:
						set[s.Name.Name] = true
						if st, ok := s.Type.(*ast.StructType); ok {
							for _, fld := range st.Fields.List {
								for _, n := range fld.Names {
									set[s.Name.Name+"."+n.Name] = true
								}
							}
						}
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return names
}
