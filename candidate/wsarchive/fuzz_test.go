package wsarchive

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// FuzzDecode checks that Decode never panics and that anything it accepts
// is canonical: Encode of the decoded content gives the same bytes, and
// the content matches its own manifest.
func FuzzDecode(f *testing.F) {
	paths, err := filepath.Glob(filepath.Join("testdata", "golden", "*.tar"))
	if err != nil {
		f.Fatal(err)
	}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		if len(b) <= 16<<10 {
			f.Add(b)
		}
	}
	f.Add([]byte{})
	f.Add(make([]byte, 1024))
	// Well-checksummed entries the layout refuses, for the mutator to start
	// from past the checksum.
	f.Add(tarOf(block("workspace/l", "", 0o777, 0, '2')))
	f.Add(tarOf(file("workspace/b", 0o644, "b"), file("workspace/a", 0o644, "a")))
	f.Add(tarOf(file("workspace/a", 0o644, "a"), file("workspace/a/b", 0o644, "b")))
	f.Add(tarOf(appendEntry(nil, RepositoryMetadataName, 0o600, []byte(`{"kind":1}`)), file(RepositoryBundleName, 0o600, "b")))
	f.Add(tarOf(block("a", "workspace", 0o644, 0, typeRegular)))
	tight := DefaultLimits()
	tight.MaxFiles, tight.MaxFileBytes, tight.MaxTotalFileBytes, tight.MaxPathBytes = 3, 600, 1000, 120
	tight.MaxRepositoryBundleBytes, tight.MaxArchiveBytes = 800, 8192
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, limits := range []Limits{DefaultLimits(), tight} {
			a, err := Decode(data, limits)
			if err != nil {
				if _, ok := err.(*Error); !ok {
					t.Fatalf("error %T is not *Error: %v", err, err)
				}
				continue
			}
			again, err := EncodeLimits(a.Files, a.Repository, limits)
			if err != nil {
				t.Fatalf("Encode rejects what Decode accepted: %v", err)
			}
			if !bytes.Equal(again, data) {
				t.Fatalf("accepted archive re-encodes to other bytes")
			}
			m := Manifest(a.Files)
			if err := Match(a, &m); err != nil {
				t.Fatalf("decoded archive does not match its own manifest: %v", err)
			}
		}
	})
}

// FuzzRoundTrip checks that whatever Encode accepts decodes back to the
// same files and repository.
func FuzzRoundTrip(f *testing.F) {
	f.Add("a", "b/c", uint16(0o644), uint16(0o755), []byte("data"), false)
	f.Add("\U0001F600", "\ue000", uint16(0o600), uint16(0), []byte{}, true)
	f.Add(strings.Repeat("d/", 60)+"x", strings.Repeat("e", 120), uint16(0o777), uint16(0o1), bytes.Repeat([]byte{7}, 513), true)
	f.Fuzz(func(t *testing.T, p1, p2 string, m1, m2 uint16, data []byte, withRepo bool) {
		files := []File{{Path: p1, Mode: fs.FileMode(m1), Data: data}, {Path: p2, Mode: fs.FileMode(m2), Data: data[:len(data)/2]}}
		var repo *Repository
		if withRepo {
			repo = &Repository{HeadCommit: strings.Repeat("a", 40), HeadTree: strings.Repeat("b", 40), Bundle: append([]byte("b"), data...)}
		}
		b, err := Encode(files, repo)
		if err != nil {
			if _, ok := err.(*Error); !ok {
				t.Fatalf("error %T is not *Error: %v", err, err)
			}
			return
		}
		a, err := Decode(b, DefaultLimits())
		if err != nil {
			t.Fatalf("Decode rejects what Encode wrote: %v", err)
		}
		for i := range files {
			if files[i].Mode == 0 {
				files[i].Mode = 0o644
			}
		}
		if diff := cmp.Diff(&Archive{Files: files, Repository: repo}, a, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("round trip (-want +got):\n%s", diff)
		}
	})
}
