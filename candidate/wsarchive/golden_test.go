package wsarchive

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// goldenContent is a file or bundle body of testdata/golden/cases.json:
// UTF-8 text, or a pattern of n bytes where byte i is (i*31 + 7) mod 256.
type goldenContent struct {
	Text    *string `json:"text"`
	Pattern *int    `json:"pattern"`
}

func (c goldenContent) bytes(t *testing.T) []byte {
	t.Helper()
	switch {
	case c.Text != nil:
		return []byte(*c.Text)
	case c.Pattern != nil:
		return pattern(*c.Pattern)
	}
	t.Fatal("golden content has neither text nor pattern")
	return nil
}

func pattern(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*31 + 7)
	}
	return b
}

type goldenCase struct {
	Name  string `json:"name"`
	Files []struct {
		Path string `json:"path"`
		Mode uint32 `json:"mode"`
		goldenContent
	} `json:"files"`
	Repo *struct {
		HeadCommit string        `json:"headCommit"`
		HeadTree   string        `json:"headTree"`
		Bundle     goldenContent `json:"bundle"`
	} `json:"repo"`
	SHA256     string `json:"sha256"`
	ByteLength int    `json:"byteLength"`
}

func loadGolden(t *testing.T) []goldenCase {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "golden", "cases.json"))
	if err != nil {
		t.Fatal(err)
	}
	var index struct {
		TarStream string       `json:"tarStream"`
		Cases     []goldenCase `json:"cases"`
	}
	if err := json.Unmarshal(raw, &index); err != nil {
		t.Fatal(err)
	}
	if index.TarStream != "3.2.1" {
		t.Fatalf("goldens were made with tar-stream %s, want 3.2.1", index.TarStream)
	}
	return index.Cases
}

func (c goldenCase) input(t *testing.T) ([]File, *Repository) {
	files := make([]File, 0, len(c.Files))
	for _, f := range c.Files {
		files = append(files, File{Path: f.Path, Mode: fs.FileMode(f.Mode), Data: f.bytes(t)})
	}
	var repo *Repository
	if c.Repo != nil {
		repo = &Repository{HeadCommit: c.Repo.HeadCommit, HeadTree: c.Repo.HeadTree, Bundle: c.Repo.Bundle.bytes(t)}
	}
	return files, repo
}

// TestGolden requires Encode to write, byte for byte, what the reference
// runtime's tar library writes for the same input, and Decode to read it
// back.
func TestGolden(t *testing.T) {
	cases := loadGolden(t)
	if len(cases) < 20 {
		t.Fatalf("only %d golden cases", len(cases))
	}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			want, err := os.ReadFile(filepath.Join("testdata", "golden", c.Name+".tar"))
			if err != nil {
				t.Fatal(err)
			}
			if len(want) != c.ByteLength || canonjson.DigestBytes(want) != c.SHA256 {
				t.Fatalf("golden %s.tar does not match cases.json", c.Name)
			}
			files, repo := c.input(t)
			got, err := Encode(files, repo)
			if err != nil {
				t.Fatalf("Encode: %v", err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("Encode differs from the reference at byte %d of %d (got %d bytes)", firstDiff(got, want), len(want), len(got))
			}
			a, err := Decode(want, DefaultLimits())
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			// The layout writes a zero mode as 0644.
			for i := range files {
				if files[i].Mode == 0 {
					files[i].Mode = 0o644
				}
			}
			if diff := cmp.Diff(&Archive{Files: files, Repository: repo}, a, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("Decode (-want +got):\n%s", diff)
			}
		})
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}
