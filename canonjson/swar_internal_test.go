package canonjson

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"
	"unicode/utf8"
)

// TestSWARMasks holds needsAttention and needsEscape to what they promise,
// byte by byte: a word is flagged exactly when some byte needs attention
// (or an escape), and the lowest flagged byte is the first such byte.
func TestSWARMasks(t *testing.T) {
	attention := func(c byte) bool { return c < 0x20 || c == '"' || c == '\\' || c >= 0x80 }
	escape := func(c byte) bool { return c < 0x20 || c == '"' || c == '\\' }
	check := func(w uint64) {
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], w)
		for _, f := range []struct {
			name string
			mask uint64
			want func(byte) bool
		}{{"needsAttention", needsAttention(w), attention}, {"needsEscape", needsEscape(w), escape}} {
			first := -1
			for i, c := range b {
				if f.want(c) {
					first = i
					break
				}
			}
			got := -1
			if f.mask != 0 {
				for i := range 8 {
					if f.mask>>(8*i+7)&1 != 0 {
						got = i
						break
					}
				}
			}
			if got != first {
				t.Fatalf("%s(%q): first flagged byte %d, want %d", f.name, b, got, first)
			}
		}
	}
	// Every byte value in every position of an otherwise plain word.
	for pos := range 8 {
		for c := range 256 {
			check(lsb*'a'&^(0xFF<<(8*pos)) | uint64(c)<<(8*pos))
		}
	}
	// Random words drawn from the interesting bytes and from anywhere.
	r := rand.New(rand.NewPCG(1, 2))
	interesting := []byte{0x00, 0x1F, 0x20, 0x21, '"', '\\', 'a', 0x7F, 0x80, 0xBF, 0xC0, 0xFF, 0xA2, 0xDC}
	for range 200000 {
		var b [8]byte
		for i := range b {
			if r.IntN(2) == 0 {
				b[i] = interesting[r.IntN(len(interesting))]
			} else {
				b[i] = byte(r.Uint32())
			}
		}
		check(binary.LittleEndian.Uint64(b[:]))
	}
}

// TestMultiBytePrefix holds multiBytePrefix, eight-byte shortcut
// included, to utf8.DecodeRune: it must return the length of the longest
// prefix of well-formed multi-byte sequences. Every lead byte and second
// byte of a four-byte sequence is tried in each half of an eight-byte
// pair, after and before other sequences.
func TestMultiBytePrefix(t *testing.T) {
	ref := func(b []byte) int {
		n := 0
		for n < len(b) && b[n] >= utf8.RuneSelf {
			r, size := utf8.DecodeRune(b[n:])
			if r == utf8.RuneError && size <= 1 {
				break
			}
			n += size
		}
		return n
	}
	emoji := []byte("😀")
	for lead := 0xE0; lead <= 0xFF; lead++ {
		for second := 0; second < 256; second++ {
			seq := []byte{byte(lead), byte(second), 0x80, 0xBF}
			for _, b := range [][]byte{
				append(append([]byte{}, seq...), emoji...),
				append(append([]byte{}, emoji...), seq...),
				append(append(append([]byte{}, emoji...), seq...), emoji...),
				append(append(append([]byte("é"), seq...), emoji...), 'a'),
				append(append([]byte{}, seq...), seq...),
			} {
				if got, want := multiBytePrefix(b), ref(b); got != want {
					t.Fatalf("multiBytePrefix(% x) = %d, want %d", b, got, want)
				}
			}
		}
	}
	// Continuation bytes out of place in either sequence of a pair.
	for i := 1; i < 8; i++ {
		if i == 4 {
			continue
		}
		for _, c := range []byte{0x00, 0x7F, 0xC0, 0xFF} {
			b := []byte("😀😀😀")
			b[i] = c
			if got, want := multiBytePrefix(b), ref(b); got != want {
				t.Fatalf("multiBytePrefix(% x) = %d, want %d", b, got, want)
			}
		}
	}
}

// TestPlainASCIIPrefix holds plainASCIIPrefix to a byte-by-byte scan for
// every byte value at every offset of inputs longer and shorter than a
// word, so that both the word-at-a-time path and the tail are covered.
func TestPlainASCIIPrefix(t *testing.T) {
	ref := func(b []byte) int {
		for i, c := range b {
			if c < 0x20 || c >= 0x80 || c == '"' || c == '\\' {
				return i
			}
		}
		return len(b)
	}
	for size := range 20 {
		for pos := range size {
			for c := range 256 {
				b := []byte("abcdefghijklmnopqrstuvwxyz")[:size]
				b[pos] = byte(c)
				if got, want := plainASCIIPrefix(b), ref(b); got != want {
					t.Fatalf("plainASCIIPrefix(%q) = %d, want %d", b, got, want)
				}
			}
		}
	}
}
