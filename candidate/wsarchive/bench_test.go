package wsarchive

import (
	"fmt"
	"testing"
)

// BenchmarkDecode decodes (and re-encodes, as Decode always does) an
// archive of 200 files of 4 KiB with a long path among them.
func BenchmarkDecode(b *testing.B) {
	var files []File
	for i := range 200 {
		files = append(files, File{Path: fmt.Sprintf("src/pkg%03d/file.go", i), Mode: 0o644, Data: make([]byte, 4096)})
	}
	data, err := Encode(files, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Decode(data, DefaultLimits()); err != nil {
			b.Fatal(err)
		}
	}
}
