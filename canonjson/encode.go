package canonjson

import (
	"crypto/sha256"
	"fmt"
	"hash"
	"io"
	"math"
	"slices"
	"strconv"
	"sync"
	"unicode/utf8"
)

// CanonicalError reports a value that has no RFC 8785 form.
type CanonicalError struct {
	// Pointer locates the offending value.
	Pointer string
	// Reason says what was wrong.
	Reason string

	// within holds the path to the value, innermost token first, while
	// the error unwinds the encoder; the entry points spell it into
	// Pointer. Building the path only on failure keeps it out of the
	// encoding of every member.
	within []pathToken
}

// at records that err, a *CanonicalError on its way out of the encoder,
// happened within the member or item t.
func at(err error, t pathToken) error {
	if ce, ok := err.(*CanonicalError); ok {
		ce.within = append(ce.within, t)
	}
	return err
}

// located returns err with its Pointer spelled from the tokens gathered
// while it unwound.
func located(err error) error {
	if ce, ok := err.(*CanonicalError); ok && ce.within != nil {
		slices.Reverse(ce.within)
		d := decoder{path: ce.within}
		ce.Pointer, ce.within = d.pointer(), nil
	}
	return err
}

func (e *CanonicalError) Error() string {
	return fmt.Sprintf("not canonical JSON at %q: %s", e.Pointer, e.Reason)
}

// Canonical returns the RFC 8785 (JCS) serialization of v: no whitespace,
// members sorted by UTF-16 code units, ECMAScript number spelling and
// minimal string escaping. It refuses non-finite numbers, ill-formed
// strings (lone surrogates, invalid UTF-8), duplicate member names and the
// absent Value.
func Canonical(v Value) ([]byte, error) {
	return AppendCanonical(make([]byte, 0, 256), v)
}

// AppendCanonical appends the canonical form of v to b.
func AppendCanonical(b []byte, v Value) ([]byte, error) {
	e := getEncoder(nil)
	defer putEncoder(e)
	own := e.buf
	e.buf = b
	err := e.value(v)
	out := e.buf
	e.buf = own
	if err != nil {
		return b, located(err)
	}
	return out, nil
}

// Check reports whether v has a canonical form, refusing exactly what
// Canonical refuses, without keeping the text (it allocates nothing for
// values whose objects have at most 32 members).
func Check(v Value) error {
	e := getEncoder(io.Discard)
	defer putEncoder(e)
	return located(e.value(v))
}

// DigestPrefix starts every digest string.
const DigestPrefix = "sha256:"

// Digest returns "sha256:" followed by the lowercase hex SHA-256 of the
// canonical form of v.
func Digest(v Value) (string, error) {
	e := getEncoder(nil)
	defer putEncoder(e)
	e.hash.Reset()
	e.sink = e.hash
	if err := e.value(v); err != nil {
		return "", located(err)
	}
	e.hash.Write(e.buf)
	return formatDigest((*[sha256.Size]byte)(e.hash.Sum(e.sum[:0]))), nil
}

// encoderPool recycles encoders (their buffer, path stack and hash); it is
// a cache, not state: every use starts empty.
var encoderPool = sync.Pool{New: func() any {
	return &encoder{buf: make([]byte, 0, flushThreshold+512), hash: sha256.New()}
}}

// getEncoder returns an empty encoder flushing to sink (nil: keep the
// text in buf).
func getEncoder(sink io.Writer) *encoder {
	e := encoderPool.Get().(*encoder)
	e.buf, e.sink = e.buf[:0], sink
	return e
}

// putEncoder recycles e.
func putEncoder(e *encoder) {
	e.sink = nil
	encoderPool.Put(e)
}

// hexPairs holds the two lowercase hex digits of every byte value, so
// that formatDigest spells a byte with one table read.
var hexPairs = func() (t [256][2]byte) {
	for i := range t {
		t[i] = [2]byte{hexDigits[i>>4], hexDigits[i&0xF]}
	}
	return t
}()

func formatDigest(sum *[sha256.Size]byte) string {
	var out [len(DigestPrefix) + 2*sha256.Size]byte
	copy(out[:], DigestPrefix)
	for i, c := range sum {
		p := &hexPairs[c]
		out[len(DigestPrefix)+2*i], out[len(DigestPrefix)+2*i+1] = p[0], p[1]
	}
	return string(out[:])
}

