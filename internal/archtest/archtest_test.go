package archtest

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

type goFile struct {
	dir, path string
	test      bool
	imports   []string
}

func moduleFiles(t *testing.T) []goFile {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root not found at %s", root)
	}
	var files []goFile
	fset := token.NewFileSet()
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		gf := goFile{dir: filepath.ToSlash(rel), path: path, test: strings.HasSuffix(path, "_test.go")}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			gf.imports = append(gf.imports, p)
		}
		files = append(files, gf)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func isStd(path string) bool {
	first, _, _ := strings.Cut(path, "/")
	return !strings.Contains(first, ".")
}

// TestLayers: lower layers never import higher ones.
func TestLayers(t *testing.T) {
	files := moduleFiles(t)
	if len(files) < 20 {
		t.Fatalf("only %d Go files found", len(files))
	}
	for _, f := range files {
		if unlayered[f.dir] {
			continue
		}
		from, ok := layerOf(f.dir)
		if !ok {
			t.Errorf("%s: package %s has no layer; add it to layers.go", f.path, f.dir)
			continue
		}
		for _, imp := range f.imports {
			if !strings.HasPrefix(imp, Module+"/") {
				continue
			}
			dir := strings.TrimPrefix(imp, Module+"/")
			if testOnly[dir] {
				if !f.test {
					t.Errorf("%s: production code imports test helper %s", f.path, dir)
				}
				continue
			}
			if unlayered[dir] {
				continue
			}
			to, ok := layerOf(dir)
			if !ok {
				t.Errorf("%s: imports %s, which has no layer", f.path, dir)
				continue
			}
			if to > from && !(f.test && strings.HasPrefix(f.dir, "examples/")) {
				t.Errorf("%s (layer %d) imports %s (layer %d): lower layers never import higher ones", f.path, from, dir, to)
			}
		}
	}
}

// TestContractDependencies: the contract layers use the standard library
// and an explicit allowlist only (checklist PKG-03).
func TestContractDependencies(t *testing.T) {
	for _, f := range moduleFiles(t) {
		if f.test || unlayered[f.dir] {
			continue
		}
		layer, ok := layerOf(f.dir)
		if !ok || layer > 1 {
			continue
		}
		for _, imp := range f.imports {
			if isStd(imp) || strings.HasPrefix(imp, Module+"/") || slices.Contains(contractDeps, imp) {
				continue
			}
			t.Errorf("%s: contract package %s imports %s; only the standard library and %v are allowed", f.path, f.dir, imp, contractDeps)
		}
	}
}

// TestEveryPackageHasDoc: each package owns one thing and says so.
func TestEveryPackageHasDoc(t *testing.T) {
	dirs := map[string]bool{}
	for _, f := range moduleFiles(t) {
		if !f.test {
			dirs[filepath.Dir(f.path)] = true
		}
	}
	for dir := range dirs {
		if strings.Contains(dir, string(filepath.Separator)+"cmd"+string(filepath.Separator)) {
			continue // commands document themselves in main.go
		}
		if _, err := os.Stat(filepath.Join(dir, "doc.go")); err != nil {
			t.Errorf("%s has no doc.go", dir)
		}
	}
}

func TestLayerOf(t *testing.T) {
	for dir, want := range map[string]int{"canonjson": 0, "profile/kb": 1, "providers/openai": 2, "store/sqlite": 3, "cmd/agentrt": 5} {
		if got, ok := layerOf(dir); !ok || got != want {
			t.Errorf("layerOf(%s) = %d, %v; want %d", dir, got, ok, want)
		}
	}
	if _, ok := layerOf("nowhere"); ok {
		t.Error("layerOf(nowhere) found a layer")
	}
}
