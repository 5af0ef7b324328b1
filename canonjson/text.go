package canonjson

import (
	"math"
	"unicode/utf16"
	"unicode/utf8"
)

// FromUTF16 returns the WTF-8 string of a UTF-16 code-unit sequence,
// keeping unpaired surrogates (see the package doc).
func FromUTF16(units []uint16) string {
	b := make([]byte, 0, len(units))
	for i := 0; i < len(units); i++ {
		u := rune(units[i])
		if utf16.IsSurrogate(u) && u < 0xDC00 && i+1 < len(units) && units[i+1] >= 0xDC00 && units[i+1] <= 0xDFFF {
			b = utf8.AppendRune(b, utf16.DecodeRune(u, rune(units[i+1])))
			i++
			continue
		}
		b = appendWTF8(b, u)
	}
	return string(b)
}

// Marshal writes v as JSON text that Decode reads back to an equal Value,
// for any Value, including those without a canonical form: members keep
// their order, lone surrogates are written as \u escapes, ±Inf as ±1e400
// (which JSON.parse also reads as ±Infinity) and NaN as null. Use Canonical
// for identity; use Marshal to show or store what was received.
func Marshal(v Value) []byte { return AppendMarshal(nil, v) }

// AppendMarshal appends Marshal(v) to b.
func AppendMarshal(b []byte, v Value) []byte {
	switch v.kind {
	case Null, Invalid:
		return append(b, "null"...)
	case Bool:
		if v.Bool() {
			return append(b, "true"...)
		}
		return append(b, "false"...)
	case Number:
		switch {
		case math.IsNaN(v.Float()):
			return append(b, "null"...)
		case math.IsInf(v.Float(), 1):
			return append(b, "1e400"...)
		case math.IsInf(v.Float(), -1):
			return append(b, "-1e400"...)
		}
		if v.Float() == 0 && math.Signbit(v.Float()) {
			return append(b, "-0"...)
		}
		return AppendNumber(b, v.Float())
	case String:
		return appendLossless(b, v.Str())
	case Array:
		b = append(b, '[')
		for i, item := range v.Items() {
			if i > 0 {
				b = append(b, ',')
			}
			b = AppendMarshal(b, item)
		}
		return append(b, ']')
	case Object:
		b = append(b, '{')
		for i, m := range v.Members() {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendLossless(b, m.Name)
			b = append(b, ':')
			b = AppendMarshal(b, m.Value)
		}
		return append(b, '}')
	}
	return b
}

// appendLossless writes s like appendString, but escapes stored surrogates
// as \uXXXX and replaces other invalid bytes with \ufffd.
func appendLossless(b []byte, s string) []byte {
	if utf8.ValidString(s) {
		return appendString(b, s)
	}
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		r, size := decodeWTF8(s, i)
		if r >= 0xD800 && r <= 0xDFFF || r == utf8.RuneError && size == 1 {
			b = appendStringBody(b, s[start:i])
			if r == utf8.RuneError {
				r = 0xFFFD
			}
			b = append(b, '\\', 'u', hexDigits[r>>12&0xF], hexDigits[r>>8&0xF], hexDigits[r>>4&0xF], hexDigits[r&0xF])
			start = i + size
		}
		i += size
	}
	b = appendStringBody(b, s[start:])
	return append(b, '"')
}
