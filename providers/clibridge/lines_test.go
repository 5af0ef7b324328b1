package clibridge

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/internal/scaletest"
)

// dribble reads at most n bytes per Read, as a pipe does when the
// harness writes its output a little at a time.
type dribble struct {
	r io.Reader
	n int
}

func (d *dribble) Read(p []byte) (int, error) { return d.r.Read(p[:min(len(p), d.n)]) }

// collect is readLines over in, read 7 bytes at a time, with the lines
// it delivered.
func collect(in string) ([]string, error) {
	var got []string
	err := readLines(&dribble{strings.NewReader(in), 7}, func(l []byte) { got = append(got, string(l)) })
	return got, err
}

// TestReadLines: every line is delivered once, in order, without its
// terminator ("\n" or "\r\n"); a last line without one is delivered; an
// empty last "line" is not; lines as long as the limit pass.
func TestReadLines(t *testing.T) {
	long := strings.Repeat("x", 200_000)
	for _, tc := range []struct {
		name string
		in   string
		want []string
	}{
		{"empty", "", nil},
		{"one", "a\n", []string{"a"}},
		{"unterminated last", "a\nb", []string{"a", "b"}},
		{"crlf", "a\r\nb\r\n", []string{"a", "b"}},
		{"blank lines", "\n\na\n", []string{"", "", "a"}},
		{"long lines", long + "\n" + long + "\n", []string{long, long}},
		{"long unterminated", "a\n" + long, []string{"a", long}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := collect(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("lines (-want +got):\n%s", diff)
			}
		})
	}
}

// TestReadLinesTooLong: a line over maxLine ends the reading with an
// error matching bufio.ErrTooLong after the lines before it, and the rest
// of the output is drained (the harness never blocks on a full pipe).
func TestReadLinesTooLong(t *testing.T) {
	in := strings.NewReader("first\n" + strings.Repeat("y", maxLine+1) + "\nafter\n")
	var got []string
	err := readLines(in, func(l []byte) { got = append(got, string(l)) })
	if !errors.Is(err, bufio.ErrTooLong) {
		t.Fatalf("readLines = %v, want bufio.ErrTooLong", err)
	}
	if diff := cmp.Diff([]string{"first"}, got); diff != "" {
		t.Errorf("lines (-want +got):\n%s", diff)
	}
	if in.Len() != 0 {
		t.Errorf("%d bytes left undrained", in.Len())
	}
}

// BenchmarkReadLines: reading the harness output is linear in its size,
// whether it is one long line written 4 KiB at a time (a tool result of
// megabytes) or many short lines. The long-line case was quadratic with
// bufio.Scanner, which searched the whole buffered line for '\n' after
// every read.
func BenchmarkReadLines(b *testing.B) {
	for _, size := range []int{80 << 10, 800 << 10, 8 << 20} {
		b.Run(fmt.Sprintf("one-line/bytes=%d", size), func(b *testing.B) {
			in := append(bytes.Repeat([]byte("x"), size), '\n')
			benchReadLines(b, in, 1)
		})
	}
	for _, n := range []int{1_000, 10_000, 100_000} {
		b.Run(fmt.Sprintf("short-lines/n=%d", n), func(b *testing.B) {
			line := `{"type":"assistant","message":{"content":[{"type":"text","text":"hello"}]}}` + "\n"
			benchReadLines(b, []byte(strings.Repeat(line, n)), n)
		})
	}
}

func benchReadLines(b *testing.B, in []byte, lines int) {
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	stop := scaletest.CPU(b)
	defer stop()
	for b.Loop() {
		got := 0
		if err := readLines(&dribble{bytes.NewReader(in), 4 << 10}, func([]byte) { got++ }); err != nil {
			b.Fatal(err)
		}
		if got != lines {
			b.Fatalf("%d lines, want %d", got, lines)
		}
	}
}

// FuzzReadLines: however the output is split into reads, readLines
// delivers exactly the lines of bytes.Split on "\n" (a "\r" before the
// "\n" dropped, an empty last piece not a line), never panics, and
// never errs on output within the limit.
func FuzzReadLines(f *testing.F) {
	f.Add([]byte("a\nb\n"), uint8(1))
	f.Add([]byte("a\r\n\r\nb"), uint8(3))
	f.Add([]byte("\n\n\n"), uint8(2))
	f.Add([]byte("\r"), uint8(7))
	f.Add(bytes.Repeat([]byte("x"), 70_000), uint8(255))
	f.Fuzz(func(t *testing.T, in []byte, step uint8) {
		var got []string
		err := readLines(&dribble{bytes.NewReader(in), int(step) + 1}, func(l []byte) { got = append(got, string(l)) })
		if err != nil {
			t.Fatal(err)
		}
		var want []string
		pieces := bytes.Split(in, []byte("\n"))
		for i, p := range pieces {
			if i == len(pieces)-1 && len(p) == 0 {
				break
			}
			want = append(want, string(bytes.TrimSuffix(p, []byte("\r"))))
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("lines (-want +got):\n%s", diff)
		}
	})
}
