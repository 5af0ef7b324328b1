package canonjson

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"strconv"
	"sync"
	"unicode/utf8"
)

// DefaultMaxDepth is the nesting depth (arrays and objects) that Decode
// accepts unless DecodeOptions.MaxDepth says otherwise.
const DefaultMaxDepth = 1000

// DefaultMaxValues is how many values (every array item, member value and
// the document itself counts one) Decode accepts in one document unless
// DecodeOptions.MaxValues says otherwise. Every value costs a 24-byte
// Value however short its text, so a cap on input bytes alone would let a
// 64 MiB array of one-digit numbers cost a gigabyte or more; at this bound
// the values of one document stay under about 100 MB. The largest agentrt
// documents in the reference vectors hold under 100,000 values.
const DefaultMaxValues = 1 << 20

// DecodeOptions adjusts Decode. The zero value is the strict default.
type DecodeOptions struct {
	// MaxDepth bounds array and object nesting; 0 means DefaultMaxDepth.
	MaxDepth int
	// MaxValues bounds the number of values in the document; 0 means
	// DefaultMaxValues and a negative number means no bound.
	MaxValues int
	// AllowDuplicateNames keeps the last of several members with one name,
	// as JSON.parse does, instead of refusing the document. Only for
	// reading legacy documents: two parsers that disagree on duplicates
	// disagree on what a document says.
	AllowDuplicateNames bool
}

// Decode codes reported by *DecodeError.
const (
	CodeSyntax        = "syntax"
	CodeInvalidUTF8   = "invalid_utf8"
	CodeDuplicateName = "duplicate_key"
	CodeTrailingData  = "trailing_data"
	CodeTooDeep       = "too_deep"
	CodeTooManyValues = "too_many_values"
)

// DecodeError reports why a document was refused and where.
type DecodeError struct {
	// Code is one of the Code* constants.
	Code string
	// Pointer is the RFC 6901 pointer of the value being read.
	Pointer string
	// Offset is the byte offset in the input where the problem was found.
	Offset int
	// Message says what was wrong, for people.
	Message string
}

func (e *DecodeError) Error() string {
	return fmt.Sprintf("invalid JSON at %q (byte %d): %s", e.Pointer, e.Offset, e.Message)
}

// Decode parses one JSON document strictly (see DecodeOptions for the one
// relaxation). Surrounding whitespace is allowed; anything else after the
// value is refused. Strings without escapes share the memory of one copy
// of data, and arrays and objects share a few chunks of items and
// members, so a retained Value keeps that copy and its chunk alive.
func Decode(data []byte) (Value, error) { return DecodeWith(data, DecodeOptions{}) }

// DecodeWith is Decode with options.
func DecodeWith(data []byte, opts DecodeOptions) (Value, error) {
	if opts.MaxDepth <= 0 {
		opts.MaxDepth = DefaultMaxDepth
	}
	switch {
	case opts.MaxValues == 0:
		opts.MaxValues = DefaultMaxValues
	case opts.MaxValues < 0:
		opts.MaxValues = int(^uint(0) >> 1)
	}
	st := stackPool.Get().(*stacks)
	defer st.release()
	d := decoder{data: data, src: string(data), opts: opts, items: st.items[:0], members: st.members[:0], path: st.path[:0]}
	d.skipSpace()
	v, err := d.value(0)
	st.items, st.members, st.path = d.items[:0], d.members[:0], d.path[:0]
	if err != nil {
		return Value{}, err
	}
	d.skipSpace()
	if d.pos != len(d.data) {
		return Value{}, d.fail(CodeTrailingData, "unexpected data after the JSON value")
	}
	return v, nil
}

// stacks are a decoder's scratch space, recycled between calls; it is a
// cache, not state: every decode starts with empty stacks.
type stacks struct {
	items   []Value
	members []Member
	path    []pathToken
}

var stackPool = sync.Pool{New: func() any { return new(stacks) }}

func (s *stacks) release() {
	if cap(s.items) > 4096 || cap(s.members) > 4096 {
		return // let an unusually large document's stacks go
	}
	stackPool.Put(s)
}

type pathToken struct {
	name  string
	index int // -1 for a member name
}

