package vectors

import (
	"path/filepath"
	"testing"
)

func TestDirIsTheModuleCopy(t *testing.T) {
	t.Setenv(EnvDir, "")
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := Dir()
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(root, "testdata", "vectors"); dir != want {
		t.Errorf("Dir() = %s, want the module's copy %s", dir, want)
	}
	kinds, err := Kinds()
	if err != nil {
		t.Fatal(err)
	}
	if len(kinds) == 0 {
		t.Error("the module's INDEX.tsv lists no kinds")
	}
}

func TestDirHonorsTheEnvironment(t *testing.T) {
	other := t.TempDir()
	t.Setenv(EnvDir, other)
	dir, err := Dir()
	if err != nil {
		t.Fatal(err)
	}
	if dir != other {
		t.Errorf("Dir() = %s, want $%s = %s", dir, EnvDir, other)
	}
}
