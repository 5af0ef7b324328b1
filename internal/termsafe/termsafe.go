package termsafe

import (
	"io"
	"sync"
	"unicode/utf8"
)

const hexDigits = "0123456789abcdef"

// Writer escapes what is written to it (see the package rule) and
// writes the result to the writer beneath. It is streaming-safe: a UTF-8
// rune split across two Write calls is held until it is complete, so it
// is never mistaken for invalid bytes; Flush writes what is held. Its
// methods are safe for concurrent use.
type Writer struct {
	mu   sync.Mutex
	w    io.Writer
	pend [utf8.UTFMax]byte // the start of a rune a Write ended in
	np   int
	buf  []byte
}

// NewWriter returns a Writer escaping onto w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Write escapes p onto the writer beneath and returns len(p), or 0 and
// the error of the writer beneath (how much of p reached it is then
// unknown). A trailing incomplete UTF-8 rune is held for the next Write
// or Flush.
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.buf == nil {
		w.buf = make([]byte, 0, maxEscaped*chunk+2*utf8.UTFMax*maxEscaped)
	}
	for i := 0; i < len(p); i += chunk {
		if err := w.write(p[i:min(i+chunk, len(p))]); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

// chunk is how much of a Write is escaped at once, and maxEscaped how
// many bytes one byte becomes at most: the scratch buffer is bounded
// whatever the size of a Write.
const (
	chunk      = 16 << 10
	maxEscaped = 4
)

// write escapes p onto the writer beneath.
func (w *Writer) write(p []byte) error {
	out := w.buf[:0]
	rest := p
	if w.np > 0 {
		// The held bytes and the first bytes of p: enough to finish
		// (or refute) the held rune.
		var tmp [2 * utf8.UTFMax]byte
		n := copy(tmp[:], w.pend[:w.np])
		t := tmp[:n+copy(tmp[n:], p)]
		var c int
		out, c = appendEscaped(out, t, false, false)
		if c < n {
			// Still incomplete: then t holds all of p (a rune is at
			// most UTFMax bytes), so hold the rest of t.
			w.np = copy(w.pend[:], t[c:])
			rest = nil
		} else {
			w.np = 0
			rest = p[c-n:]
		}
	}
	if len(rest) > 0 {
		var c int
		out, c = appendEscaped(out, rest, false, false)
		w.np = copy(w.pend[:], rest[c:])
	}
	w.buf = out[:0]
	if len(out) == 0 {
		return nil
	}
	_, err := w.w.Write(out)
	return err
}

// Flush writes the bytes a Write ended in that do not (yet) form a
// complete rune, escaped as invalid UTF-8.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.np == 0 {
		return nil
	}
	out, _ := appendEscaped(nil, w.pend[:w.np], true, false)
	w.np = 0
	_, err := w.w.Write(out)
	return err
}

// String returns s escaped (see the package rule); s itself when it is
// already safe.
func String(s string) string { return escapeString(s, false) }

// Line returns s escaped like String, with "\n" and "\t" escaped too, so
// it stays one line.
func Line(s string) string { return escapeString(s, true) }

func escapeString(s string, line bool) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f {
			if c >= utf8.RuneSelf && safeRunes(s[i:], line) {
				break
			}
			out, _ := appendEscaped(make([]byte, 0, len(s)+16), []byte(s), true, line)
			return string(out)
		}
	}
	return s
}

// safeRunes reports whether s, from a non-ASCII byte on, is all safe.
func safeRunes(s string, line bool) bool {
	for _, r := range s {
		if r == utf8.RuneError || (r >= 0x80 && r <= 0x9f) {
			// RuneError may also be a real U+FFFD; the slow path tells.
			return false
		}
		if r < utf8.RuneSelf && !safeASCII(byte(r), line) {
			return false
		}
	}
	return true
}

// safeASCII reports whether the ASCII byte c passes unchanged.
func safeASCII(c byte, line bool) bool {
	if c >= 0x20 && c != 0x7f {
		return true
	}
	return !line && (c == '\n' || c == '\t')
}

// appendEscaped appends the escaped form of s to dst and returns it with
// how many bytes of s it consumed: all of them when final, else all but
// a trailing incomplete rune.
func appendEscaped(dst, s []byte, final, line bool) ([]byte, int) {
	i := 0
	for i < len(s) {
		c := s[i]
		if c < utf8.RuneSelf {
			if safeASCII(c, line) {
				// Copy the run of safe ASCII at once.
				j := i + 1
				for j < len(s) && s[j] < utf8.RuneSelf && safeASCII(s[j], line) {
					j++
				}
				dst = append(dst, s[i:j]...)
				i = j
				continue
			}
			dst = append(dst, '\\', 'x', hexDigits[c>>4], hexDigits[c&0xf])
			i++
			continue
		}
		if !final && !utf8.FullRune(s[i:]) {
			break
		}
		r, size := utf8.DecodeRune(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, '\\', 'x', hexDigits[c>>4], hexDigits[c&0xf])
		case r <= 0x9f:
			dst = append(dst, '\\', 'u', '0', '0', hexDigits[r>>4], hexDigits[r&0xf])
		default:
			dst = append(dst, s[i:i+size]...)
		}
		i += size
	}
	return dst, i
}