type decoder struct {
	data    []byte
	src     string // data as one string: unescaped strings are substrings of it
	pos     int
	opts    DecodeOptions
	path    []pathToken
	scratch []byte
	items   []Value  // stack of array items under construction
	members []Member // stack of object members under construction
	// itemChunk and memberChunk are where finished arrays and objects
	// take their items and members from (see carve); they belong to
	// this document's Values and are never recycled.
	itemChunk   []Value
	memberChunk []Member
	values      int // values begun so far, bounded by opts.MaxValues
	// plain reports whether the last string read had no escapes.
	plain bool
	// nameChecks counts member-name comparisons and lookups made to find
	// duplicates; tests use it to show the work grows linearly.
	nameChecks int
}

func (d *decoder) pointer() string {
	var b []byte
	for _, t := range d.path {
		if t.index >= 0 {
			b = append(b, '/')
			b = strconv.AppendInt(b, int64(t.index), 10)
		} else {
			b = AppendPointerToken(b, t.name)
		}
	}
	return string(b)
}

func (d *decoder) fail(code, msg string) *DecodeError {
	return &DecodeError{Code: code, Pointer: d.pointer(), Offset: d.pos, Message: msg}
}

func (d *decoder) skipSpace() {
	for d.pos < len(d.data) {
		// JSON whitespace is all at or below ' ', so one comparison
		// settles the common case, where the next byte starts a token.
		if c := d.data[d.pos]; c > ' ' || c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			return
		}
		d.pos++
	}
}

func (d *decoder) unexpected(want string) *DecodeError {
	if d.pos >= len(d.data) {
		return d.fail(CodeSyntax, "unexpected end of input, expected "+want)
	}
	c := d.data[d.pos]
	if c < 0x20 || c >= 0x7F {
		return d.fail(CodeSyntax, fmt.Sprintf("unexpected byte 0x%02x, expected %s", c, want))
	}
	return d.fail(CodeSyntax, fmt.Sprintf("unexpected %q, expected %s", c, want))
}

func (d *decoder) literal(word string, v Value) (Value, error) {
	if len(d.data)-d.pos >= len(word) && string(d.data[d.pos:d.pos+len(word)]) == word {
		d.pos += len(word)
		return v, nil
	}
	return Value{}, d.unexpected("a JSON value")
}

func (d *decoder) value(depth int) (Value, error) {
	if d.pos >= len(d.data) {
		return Value{}, d.unexpected("a JSON value")
	}
	if d.values++; d.values > d.opts.MaxValues {
		return Value{}, d.fail(CodeTooManyValues, fmt.Sprintf("more than %d values in one document", d.opts.MaxValues))
	}
	switch c := d.data[d.pos]; {
	case c == '{':
		return d.object(depth + 1)
	case c == '[':
		return d.array(depth + 1)
	case c == '"':
		s, wf, err := d.strFlag()
		if err != nil {
			return Value{}, err
		}
		v := stringValue(s, wf)
		v.plain = d.plain
		return v, nil
	case c == 't':
		return d.literal("true", BoolValue(true))
	case c == 'f':
		return d.literal("false", Value{kind: Bool})
	case c == 'n':
		return d.literal("null", Value{kind: Null})
	case c == '-' || c >= '0' && c <= '9':
		return d.number()
	}
	return Value{}, d.unexpected("a JSON value")
}

func (d *decoder) array(depth int) (Value, error) {
	if depth > d.opts.MaxDepth {
		return Value{}, d.fail(CodeTooDeep, fmt.Sprintf("nesting deeper than %d", d.opts.MaxDepth))
	}
	d.pos++ // [
	d.skipSpace()
	if d.pos < len(d.data) && d.data[d.pos] == ']' {
		d.pos++
		return namesKnown(ArrayValue(nil), true, false), nil
	}
	base := len(d.items)
	namesOK := true // every member name in the items is well-formed
	d.path = append(d.path, pathToken{index: 0})
	for i := 0; ; i++ {
		d.path[len(d.path)-1].index = i
		v, err := d.value(depth)
		if err != nil {
			return Value{}, err
		}
		namesOK = namesOK && v.NamesWellFormed()
		d.items = append(grow(d.items), v)
		d.skipSpace()
		if d.pos < len(d.data) && d.data[d.pos] == ',' {
			d.pos++
			d.skipSpace()
			continue
		}
		if d.pos < len(d.data) && d.data[d.pos] == ']' {
			d.pos++
			break
		}
		return Value{}, d.unexpected(`"," or "]"`)
	}
	d.path = d.path[:len(d.path)-1]
	items := carve(&d.itemChunk, len(d.items)-base, len(d.items))
	copy(items, d.items[base:])
	clear(d.items[base:])
	d.items = d.items[:base]
	return namesKnown(ArrayValue(items), namesOK, false), nil
}

