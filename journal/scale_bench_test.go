package journal_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentrt/agentrt/internal/scaletest"
	"github.com/agentrt/agentrt/journal"
)

// scaleLine is one journal line of about 150 bytes.
const scaleLine = `{"id":"worker-17","kind":"settled","outRef":"sha256-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef","spent":{"usd":0.0123},"status":"done"}` + "\n"

// scaleFile writes a journal of n records, plus tail (a torn tail when
// not empty), and returns its path.
func scaleFile(b *testing.B, n int, tail string) string {
	path := filepath.Join(b.TempDir(), "scale.jsonl")
	data := append(bytes.Repeat([]byte(scaleLine), n), tail...)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		b.Fatal(err)
	}
	return path
}

// BenchmarkReadScaling: reading a journal of n records, from the start
// and from its last 100, and opening one that ends in a torn tail (the
// repair scan). Reading is linear in n (cpu-ns/op grows ~10x per 10x),
// reading the last 100 skips the lines before without decoding them, and
// the repair scan decodes only the last two lines.
func BenchmarkReadScaling(b *testing.B) {
	ctx := context.Background()
	for _, n := range []int{1_000, 10_000, 100_000} {
		b.Run(fmt.Sprintf("all/n=%d", n), func(b *testing.B) {
			path := scaleFile(b, n, "")
			b.SetBytes(int64(n * len(scaleLine)))
			b.ReportAllocs()
			stop := scaletest.CPU(b)
			for b.Loop() {
				got := 0
				for _, err := range journal.Read(ctx, path, 1, journal.Options{}) {
					if err != nil {
						b.Fatal(err)
					}
					got++
				}
				if got != n {
					b.Fatalf("read %d records, want %d", got, n)
				}
			}
			stop()
		})
		b.Run(fmt.Sprintf("last100/n=%d", n), func(b *testing.B) {
			path := scaleFile(b, n, "")
			b.ReportAllocs()
			stop := scaletest.CPU(b)
			for b.Loop() {
				got := 0
				for _, err := range journal.Read(ctx, path, int64(n-99), journal.Options{}) {
					if err != nil {
						b.Fatal(err)
					}
					got++
				}
				if got != 100 {
					b.Fatalf("read %d records, want 100", got)
				}
			}
			stop()
		})
		b.Run(fmt.Sprintf("open-torn/n=%d", n), func(b *testing.B) {
			path := scaleFile(b, n, `{"kind":"sett`+"\n")
			data, err := os.ReadFile(path)
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			stop := scaletest.CPU(b)
			for b.Loop() {
				b.StopTimer()
				if err := os.WriteFile(path, data, 0o600); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				j, err := journal.Open(path, journal.Options{NoSync: true})
				if err != nil {
					b.Fatal(err)
				}
				if r := j.Recovery(); r.Lines != int64(n) || r.TornBytes == 0 {
					b.Fatalf("recovery %+v, want %d lines and a torn tail", r, n)
				}
				j.Close()
			}
			stop()
		})
	}
}
