package canonjson

import (
	"strconv"
	"strings"
)

// AppendPointerToken appends "/" and the RFC 6901 escaped form of token
// ("~" becomes "~0", "/" becomes "~1").
func AppendPointerToken(b []byte, token string) []byte {
	b = append(b, '/')
	for i := 0; i < len(token); i++ {
		switch c := token[i]; c {
		case '~':
			b = append(b, '~', '0')
		case '/':
			b = append(b, '~', '1')
		default:
			b = append(b, c)
		}
	}
	return b
}

// Pointer joins tokens into an RFC 6901 JSON pointer. Pointer() is "", the
// whole document.
func Pointer(tokens ...string) string {
	var b []byte
	for _, t := range tokens {
		b = AppendPointerToken(b, t)
	}
	return string(b)
}

// IndexToken returns the pointer token of an array index.
func IndexToken(i int) string { return strconv.Itoa(i) }

// SplitPointer splits an RFC 6901 pointer into its unescaped tokens. It
// returns false for a non-empty pointer that does not start with "/" or
// holds an invalid "~" escape.
func SplitPointer(p string) ([]string, bool) {
	if p == "" {
		return nil, true
	}
	if p[0] != '/' {
		return nil, false
	}
	parts := strings.Split(p[1:], "/")
	for i, part := range parts {
		if !strings.Contains(part, "~") {
			continue
		}
		var b strings.Builder
		for j := 0; j < len(part); j++ {
			if part[j] != '~' {
				b.WriteByte(part[j])
				continue
			}
			if j+1 >= len(part) || (part[j+1] != '0' && part[j+1] != '1') {
				return nil, false
			}
			if part[j+1] == '0' {
				b.WriteByte('~')
			} else {
				b.WriteByte('/')
			}
			j++
		}
		parts[i] = b.String()
	}
	return parts, true
}

// Resolve returns the value that the JSON pointer p names inside v.
func Resolve(v Value, p string) (Value, bool) {
	tokens, ok := SplitPointer(p)
	if !ok {
		return Value{}, false
	}
	for _, t := range tokens {
		switch v.kind {
		case Object:
			next, ok := v.Get(t)
			if !ok {
				return Value{}, false
			}
			v = next
		case Array:
			i, err := strconv.Atoi(t)
			if err != nil || i < 0 || i >= len(v.Items()) || (len(t) > 1 && t[0] == '0') {
				return Value{}, false
			}
			v = v.Items()[i]
		default:
			return Value{}, false
		}
	}
	return v, true
}