func (d *decoder) object(depth int) (Value, error) {
	if depth > d.opts.MaxDepth {
		return Value{}, d.fail(CodeTooDeep, fmt.Sprintf("nesting deeper than %d", d.opts.MaxDepth))
	}
	d.pos++ // {
	d.skipSpace()
	if d.pos < len(d.data) && d.data[d.pos] == '}' {
		d.pos++
		return namesKnown(ObjectValue(nil), true, true), nil
	}
	base := len(d.members)
	// namesOK: every member name here and below is well-formed; plainNames:
	// every member name here was written without escapes.
	namesOK, plainNames := true, true
	var names map[string]int // member name -> index in d.members, once the object is large
	for {
		if d.pos >= len(d.data) || d.data[d.pos] != '"' {
			return Value{}, d.unexpected("a member name")
		}
		name, wf, err := d.strFlag()
		if err != nil {
			return Value{}, err
		}
		namesOK, plainNames = namesOK && wf, plainNames && d.plain
		d.skipSpace()
		if d.pos >= len(d.data) || d.data[d.pos] != ':' {
			return Value{}, d.unexpected(`":"`)
		}
		d.pos++
		d.skipSpace()
		d.path = append(d.path, pathToken{name: name, index: -1})
		v, err := d.value(depth)
		if err != nil {
			return Value{}, err
		}
		namesOK = namesOK && v.NamesWellFormed()
		dup := -1
		switch {
		case names != nil:
			d.nameChecks++
			if i, ok := names[name]; ok {
				dup = i
			}
		case len(d.members)-base < pairwiseMembers:
			dup = d.findMember(base, name)
		default:
			names = make(map[string]int, 2*pairwiseMembers)
			d.nameChecks += len(d.members) - base + 1
			for i := base; i < len(d.members); i++ {
				names[d.members[i].Name] = i
			}
			if i, ok := names[name]; ok {
				dup = i
			}
		}
		if dup >= 0 {
			if !d.opts.AllowDuplicateNames {
				return Value{}, d.fail(CodeDuplicateName, fmt.Sprintf("member name %q appears more than once", name))
			}
			d.members[dup].Value = v
		} else {
			if names != nil {
				names[name] = len(d.members)
			}
			d.members = append(grow(d.members), Member{Name: name, Value: v})
		}
		d.path = d.path[:len(d.path)-1]
		d.skipSpace()
		if d.pos < len(d.data) && d.data[d.pos] == ',' {
			d.pos++
			d.skipSpace()
			continue
		}
		if d.pos < len(d.data) && d.data[d.pos] == '}' {
			d.pos++
			break
		}
		return Value{}, d.unexpected(`"," or "}"`)
	}
	members := carve(&d.memberChunk, len(d.members)-base, len(d.members))
	copy(members, d.members[base:])
	clear(d.members[base:])
	d.members = d.members[:base]
	return namesKnown(ObjectValue(members), namesOK, plainNames), nil
}

// pairwiseMembers is the member count up to which an object's names are
// checked for duplicates by comparing each new name with every earlier one.
// Past it a map takes over, so a wide object costs linear time. Below it
// the comparisons are about as fast as hashing and allocate nothing
// (BenchmarkDecodeObjectWidth: the two methods take the same time
// somewhere between 32 and 64 members, and the map allocates twice as much).
var pairwiseMembers = 48

