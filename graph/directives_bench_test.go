package graph_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/graph"
)

// BenchmarkDecodeDirectives: decoding is linear in the document — the
// per-directive cost stays flat from 10 to 10 000 directives.
func BenchmarkDecodeDirectives(b *testing.B) {
	for _, n := range []int{10, 1000, 10000} {
		var doc strings.Builder
		doc.WriteByte('{')
		for i := range n {
			if i > 0 {
				doc.WriteByte(',')
			}
			fmt.Fprintf(&doc, `"delegate/node%d/v1": "Do the task below and reply with the result."`, i)
		}
		doc.WriteByte('}')
		data := []byte(doc.String())
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := graph.DecodeDirectives(data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
