package wire_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/agentrt/agentrt/contract/wire"
	"github.com/agentrt/agentrt/internal/scaletest"
)

// dribble reads at most n bytes per Read, as a slow server's stream
// arrives.
type dribble struct {
	r io.Reader
	n int
}

func (d *dribble) Read(p []byte) (int, error) { return d.r.Read(p[:min(len(p), d.n)]) }

// BenchmarkSSEReaderScaling: reading a stream is linear in its size,
// whether it is many events or one event of many data lines arriving
// 4 KiB at a time (cpu-ns/op ~10x per 10x).
func BenchmarkSSEReaderScaling(b *testing.B) {
	for _, n := range []int{1_000, 10_000, 100_000} {
		b.Run(fmt.Sprintf("events/n=%d", n), func(b *testing.B) {
			var stream []byte
			for i := range n {
				var err error
				if stream, err = wire.AppendSSE(stream, int64(i+1), "", []byte(benchEvent)); err != nil {
					b.Fatal(err)
				}
			}
			benchSSE(b, stream, n)
		})
	}
	// One event of n data lines of 100 bytes (10 KB, 100 KB, 1 MB: the
	// last just under MaxBodyBytes).
	for _, n := range []int{100, 1_000, 10_000} {
		b.Run(fmt.Sprintf("data-lines/n=%d", n), func(b *testing.B) {
			line := append(append([]byte("data: "), bytes.Repeat([]byte("x"), 98)...), '\n')
			stream := append(bytes.Repeat(line, n), '\n')
			benchSSE(b, stream, 1)
		})
	}
}

func benchSSE(b *testing.B, stream []byte, events int) {
	b.SetBytes(int64(len(stream)))
	b.ReportAllocs()
	stop := scaletest.CPU(b)
	defer stop()
	for b.Loop() {
		r := wire.NewSSEReader(&dribble{bytes.NewReader(stream), 4 << 10})
		got := 0
		for {
			_, err := r.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			got++
		}
		if got != events {
			b.Fatalf("%d events, want %d", got, events)
		}
	}
}
