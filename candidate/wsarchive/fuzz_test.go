package wsarchive

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
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
