package canonjson

import (
	"unicode/utf8"
)

// IsWellFormed reports whether s is well-formed Unicode: valid UTF-8 with no
// encoded surrogate, the Go counterpart of JavaScript's String.isWellFormed.
func IsWellFormed(s string) bool { return utf8.ValidString(s) }

// decodeWTF8 decodes the code point that starts at s[i]. Beyond what
// utf8.DecodeRuneInString accepts it decodes the three-byte form of a
// surrogate (U+D800–U+DFFF), which is how this package stores a lone
// surrogate. Any other invalid byte decodes as U+FFFD with size 1.
func decodeWTF8(s string, i int) (rune, int) {
	c := s[i]
	if c < utf8.RuneSelf {
		return rune(c), 1
	}
	if c == 0xED && i+2 < len(s) && s[i+1] >= 0xA0 && s[i+1] <= 0xBF && s[i+2] >= 0x80 && s[i+2] <= 0xBF {
		return 0xD000 | rune(s[i+1]&0x3F)<<6 | rune(s[i+2]&0x3F), 3
	}
	return utf8.DecodeRuneInString(s[i:])
}

// appendWTF8 appends the generalized UTF-8 encoding of r, which may be a
// surrogate code point.
func appendWTF8(b []byte, r rune) []byte {
	if r >= 0xD800 && r <= 0xDFFF {
		return append(b, 0xED, byte(0x80|(r>>6)&0x3F), byte(0x80|r&0x3F))
	}
	return utf8.AppendRune(b, r)
}

// UTF16Len returns the length of s in UTF-16 code units, the unit that
// JavaScript's String.prototype.length counts: a code point above U+FFFF
// counts 2, a lone surrogate counts 1.
func UTF16Len(s string) int {
	n := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			n++
			i++
			continue
		}
		r, size := decodeWTF8(s, i)
		if r >= 0x10000 {
			n += 2
		} else {
			n++
		}
		i += size
	}
	return n
}

// utf16Units appends the UTF-16 code units of the code point r.
func utf16Units(r rune) (first, second uint16, two bool) {
	if r >= 0x10000 {
		r -= 0x10000
		return uint16(0xD800 + (r >> 10)), uint16(0xDC00 + (r & 0x3FF)), true
	}
	return uint16(r), 0, false
}

// unitReader yields the UTF-16 code units of a WTF-8 string one at a time.
type unitReader struct {
	s       string
	i       int
	pending uint16
	hasPend bool
}

func (u *unitReader) next() (uint16, bool) {
	if u.hasPend {
		u.hasPend = false
		return u.pending, true
	}
	if u.i >= len(u.s) {
		return 0, false
	}
	r, size := decodeWTF8(u.s, u.i)
	u.i += size
	first, second, two := utf16Units(r)
	if two {
		u.pending, u.hasPend = second, true
	}
	return first, true
}

// CompareUTF16 compares a and b by their UTF-16 code-unit sequences, the
// order of JavaScript's default Array.prototype.sort and of RFC 8785 member
// names. It differs from Go's byte order when a supplementary character
// meets a character in U+E000–U+FFFF.
func CompareUTF16(a, b string) int {
	// Skip the common prefix byte-wise, then back up to a code point start.
	n := min(len(a), len(b))
	i := 0
	for i < n && a[i] == b[i] {
		i++
	}
	if i == len(a) && i == len(b) {
		return 0
	}
	// Where the first difference is ASCII on both sides (or one side ends
	// and the other goes on with ASCII), both sides decode the common
	// prefix alike, ending at i, and the byte decides: the common case of
	// member names.
	switch {
	case i == len(a):
		if b[i] < utf8.RuneSelf {
			return -1
		}
	case i == len(b):
		if a[i] < utf8.RuneSelf {
			return 1
		}
	case a[i] < utf8.RuneSelf && b[i] < utf8.RuneSelf:
		if a[i] < b[i] {
			return -1
		}
		return 1
	}
	for i > 0 && (i < len(a) && !utf8.RuneStart(a[i]) || i < len(b) && !utf8.RuneStart(b[i])) {
		i--
	}
	ua, ub := unitReader{s: a, i: i}, unitReader{s: b, i: i}
	for {
		x, okx := ua.next()
		y, oky := ub.next()
		switch {
		case !okx && !oky:
			return 0
		case !okx:
			return -1
		case !oky:
			return 1
		case x < y:
			return -1
		case x > y:
			return 1
		}
	}
}

// IsJSWhitespace reports whether r is removed by JavaScript's
// String.prototype.trim (WhiteSpace or LineTerminator). It includes U+FEFF
// and excludes U+0085, unlike Go's unicode.IsSpace.
func IsJSWhitespace(r rune) bool {
	switch {
	case r >= 0x09 && r <= 0x0D, r == 0x20, r == 0xA0, r == 0x1680,
		r >= 0x2000 && r <= 0x200A, r == 0x2028, r == 0x2029, r == 0x202F,
		r == 0x205F, r == 0x3000, r == 0xFEFF:
		return true
	}
	return false
}

// TrimJS removes leading and trailing characters for which IsJSWhitespace
// is true, like JavaScript's String.prototype.trim.
func TrimJS(s string) string {
	start := 0
	for start < len(s) {
		r, size := decodeWTF8(s, start)
		if !IsJSWhitespace(r) {
			break
		}
		start += size
	}
	end := len(s)
	for end > start {
		r, size := utf8.DecodeLastRuneInString(s[start:end])
		if r == utf8.RuneError && size <= 1 {
			break // an invalid byte or a stored surrogate is not whitespace
		}
		if !IsJSWhitespace(r) {
			break
		}
		end -= size
	}
	return s[start:end]
}

// HasControl reports whether s contains a C0 control character
// (U+0000–U+001F) or U+007F.
func HasControl(s string) bool {
	// Eight bytes at a time: a byte below 0x20, or equal to 0x7F, sets
	// its high bit in the mask (exact for "any byte": a borrow can only
	// flag bytes above one that is really flagged). Slicing s as it goes
	// lets the compiler see all eight indexes in range and read them as
	// one word.
	for ; len(s) >= 8; s = s[8:] {
		w := uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
			uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
		below := (w - lsb*0x20) &^ w & msb
		del := w ^ (lsb * 0x7F)
		if below|((del-lsb)&^del&msb) != 0 {
			return true
		}
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == 0x7F {
			return true
		}
	}
	return false
}

// ContainsJSWhitespace reports whether any character of s is JavaScript
// whitespace (the set of IsJSWhitespace).
func ContainsJSWhitespace(s string) bool {
	for i := 0; i < len(s); {
		r, size := decodeWTF8(s, i)
		if IsJSWhitespace(r) {
			return true
		}
		i += size
	}
	return false
}
