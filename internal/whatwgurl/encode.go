package whatwgurl

import "unicode/utf8"

// encodeSet is a percent-encode set restricted to ASCII; every code point
// above U+007E is in every set, as all of them include the C0 control
// percent-encode set.
type encodeSet [128]bool

func newEncodeSet(base *encodeSet, extra string) *encodeSet {
	var s encodeSet
	if base != nil {
		s = *base
	}
	for i := 0; i < len(extra); i++ {
		s[extra[i]] = true
	}
	return &s
}

var (
	// c0ControlSet is the C0 control percent-encode set: U+0000 to U+001F
	// and everything above U+007E.
	c0ControlSet = func() *encodeSet {
		var s encodeSet
		for i := 0; i < 0x20; i++ {
			s[i] = true
		}
		s[0x7F] = true
		return &s
	}()
	fragmentSet     = newEncodeSet(c0ControlSet, " \"<>`")
	querySet        = newEncodeSet(c0ControlSet, " \"#<>")
	specialQuerySet = newEncodeSet(querySet, "'")
	// pathSet follows Node.js 20 (Ada 2.9): U+005E (^) is not in it, although
	// later revisions of the standard add it.
	pathSet     = newEncodeSet(querySet, "?`{}")
	userinfoSet = newEncodeSet(pathSet, "/:;=@[\\]^|")
)

const upperHex = "0123456789ABCDEF"

// appendEncoded appends the UTF-8 percent-encoding of r using set.
func appendEncoded(dst []byte, r rune, set *encodeSet) []byte {
	if r < utf8.RuneSelf && !set[r] {
		return append(dst, byte(r))
	}
	var tmp [utf8.UTFMax]byte
	n := utf8.EncodeRune(tmp[:], r)
	for _, b := range tmp[:n] {
		if b < utf8.RuneSelf && !set[b] {
			dst = append(dst, b)
			continue
		}
		dst = append(dst, '%', upperHex[b>>4], upperHex[b&0xF])
	}
	return dst
}

func hexValue(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// percentDecode implements the standard's percent-decode on bytes: "%XX"
// with two hex digits becomes that byte, anything else is kept as is.
func percentDecode(s []byte) []byte {
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '%' && i+2 < len(s) {
			hi, ok1 := hexValue(s[i+1])
			lo, ok2 := hexValue(s[i+2])
			if ok1 && ok2 {
				out = append(out, hi<<4|lo)
				i += 2
				continue
			}
		}
		out = append(out, c)
	}
	return out
}

// decodeUTF8 decodes b as UTF-8 the way the Encoding Standard's UTF-8
// decoder does (without BOM handling): each maximal ill-formed subsequence
// becomes one U+FFFD. When wtf8 is set, a generalized-UTF-8 surrogate (ED A0
// 80 to ED BF BF) counts as one code point: a lone one becomes one U+FFFD and
// a high surrogate directly followed by a low one is combined into the
// supplementary code point it stands for, as JavaScript would see it.
func decodeUTF8(b []byte, wtf8 bool) []rune {
	out := make([]rune, 0, len(b))
	for i := 0; i < len(b); {
		c := b[i]
		if c < 0x80 {
			out = append(out, rune(c))
			i++
			continue
		}
		if wtf8 {
			if hi, ok := surrogateAt(b, i); ok {
				if hi < 0xDC00 {
					if lo, ok := surrogateAt(b, i+3); ok && lo >= 0xDC00 {
						out = append(out, 0x10000+(hi-0xD800)<<10+(lo-0xDC00))
						i += 6
						continue
					}
				}
				out = append(out, utf8.RuneError)
				i += 3
				continue
			}
		}
		var need int
		var cp rune
		lower, upper := byte(0x80), byte(0xBF)
		switch {
		case 0xC2 <= c && c <= 0xDF:
			need, cp = 1, rune(c&0x1F)
		case 0xE0 <= c && c <= 0xEF:
			if c == 0xE0 {
				lower = 0xA0
			} else if c == 0xED {
				upper = 0x9F
			}
			need, cp = 2, rune(c&0x0F)
		case 0xF0 <= c && c <= 0xF4:
			if c == 0xF0 {
				lower = 0x90
			} else if c == 0xF4 {
				upper = 0x8F
			}
			need, cp = 3, rune(c&0x07)
		default:
			out = append(out, utf8.RuneError)
			i++
			continue
		}
		j := i + 1
		ok := true
		for k := 0; k < need; k++ {
			if j >= len(b) || b[j] < lower || b[j] > upper {
				ok = false
				break
			}
			cp = cp<<6 | rune(b[j]&0x3F)
			j++
			lower, upper = 0x80, 0xBF
		}
		if !ok {
			// The bytes consumed so far form a maximal ill-formed prefix;
			// the offending byte (if any) is decoded afresh.
			out = append(out, utf8.RuneError)
			i = j
			continue
		}
		out = append(out, cp)
		i = j
	}
	return out
}

// surrogateAt reports the surrogate code unit encoded in generalized UTF-8 at
// b[i:i+3], if there is one.
func surrogateAt(b []byte, i int) (rune, bool) {
	if i+2 >= len(b) || b[i] != 0xED || b[i+1] < 0xA0 || b[i+1] > 0xBF || b[i+2] < 0x80 || b[i+2] > 0xBF {
		return 0, false
	}
	return 0xD000 | rune(b[i+1]&0x3F)<<6 | rune(b[i+2]&0x3F), true
}
