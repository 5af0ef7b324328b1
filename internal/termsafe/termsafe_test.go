package termsafe_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentrt/agentrt/internal/termsafe"
)

// hostile is run data as an attacker would write it: an OSC title
// change ended by BEL, a screen clear, a bare carriage return, C1 CSI,
// DEL, a C1 NEL, and bytes that are not UTF-8; around runes of one to
// four bytes that must pass.
const hostile = "é\x1b]0;evil\x07ok\x1b[2J\rover\u009b31m\x7f\u0085日\xff\xc3(🙂\xe2\x82"

func TestStringRule(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain text, tabs\tand\nnewlines", "plain text, tabs\tand\nnewlines"},
		{"\x1b]0;evil\x07", `\x1b]0;evil\x07`},
		{"\x1b[2J", `\x1b[2J`},
		{"a\rb", `a\x0db`},
		{"\x00\x1f\x7f", `\x00\x1f\x7f`},
		{"\u0080\u009b\u009f\u00a0", `\u0080\u009b\u009f` + "\u00a0"},
		{"\xff\xfe", `\xff\xfe`},
		{"\xc3(", `\xc3(`},
		{"\xe2\x82", `\xe2\x82`},
		{"\xed\xa0\x80", `\xed\xa0\x80`}, // a UTF-16 surrogate: not UTF-8
		{"\ufffd real", "\ufffd real"},
		{"日本🙂", "日本🙂"},
	}
	for _, tc := range tests {
		if got := termsafe.String(tc.in); got != tc.want {
			t.Errorf("String(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	if got, want := termsafe.Line("a\nb\tc\x1b"), `a\x0ab\x09c\x1b`; got != want {
		t.Errorf("Line = %q, want %q", got, want)
	}
	// Escaping is idempotent: what it writes is safe.
	once := termsafe.String(hostile)
	if twice := termsafe.String(once); twice != once {
		t.Errorf("escaping twice changed %q to %q", once, twice)
	}
}

// TestWriterStreams writes hostile text in every split into two writes,
// and a byte at a time: the output is String of the whole, never a rune
// broken by a split.
func TestWriterStreams(t *testing.T) {
	want := termsafe.String(hostile)
	for cut := 0; cut <= len(hostile); cut++ {
		var b bytes.Buffer
		w := termsafe.NewWriter(&b)
		for _, part := range []string{hostile[:cut], hostile[cut:]} {
			if n, err := w.Write([]byte(part)); n != len(part) || err != nil {
				t.Fatalf("Write(%q) = %d, %v; want %d, nil", part, n, err, len(part))
			}
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		if b.String() != want {
			t.Errorf("cut at %d: %q, want %q", cut, b.String(), want)
		}
	}
	var b bytes.Buffer
	w := termsafe.NewWriter(&b)
	for i := range len(hostile) {
		if n, err := w.Write([]byte{hostile[i]}); n != 1 || err != nil {
			t.Fatalf("Write byte %d = %d, %v", i, n, err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if b.String() != want {
		t.Errorf("a byte at a time: %q, want %q", b.String(), want)
	}
}

// TestWriterHoldsOnlyAnIncompleteRune: a rune's first bytes wait for
// the rest; Flush writes them escaped when the rest never comes.
func TestWriterHoldsOnlyAnIncompleteRune(t *testing.T) {
	var b bytes.Buffer
	w := termsafe.NewWriter(&b)
	w.Write([]byte("ab\xf0\x9f"))
	if b.String() != "ab" {
		t.Fatalf("after a rune's first half: %q, want %q", b.String(), "ab")
	}
	w.Write([]byte("\x99\x82"))
	if b.String() != "ab🙂" {
		t.Fatalf("after its second half: %q, want %q", b.String(), "ab🙂")
	}
	w.Write([]byte("\xe6\x97"))
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if want := `ab🙂\xe6\x97`; b.String() != want {
		t.Fatalf("after Flush: %q, want %q", b.String(), want)
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestWriterReportsTheErrorBeneath(t *testing.T) {
	w := termsafe.NewWriter(failWriter{})
	if n, err := w.Write([]byte("x\x1b")); n != 0 || err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Errorf("Write = %d, %v; want 0 and the error beneath", n, err)
	}
}

// safe reports whether s is what the rule passes unchanged.
func safe(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if (r < 0x20 && r != '\n' && r != '\t') || (r >= 0x7f && r <= 0x9f) {
			return false
		}
	}
	return true
}

// FuzzWriter: whatever goes in, in whatever pieces, what comes out has
// no control byte but "\n" and "\t", no DEL, no C1, is valid UTF-8, is
// the same as String of the whole, and is the input itself when the
// input was safe.
func FuzzWriter(f *testing.F) {
	f.Add([]byte(hostile), uint8(3))
	f.Add([]byte("plain\n"), uint8(1))
	f.Add([]byte("\xf0\x9f\x99"), uint8(2))
	f.Fuzz(func(t *testing.T, in []byte, step uint8) {
		var b bytes.Buffer
		w := termsafe.NewWriter(&b)
		k := int(step%8) + 1
		for i := 0; i < len(in); i += k {
			part := in[i:min(i+k, len(in))]
			if n, err := w.Write(part); n != len(part) || err != nil {
				t.Fatalf("Write = %d, %v", n, err)
			}
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		out := b.String()
		if !utf8.ValidString(out) {
			t.Fatalf("output is not UTF-8: %q", out)
		}
		for _, r := range out {
			if (r < 0x20 && r != '\n' && r != '\t') || (r >= 0x7f && r <= 0x9f) {
				t.Fatalf("output holds %U: %q", r, out)
			}
		}
		if s := termsafe.String(string(in)); s != out {
			t.Fatalf("streamed %q, String %q", out, s)
		}
		if safe(string(in)) && out != string(in) {
			t.Fatalf("safe input %q changed to %q", in, out)
		}
	})
}

// BenchmarkWriter measures the cost per byte (b.SetBytes) of plain text
// and of text that is mostly escapes, at two sizes: linear cost shows as
// the same ns/byte at both.
func BenchmarkWriter(b *testing.B) {
	for _, tc := range []struct {
		name string
		unit string
	}{
		{"plain", "the worker wrote its notes 日本 ok\n"},
		{"hostile", hostile},
	} {
		for _, n := range []int{1 << 10, 1 << 20} {
			in := []byte(strings.Repeat(tc.unit, n/len(tc.unit)+1)[:n])
			b.Run(tc.name+"/"+sizeName(n), func(b *testing.B) {
				w := termsafe.NewWriter(discard{})
				b.SetBytes(int64(len(in)))
				for b.Loop() {
					w.Write(in)
				}
			})
		}
	}
}

func sizeName(n int) string {
	if n >= 1<<20 {
		return "1MiB"
	}
	return "1KiB"
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