// DigestBytes returns "sha256:" and the lowercase hex SHA-256 of b.
func DigestBytes(b []byte) string {
	sum := sha256.Sum256(b)
	return formatDigest(&sum)
}

// IsDigest reports whether s is "sha256:" followed by exactly 64 lowercase
// hex digits.
func IsDigest(s string) bool {
	if len(s) != len(DigestPrefix)+64 || s[:len(DigestPrefix)] != DigestPrefix {
		return false
	}
	for i := len(DigestPrefix); i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

type encoder struct {
	buf  []byte
	sink io.Writer // when set, full buffers are flushed here
	hash hash.Hash // Digest's SHA-256, kept with the encoder
	sum  [sha256.Size]byte
}

// flushThreshold is the buffered size at which a sinking encoder flushes.
const flushThreshold = 2048

func (e *encoder) maybeFlush() {
	if e.sink != nil && len(e.buf) >= flushThreshold {
		e.sink.Write(e.buf)
		e.buf = e.buf[:0]
	}
}

// fail reports why the value being encoded has no canonical form; the
// enclosing arrays and objects add where it is as the error unwinds.
func (e *encoder) fail(reason string) error {
	return &CanonicalError{Reason: reason}
}

func (e *encoder) value(v Value) error {
	switch v.kind {
	case Null:
		e.buf = append(e.buf, "null"...)
	case Bool:
		if v.Bool() {
			e.buf = append(e.buf, "true"...)
		} else {
			e.buf = append(e.buf, "false"...)
		}
	case Number:
		if !IsFinite(v.Float()) {
			return e.fail("number is not finite")
		}
		e.buf = AppendNumber(e.buf, v.Float())
	case String:
		if v.plain {
			e.buf = append(e.buf, '"')
			e.buf = append(e.buf, v.Str()...)
			e.buf = append(e.buf, '"')
		} else {
			var ok bool
			if e.buf, ok = appendCheckedString(e.buf, v.Str(), v.wellFormed); !ok {
				return e.fail("string is not well-formed Unicode")
			}
		}
		e.maybeFlush()
	case Array:
		e.buf = append(e.buf, '[')
		for i, item := range v.Items() {
			if i > 0 {
				e.buf = append(e.buf, ',')
			}
			if err := e.value(item); err != nil {
				return at(err, pathToken{index: i})
			}
		}
		e.buf = append(e.buf, ']')
	case Object:
		return e.object(v.Members(), v.plain)
	default:
		return e.fail("value is absent")
	}
	return nil
}

// object encodes members in canonical order; plainNames says every name
// was decoded without escapes, so its canonical form is its text in
// quotes.
func (e *encoder) object(members []Member, plainNames bool) error {
	var idxBuf [32]int32
	order := sortedOrder(members, idxBuf[:0])
	e.buf = append(e.buf, '{')
	for i, j := range order {
		m := &members[j]
		if i > 0 {
			if members[order[i-1]].Name == m.Name {
				return e.fail(fmt.Sprintf("member name %q appears more than once", m.Name))
			}
			e.buf = append(e.buf, ',')
		}
		if plainNames {
			e.buf = append(e.buf, '"')
			e.buf = append(e.buf, m.Name...)
			e.buf = append(e.buf, '"')
		} else {
			var ok bool
			if e.buf, ok = appendCheckedString(e.buf, m.Name, false); !ok {
				return e.fail("member name is not well-formed Unicode")
			}
		}
		e.buf = append(e.buf, ':')
		if err := e.value(m.Value); err != nil {
			return at(err, pathToken{name: m.Name, index: -1})
		}
	}
	e.buf = append(e.buf, '}')
	return nil
}

// sortedOrder returns the indices of members in UTF-16 name order. Sorting
// indices rather than members keeps pointer writes (and their GC write
// barriers) out of the sort; small objects sort in place on the caller's
// stack.
func sortedOrder(members []Member, order []int32) []int32 {
	for i := range members {
		order = append(order, int32(i))
	}
	for i := 1; i < len(order); i++ {
		if CompareUTF16(members[order[i-1]].Name, members[order[i]].Name) <= 0 {
			continue
		}
		if len(order) > 32 {
			slices.SortFunc(order, func(a, b int32) int { return CompareUTF16(members[a].Name, members[b].Name) })
			return order
		}
		// Insertion sort from i on: the prefix is sorted.
		for j := i; j < len(order); j++ {
			for k := j; k > 0 && CompareUTF16(members[order[k-1]].Name, members[order[k]].Name) > 0; k-- {
				order[k-1], order[k] = order[k], order[k-1]
			}
		}
		return order
	}
	return order
}

const hexDigits = "0123456789abcdef"

// appendString appends s as an RFC 8785 string: '"' and '\' escaped, the
// five short escapes for \b \t \n \f \r, \u00xx for other C0 controls, and
// every other character (DEL, U+2028, non-ASCII) as raw UTF-8.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	b = appendStringBody(b, s)
	return append(b, '"')
}