// grow returns s with room for one more element. A full stack doubles,
// rather than let append grow a large one by a quarter at a time: a wide
// array would allocate five times its final size on the way.
func grow[T any](s []T) []T {
	if len(s) < cap(s) {
		return s
	}
	bigger := make([]T, len(s), max(2*cap(s), 64))
	copy(bigger, s)
	return bigger
}

// Chunk sizes for carve, in elements.
const (
	minChunk = 4
	maxChunk = 1024
)

// carve returns a slice of n elements, its capacity n, from the free end
// of *chunk, so that the arrays (or objects) of one document share a few
// allocations instead of taking one each. When the chunk lacks room a new
// one replaces it, large enough for everything on the stack (stacked
// elements all end up carved) and half again the old one, within
// minChunk and maxChunk; a slice larger than maxChunk gets an allocation of its own.
// Chunks grow geometrically and at most the unused end of each is lost,
// so the memory stays linear in the input, and a retained Value keeps its
// chunk alive as it keeps the text of its strings.
func carve[T any](chunk *[]T, n, stacked int) []T {
	c := *chunk
	if cap(c)-len(c) < n {
		if n > maxChunk {
			return make([]T, n)
		}
		c = make([]T, 0, min(max(stacked, cap(c)+cap(c)/2, minChunk), maxChunk))
	}
	s := c[len(c) : len(c)+n : len(c)+n]
	*chunk = c[:len(c)+n]
	return s
}

// findMember returns the index in d.members of a member named name that
// belongs to the object whose members start at base, or -1.
func (d *decoder) findMember(base int, name string) int {
	d.nameChecks += len(d.members) - base
	for i := base; i < len(d.members); i++ {
		if d.members[i].Name == name {
			return i
		}
	}
	return -1
}

// strFlag reads a string and reports whether it is well-formed (only a
// lone-surrogate escape makes it ill-formed; raw bytes are validated).
func (d *decoder) strFlag() (string, bool, error) {
	d.pos++ // opening quote
	start := d.pos
	// Fast path: no escapes. Skip plain ASCII eight bytes at a time.
	for d.pos < len(d.data) {
		d.pos += plainASCIIPrefix(d.data[d.pos:])
		if d.pos >= len(d.data) {
			break
		}
		c := d.data[d.pos]
		switch {
		case c == '"':
			s := d.src[start:d.pos]
			d.pos++
			d.plain = true
			return s, true, nil
		case c == '\\':
			d.plain = false
			s, err := d.strSlow(start)
			return s, err == nil && utf8.ValidString(s), err
		case c < 0x20:
			return "", false, d.fail(CodeSyntax, fmt.Sprintf("unescaped control character 0x%02x in string", c))
		case c < utf8.RuneSelf:
			d.pos++
		default:
			if n := multiBytePrefix(d.data[d.pos:]); n > 0 {
				d.pos += n
				continue
			}
			r, size := utf8.DecodeRune(d.data[d.pos:])
			if r == utf8.RuneError && size <= 1 {
				return "", false, d.fail(CodeInvalidUTF8, "string is not valid UTF-8")
			}
			d.pos += size
		}
	}
	return "", false, d.fail(CodeSyntax, "unterminated string")
}

