package canonjson

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"
)

// CanonicalError reports a value that has no RFC 8785 form.
type CanonicalError struct {
	// Pointer locates the offending value.
	Pointer string
	// Reason says what was wrong.
	Reason string
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
	e := encoder{buf: b}
	if err := e.value(v); err != nil {
		return b, err
	}
	return e.buf, nil
}

// DigestPrefix starts every digest string.
const DigestPrefix = "sha256:"

// Digest returns "sha256:" followed by the lowercase hex SHA-256 of the
// canonical form of v.
func Digest(v Value) (string, error) {
	b, err := Canonical(v)
	if err != nil {
		return "", err
	}
	return DigestBytes(b), nil
}

// DigestBytes returns "sha256:" and the lowercase hex SHA-256 of b.
func DigestBytes(b []byte) string {
	sum := sha256.Sum256(b)
	var out [len(DigestPrefix) + 64]byte
	copy(out[:], DigestPrefix)
	hex.Encode(out[len(DigestPrefix):], sum[:])
	return string(out[:])
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
	path []pathToken
}

func (e *encoder) fail(reason string) error {
	d := decoder{path: e.path}
	return &CanonicalError{Pointer: d.pointer(), Reason: reason}
}

func (e *encoder) value(v Value) error {
	switch v.kind {
	case Null:
		e.buf = append(e.buf, "null"...)
	case Bool:
		if v.boolean {
			e.buf = append(e.buf, "true"...)
		} else {
			e.buf = append(e.buf, "false"...)
		}
	case Number:
		if !IsFinite(v.num) {
			return e.fail("number is not finite")
		}
		e.buf = AppendNumber(e.buf, v.num)
	case String:
		if !utf8.ValidString(v.str) {
			return e.fail("string is not well-formed Unicode")
		}
		e.buf = appendString(e.buf, v.str)
	case Array:
		e.buf = append(e.buf, '[')
		e.path = append(e.path, pathToken{})
		for i, item := range v.items {
			if i > 0 {
				e.buf = append(e.buf, ',')
			}
			e.path[len(e.path)-1].index = i
			if err := e.value(item); err != nil {
				return err
			}
		}
		e.path = e.path[:len(e.path)-1]
		e.buf = append(e.buf, ']')
	case Object:
		return e.object(v.members)
	default:
		return e.fail("value is absent")
	}
	return nil
}

func (e *encoder) object(members []Member) error {
	order := sortedMembers(members)
	e.buf = append(e.buf, '{')
	for i, m := range order {
		if !utf8.ValidString(m.Name) {
			return e.fail("member name is not well-formed Unicode")
		}
		if i > 0 {
			if order[i-1].Name == m.Name {
				return e.fail(fmt.Sprintf("member name %q appears more than once", m.Name))
			}
			e.buf = append(e.buf, ',')
		}
		e.buf = appendString(e.buf, m.Name)
		e.buf = append(e.buf, ':')
		e.path = append(e.path, pathToken{name: m.Name, index: -1})
		if err := e.value(m.Value); err != nil {
			return err
		}
		e.path = e.path[:len(e.path)-1]
	}
	e.buf = append(e.buf, '}')
	return nil
}

// sortedMembers returns members in UTF-16 name order, reusing the input
// slice when it is already sorted.
func sortedMembers(members []Member) []Member {
	sorted := true
	for i := 1; i < len(members); i++ {
		if CompareUTF16(members[i-1].Name, members[i].Name) > 0 {
			sorted = false
			break
		}
	}
	if sorted {
		return members
	}
	order := slices.Clone(members)
	slices.SortFunc(order, func(a, b Member) int { return CompareUTF16(a.Name, b.Name) })
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

// appendStringBody appends s escaped as in appendString, without quotes.
func appendStringBody(b []byte, s string) []byte {
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\b':
			b = append(b, '\\', 'b')
		case '\t':
			b = append(b, '\\', 't')
		case '\n':
			b = append(b, '\\', 'n')
		case '\f':
			b = append(b, '\\', 'f')
		case '\r':
			b = append(b, '\\', 'r')
		default:
			b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
		}
		start = i + 1
	}
	return append(b, s[start:]...)
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
