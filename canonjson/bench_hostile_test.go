package canonjson_test

import (
	"strconv"
	"testing"

	"github.com/agentrt/agentrt/canonjson"
)

// wideObject returns an object with n distinct members {"k0":0,"k1":1,…}.
func wideObject(n int) []byte {
	b := make([]byte, 0, n*16)
	b = append(b, '{')
	for i := range n {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `"k`...)
		b = strconv.AppendInt(b, int64(i), 10)
		b = append(b, `":`...)
		b = strconv.AppendInt(b, int64(i%10), 10)
	}
	return append(b, '}')
}

// wideArray returns an array of one-digit numbers that is size bytes long
// (give or take one).
func wideArray(size int) []byte {
	b := make([]byte, 0, size+2)
	b = append(b, '[')
	for len(b) < size-2 {
		if len(b) > 1 {
			b = append(b, ',')
		}
		b = append(b, byte('0'+len(b)%10))
	}
	return append(b, ']')
}

func BenchmarkDecodeWideObject(b *testing.B) {
	data := wideObject(160_000)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := canonjson.Decode(data); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeWideArray(b *testing.B) {
	data := wideArray(16 << 20)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		// Its 8M values are beyond DefaultMaxValues; lift the bound to
		// measure the decode itself.
		if _, err := canonjson.DecodeWith(data, canonjson.DecodeOptions{MaxValues: -1}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeObjectWidth decodes objects of several widths with the
// duplicate check done only pairwise and only by map, to locate the width
// where the decoder should switch from one to the other.
func BenchmarkDecodeObjectWidth(b *testing.B) {
	for _, method := range []struct {
		name      string
		threshold int
	}{{"pairwise", 1 << 30}, {"map", 0}} {
		for _, n := range []int{8, 16, 32, 48, 64, 128} {
			data := wideObject(n)
			b.Run(method.name+"/"+strconv.Itoa(n), func(b *testing.B) {
				defer canonjson.SetPairwiseMembers(canonjson.SetPairwiseMembers(method.threshold))
				b.ReportAllocs()
				for b.Loop() {
					if _, err := canonjson.Decode(data); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