// multiBytePrefix returns how many leading bytes of b are well-formed
// multi-byte UTF-8 sequences (RFC 3629 table 3-7: no overlong forms, no
// surrogates, nothing past U+10FFFF). It stops at ASCII and at anything
// ill-formed, which utf8.DecodeRune then judges.
func multiBytePrefix(b []byte) int {
	n := 0
	// Four bytes at a time while they last: one load and one mask check
	// the continuation bytes of a whole sequence.
	for len(b)-n >= 4 {
		// Two four-byte sequences (emoji and other supplementary
		// characters) at once: fourFourBytes says both are well-formed.
		if p := b[n:]; len(p) >= 8 && fourFourBytes(binary.LittleEndian.Uint64(p)) {
			for p = p[8:]; len(p) >= 8 && fourFourBytes(binary.LittleEndian.Uint64(p)); p = p[8:] {
			}
			n = len(b) - len(p)
			continue
		}
		w := binary.LittleEndian.Uint32(b[n:])
		c, c1 := byte(w), byte(w>>8)
		switch {
		case c >= 0xC2 && c <= 0xDF:
			if w&0xC000 != 0x8000 {
				return n
			}
			n += 2
		case c >= 0xE0 && c <= 0xEF:
			if w&0xC0C000 != 0x808000 || c == 0xE0 && c1 < 0xA0 || c == 0xED && c1 > 0x9F {
				return n
			}
			n += 3
		case c >= 0xF0 && c <= 0xF4:
			if w&0xC0C0C000 != 0x80808000 || c == 0xF0 && c1 < 0x90 || c == 0xF4 && c1 > 0x8F {
				return n
			}
			n += 4
		default:
			return n
		}
	}
	for n+1 < len(b) {
		c, c1 := b[n], b[n+1]
		lo, hi := byte(0x80), byte(0xBF) // bounds of the second byte
		size := 0
		switch {
		case c >= 0xC2 && c <= 0xDF:
			size = 2
		case c == 0xE0:
			size, lo = 3, 0xA0
		case c == 0xED:
			size, hi = 3, 0x9F
		case c >= 0xE1 && c <= 0xEF:
			size = 3
		case c == 0xF0:
			size, lo = 4, 0x90
		case c == 0xF4:
			size, hi = 4, 0x8F
		case c >= 0xF1 && c <= 0xF3:
			size = 4
		default:
			return n
		}
		if n+size > len(b) || c1 < lo || c1 > hi {
			return n
		}
		for k := n + 2; k < n+size; k++ {
			if b[k]&0xC0 != 0x80 {
				return n
			}
		}
		n += size
	}
	return n
}

// fourFourBytes reports whether the eight bytes of w (little-endian) are
// two well-formed four-byte UTF-8 sequences. Each is a lead byte 11110xxx
// and three continuation bytes 10xxxxxx (one mask checks all eight), and
// well-formed exactly when its first two bytes, read as a big-endian
// number, lie in 0xF090–0xF48F: that range test excludes the overlong
// forms (F0 with a second byte below 0x90), code points past U+10FFFF (F4
// with a second byte above 0x8F) and the leads F5–F7, and admits every
// other lead F0–F4 with any continuation byte.
func fourFourBytes(w uint64) bool {
	if w&0xC0C0C0F8C0C0C0F8 != 0x808080F0808080F0 {
		return false
	}
	return bits.ReverseBytes16(uint16(w))-0xF090 <= 0x3FF && bits.ReverseBytes16(uint16(w>>32))-0xF090 <= 0x3FF
}

// plainASCIIPrefix returns how many leading bytes of b are ASCII other
// than control characters, '"' and '\\', checking eight bytes at a time.
// The word that holds the first such byte says where it is (the lowest
// flagged byte of needsAttention is exact), so only the last few bytes of
// the input are ever checked one by one.
func plainASCIIPrefix(b []byte) int {
	n := 0
	for len(b)-n >= 8 {
		if m := needsAttention(binary.LittleEndian.Uint64(b[n:])); m != 0 {
			return n + bits.TrailingZeros64(m)/8
		}
		n += 8
	}
	for n < len(b) {
		c := b[n]
		if c < 0x20 || c >= 0x80 || c == '"' || c == '\\' {
			break
		}
		n++
	}
	return n
}

const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// needsAttention has the high bit set in each byte of w that is a control
// character (< 0x20), '"', '\\' or not ASCII (SWAR; may over-report only
// in bytes after the first flagged one).
//
// It is written as one expression, without helper closures, so that it
// is cheap enough to be inlined into the scanning loops.
func needsAttention(w uint64) uint64 {
	q, b := w^(lsb*'"'), w^(lsb*'\\')
	return ((w-lsb*0x20)&^w | (q-lsb)&^q | (b-lsb)&^b | w) & msb
}