// appendCheckedString appends s as appendString does and reports whether s
// is well-formed (known is true when that was established already); ASCII
// strings are checked in the escaping pass itself.
func appendCheckedString(b []byte, s string, known bool) ([]byte, bool) {
	b = append(b, '"')
	start, ascii := 0, true
	for i := 0; i < len(s); {
		if len(s)-i >= 8 {
			w := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
				uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
			if needsEscape(w) == 0 {
				if w&msb != 0 {
					ascii = false
				}
				i += 8
				continue
			}
		}
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			if c >= 0x80 {
				ascii = false
			}
			i++
			continue
		}
		b = append(b, s[start:i]...)
		b = appendEscape(b, c)
		i++
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"'), ascii || known || utf8.ValidString(s)
}

// needsEscape has the high bit set in bytes of w that are control
// characters, '"' or '\\' (non-ASCII bytes need no escape).
//
// Like needsAttention it is one expression, so that it is inlined.
func needsEscape(w uint64) uint64 {
	q, b := w^(lsb*'"'), w^(lsb*'\\')
	return ((w-lsb*0x20)&^w | (q-lsb)&^q | (b-lsb)&^b) & msb &^ w
}

// appendStringBody appends s escaped as in appendString, without quotes.
func appendStringBody(b []byte, s string) []byte {
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		b = append(b, s[start:i]...)
		b = appendEscape(b, c)
		start = i + 1
	}
	return append(b, s[start:]...)
}

// appendEscape appends the RFC 8785 escape of '"', '\\' or a C0 control.
func appendEscape(b []byte, c byte) []byte {
	switch c {
	case '"', '\\':
		return append(b, '\\', c)
	case '\b':
		return append(b, '\\', 'b')
	case '\t':
		return append(b, '\\', 't')
	case '\n':
		return append(b, '\\', 'n')
	case '\f':
		return append(b, '\\', 'f')
	case '\r':
		return append(b, '\\', 'r')
	}
	return append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
}

// AppendNumber appends f spelled as ECMAScript Number::toString does, which
// is the RFC 8785 number form. f must be finite; -0 is written as 0.
func AppendNumber(b []byte, f float64) []byte {
	if f == 0 {
		return append(b, '0')
	}
	if f == math.Trunc(f) && math.Abs(f) < 1<<53 {
		return strconv.AppendInt(b, int64(f), 10)
	}
	var tmp [32]byte
	// Shortest round-trip digits: d[.ddd]e±x
	s := strconv.AppendFloat(tmp[:0], f, 'e', -1, 64)
	neg := s[0] == '-'
	if neg {
		s = s[1:]
		b = append(b, '-')
	}
	ePos := 0
	for ePos < len(s) && s[ePos] != 'e' {
		ePos++
	}
	var digits [24]byte
	k := 0
	for _, c := range s[:ePos] {
		if c != '.' {
			digits[k] = c
			k++
		}
	}
	exp, _ := strconv.Atoi(string(s[ePos+1:]))
	n := exp + 1 // value = 0.d1…dk × 10^n
	switch {
	case k <= n && n <= 21:
		b = append(b, digits[:k]...)
		for range n - k {
			b = append(b, '0')
		}
	case 0 < n && n <= 21:
		b = append(b, digits[:n]...)
		b = append(b, '.')
		b = append(b, digits[n:k]...)
	case -6 < n && n <= 0:
		b = append(b, '0', '.')
		for range -n {
			b = append(b, '0')
		}
		b = append(b, digits[:k]...)
	default:
		b = append(b, digits[0])
		if k > 1 {
			b = append(b, '.')
			b = append(b, digits[1:k]...)
		}
		b = append(b, 'e')
		if n-1 >= 0 {
			b = append(b, '+')
		} else {
			b = append(b, '-')
		}
		b = strconv.AppendInt(b, int64(abs(n-1)), 10)
	}
	return b
}

func abs(i int) int {
	if i < 0 {
		return -i
	}
	return i
}