func (d *decoder) strSlow(start int) (string, error) {
	b := append(d.scratch[:0], d.data[start:d.pos]...)
	defer func() { d.scratch = b[:0] }()
	for d.pos < len(d.data) {
		c := d.data[d.pos]
		switch {
		case c == '"':
			d.pos++
			return string(b), nil
		case c == '\\':
			if d.pos+1 >= len(d.data) {
				return "", d.fail(CodeSyntax, "unterminated escape")
			}
			e := d.data[d.pos+1]
			d.pos += 2
			switch e {
			case '"', '\\', '/':
				b = append(b, e)
			case 'b':
				b = append(b, '\b')
			case 'f':
				b = append(b, '\f')
			case 'n':
				b = append(b, '\n')
			case 'r':
				b = append(b, '\r')
			case 't':
				b = append(b, '\t')
			case 'u':
				r, ok := d.hex4()
				if !ok {
					return "", d.fail(CodeSyntax, `invalid \u escape`)
				}
				if r >= 0xD800 && r <= 0xDBFF && d.pos+1 < len(d.data) && d.data[d.pos] == '\\' && d.data[d.pos+1] == 'u' {
					save := d.pos
					d.pos += 2
					lo, ok := d.hex4()
					if ok && lo >= 0xDC00 && lo <= 0xDFFF {
						r = 0x10000 + (r-0xD800)<<10 + (lo - 0xDC00)
					} else {
						d.pos = save // the next escape stands on its own
					}
				}
				b = appendWTF8(b, r)
			default:
				d.pos--
				return "", d.fail(CodeSyntax, fmt.Sprintf(`invalid escape "\%c"`, e))
			}
		case c < 0x20:
			return "", d.fail(CodeSyntax, fmt.Sprintf("unescaped control character 0x%02x in string", c))
		case c < utf8.RuneSelf:
			b = append(b, c)
			d.pos++
		default:
			r, size := utf8.DecodeRune(d.data[d.pos:])
			if r == utf8.RuneError && size <= 1 {
				return "", d.fail(CodeInvalidUTF8, "string is not valid UTF-8")
			}
			b = append(b, d.data[d.pos:d.pos+size]...)
			d.pos += size
		}
	}
	return "", d.fail(CodeSyntax, "unterminated string")
}

func (d *decoder) hex4() (rune, bool) {
	if d.pos+4 > len(d.data) {
		return 0, false
	}
	var r rune
	for _, c := range d.data[d.pos : d.pos+4] {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c - 'a' + 10)
		case c >= 'A' && c <= 'F':
			r |= rune(c - 'A' + 10)
		default:
			return 0, false
		}
	}
	d.pos += 4
	return r, true
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func (d *decoder) number() (Value, error) {
	start := d.pos
	neg := false
	if d.data[d.pos] == '-' {
		neg = true
		d.pos++
	}
	intStart := d.pos
	switch {
	case d.pos < len(d.data) && d.data[d.pos] == '0':
		d.pos++
	case d.pos < len(d.data) && d.data[d.pos] >= '1' && d.data[d.pos] <= '9':
		for d.pos < len(d.data) && isDigit(d.data[d.pos]) {
			d.pos++
		}
	default:
		return Value{}, d.unexpected("a digit")
	}
	intEnd := d.pos
	simple := true
	if d.pos < len(d.data) && d.data[d.pos] == '.' {
		simple = false
		d.pos++
		if d.pos >= len(d.data) || !isDigit(d.data[d.pos]) {
			return Value{}, d.unexpected("a digit after the decimal point")
		}
		for d.pos < len(d.data) && isDigit(d.data[d.pos]) {
			d.pos++
		}
	}
	if d.pos < len(d.data) && (d.data[d.pos] == 'e' || d.data[d.pos] == 'E') {
		simple = false
		d.pos++
		if d.pos < len(d.data) && (d.data[d.pos] == '+' || d.data[d.pos] == '-') {
			d.pos++
		}
		if d.pos >= len(d.data) || !isDigit(d.data[d.pos]) {
			return Value{}, d.unexpected("a digit in the exponent")
		}
		for d.pos < len(d.data) && isDigit(d.data[d.pos]) {
			d.pos++
		}
	}
	if simple && intEnd-intStart <= 15 {
		var n int64
		for _, c := range d.data[intStart:intEnd] {
			n = n*10 + int64(c-'0')
		}
		f := float64(n)
		if neg {
			f = -f
		}
		return NumberValue(f), nil
	}
	// Overflow yields ±Inf and underflow yields ±0, as in JSON.parse.
	f, _ := strconv.ParseFloat(d.src[start:d.pos], 64)
	return NumberValue(f), nil
}
