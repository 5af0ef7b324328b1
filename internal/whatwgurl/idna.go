package whatwgurl

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/net/idna"
	"golang.org/x/text/unicode/bidi"
	"golang.org/x/text/unicode/norm"
)

// This file implements UTS #46 ToASCII as Node.js 20 performs it for the URL
// Standard's "domain to ASCII" (CheckHyphens=false, CheckBidi=true,
// CheckJoiners=true, UseSTD3ASCIIRules=false, Transitional_Processing=false,
// VerifyDnsLength=false).
//
// golang.org/x/net/idna's own ToASCII with those options disagrees with Node
// on several points (it applies the RFC 5893 Bidi rule to every label of a
// Bidi domain name, rejects "xn--" labels that decode to ASCII only, and
// turns an empty "xn--" label into an empty label), so only its UTS #46
// mapping table is used here; label splitting, Punycode, normalization
// checks, the ContextJ check and the Bidi check are done below, matching the
// behaviour Node.js 20 shows.

// mappingProfile applies the UTS #46 mapping step and reports disallowed
// code points, without any other label check. (With ValidateLabels on, the
// disallowed check happens whether x/net/idna follows the Unicode 15 or the
// Unicode 16 form of UTS #46.)
var mappingProfile = idna.New(
	idna.MapForLookup(),
	idna.ValidateLabels(true),
	idna.CheckHyphens(false),
	idna.CheckJoiners(false),
	idna.StrictDomainName(false),
	idna.Transitional(false),
	idna.VerifyDNSLength(false),
)

// mapRune returns the UTS #46 mapping of r (non-transitional, without the
// STD3 rules), or false when r is disallowed or unassigned.
func mapRune(r rune) (string, bool) {
	if r < utf8.RuneSelf {
		return string(asciiLowerRune(r)), true
	}
	if r == utf8.RuneError {
		return "", false // U+FFFD is disallowed
	}
	m, err := mappingProfile.ToUnicode(string(r))
	if err != nil || strings.ContainsRune(m, utf8.RuneError) {
		// x/net/idna maps code points it does not know to U+FFFD without
		// reporting an error; they are disallowed.
		return "", false
	}
	return m, true
}

// uts46ToASCII converts a domain that is not plain lower-case-able ASCII to
// its ASCII form.
func uts46ToASCII(domain string) (string, bool) {
	var b strings.Builder
	for _, r := range domain {
		m, ok := mapRune(r)
		if !ok {
			return "", false
		}
		b.WriteString(m)
	}
	mapped := norm.NFC.String(b.String())
	labels := strings.Split(mapped, ".")
	for i, label := range labels {
		switch {
		case label == "":
		case strings.HasPrefix(label, "xn--"):
			if !isASCIIString(label) {
				return "", false
			}
			decoded, ok := punycodeDecode(label[4:])
			if !ok || len(decoded) == 0 {
				return "", false
			}
			// The decoded label must already be mapped and normalized.
			s := string(decoded)
			for _, r := range decoded {
				if m, ok := mapRune(r); !ok || m != string(r) {
					return "", false
				}
			}
			if !norm.NFC.IsNormalString(s) {
				return "", false
			}
			if !labelValid(decoded) {
				return "", false
			}
		case isASCIIString(label):
		default:
			runes := []rune(label)
			if !labelValid(runes) {
				return "", false
			}
			enc, ok := punycodeEncode(runes)
			if !ok {
				return "", false
			}
			labels[i] = "xn--" + enc
		}
	}
	return strings.Join(labels, "."), true
}

// labelValid applies the label validity criteria as Node.js 20 (Ada 2.9)
// checks them: no leading combining mark; then, if the label contains a
// ZERO WIDTH NON-JOINER or ZERO WIDTH JOINER, the ContextJ rule of RFC 5892
// for the first such code point alone decides (the later ones and the Bidi
// rule are not checked); otherwise the Bidi checks of bidiValid.
func labelValid(label []rune) bool {
	if len(label) == 0 {
		return true
	}
	if isCombiningMark(label[0]) {
		return false
	}
	for i, r := range label {
		if r == 0x200C || r == 0x200D {
			return contextJ(label, i)
		}
	}
	return bidiValid(label)
}

// contextJ reports whether the joiner label[i] is accepted. The check is
// the one Node.js 20 (Ada 2.9) performs, looser than RFC 5892 Appendix A:
// a joiner directly after a virama is accepted; otherwise a ZERO WIDTH
// JOINER is rejected, and a ZERO WIDTH NON-JOINER is accepted when some
// code point before it has Joining_Type L or D and some code point after it
// has Joining_Type R or D (what lies between is not looked at). Viramas and
// joining types are those of the generated tables (see maketables.go).
func contextJ(label []rune, i int) bool {
	if i > 0 {
		if _, virama := lookupRange(viramas, label[i-1]); virama {
			return true
		}
	}
	if label[i] == 0x200D {
		return false
	}
	before, after := false, false
	for _, r := range label[:i] {
		if jt := joiningType(r); jt == jtL || jt == jtD {
			before = true
			break
		}
	}
	for _, r := range label[i+1:] {
		if jt := joiningType(r); jt == jtR || jt == jtD {
			after = true
			break
		}
	}
	return before && after
}

// joiningType values; jtU stands for every other type (U, C and T).
const (
	jtU = iota
	jtL
	jtD
	jtR
)

// runeRange maps the code points lo to hi (inclusive) to val.
type runeRange struct {
	lo, hi rune
	val    uint8
}

//go:generate go run maketables.go

// lookupRange finds r in the sorted table; ok is false when r is in none of
// its ranges.
func lookupRange(table []runeRange, r rune) (val uint8, ok bool) {
	lo, hi := 0, len(table)
	for lo < hi {
		m := (lo + hi) / 2
		switch e := table[m]; {
		case r < e.lo:
			hi = m
		case r > e.hi:
			lo = m + 1
		default:
			return e.val, true
		}
	}
	return 0, false
}

// joiningType returns the Joining_Type of r from joiningTypeTable.
func joiningType(r rune) uint8 {
	jt, _ := lookupRange(joiningTypeTable, r)
	return jt
}

// isCombiningMark reports whether r is a combining mark as Node.js 20 (Ada
// 2.9) sees it: General_Category M in Unicode 13.0, so marks added later
// are not counted.
func isCombiningMark(r rune) bool {
	_, ok := lookupRange(earlyMarks, r)
	return ok
}

// classUnknown is the Bidi class Node.js 20 gives to code points its Bidi
// data does not list: it belongs to none of the sets the checks allow.
const classUnknown bidi.Class = 1 << 16

// bidiClass returns the Bidi_Class of r as Node.js 20 (Ada 2.9) sees it,
// which is that of Unicode 13.0: code points assigned later have no class
// (classUnknown), and U+1734 HANUNOO SIGN PAMUDPOD is still NSM.
func bidiClass(r rune) bidi.Class {
	if r == 0x1734 {
		return bidi.NSM
	}
	if _, late := lookupRange(lateCodePoints, r); late {
		return classUnknown
	}
	p, _ := bidi.LookupRune(r)
	return p.Class()
}

// bidiValid applies the Bidi checks that Node.js 20 (Ada 2.9) performs, a
// relaxed form of RFC 5893 section 2 applied only to labels that contain a
// character of Bidi class R, AL or AN:
//   - a label starting with an L character may contain only L, EN, ES, CS,
//     ET, ON, BN and NSM characters before its last non-NSM character (the
//     last one is not checked);
//   - any other such label may contain only R, AL, AN, EN, ES, CS, ET, ON,
//     BN and NSM characters, must end with R, AL, EN or AN followed by any
//     number of NSM, and must not contain both EN and AN.
func bidiValid(label []rune) bool {
	classes := make([]bidi.Class, len(label))
	rtl := false
	for i, r := range label {
		classes[i] = bidiClass(r)
		switch classes[i] {
		case bidi.R, bidi.AL, bidi.AN:
			rtl = true
		}
	}
	if !rtl {
		return true
	}
	last := len(classes) - 1
	for last >= 0 && classes[last] == bidi.NSM {
		last--
	}
	if last < 0 {
		return false
	}
	if classes[0] == bidi.L {
		for _, c := range classes[:last] {
			switch c {
			case bidi.L, bidi.EN, bidi.ES, bidi.CS, bidi.ET, bidi.ON, bidi.BN, bidi.NSM:
			default:
				return false
			}
		}
		return true
	}
	hasEN, hasAN := false, false
	for _, c := range classes {
		switch c {
		case bidi.R, bidi.AL, bidi.ES, bidi.CS, bidi.ET, bidi.ON, bidi.BN, bidi.NSM:
		case bidi.EN:
			hasEN = true
		case bidi.AN:
			hasAN = true
		default:
			return false
		}
	}
	if hasEN && hasAN {
		return false
	}
	switch classes[last] {
	case bidi.R, bidi.AL, bidi.EN, bidi.AN:
		return true
	}
	return false
}

// Punycode (RFC 3492) parameters.
const (
	punyBase        = 36
	punyTMin        = 1
	punyTMax        = 26
	punySkew        = 38
	punyDamp        = 700
	punyInitialBias = 72
	punyInitialN    = 128
	punyMaxInt      = 0x7FFFFFFF
)

func punyAdapt(delta, numPoints int, first bool) int {
	if first {
		delta /= punyDamp
	} else {
		delta /= 2
	}
	delta += delta / numPoints
	k := 0
	for delta > ((punyBase-punyTMin)*punyTMax)/2 {
		delta /= punyBase - punyTMin
		k += punyBase
	}
	return k + (punyBase-punyTMin+1)*delta/(delta+punySkew)
}

func punyThreshold(k, bias int) int {
	switch {
	case k <= bias:
		return punyTMin
	case k >= bias+punyTMax:
		return punyTMax
	}
	return k - bias
}

func punyDigit(c byte) int {
	switch {
	case 'a' <= c && c <= 'z':
		return int(c - 'a')
	case 'A' <= c && c <= 'Z':
		return int(c - 'A')
	case '0' <= c && c <= '9':
		return int(c-'0') + 26
	}
	return -1
}

// punycodeDecode decodes the part of an A-label after "xn--".
func punycodeDecode(s string) ([]rune, bool) {
	var out []rune
	if d := strings.LastIndexByte(s, '-'); d >= 0 {
		for i := 0; i < d; i++ {
			if s[i] >= utf8.RuneSelf {
				return nil, false
			}
			out = append(out, rune(s[i]))
		}
		s = s[d+1:]
	}
	n, i, bias := punyInitialN, 0, punyInitialBias
	for p := 0; p < len(s); {
		oldi, w := i, 1
		for k := punyBase; ; k += punyBase {
			if p >= len(s) {
				return nil, false
			}
			digit := punyDigit(s[p])
			p++
			if digit < 0 || digit > (punyMaxInt-i)/w {
				return nil, false
			}
			i += digit * w
			t := punyThreshold(k, bias)
			if digit < t {
				break
			}
			if w > punyMaxInt/(punyBase-t) {
				return nil, false
			}
			w *= punyBase - t
		}
		count := len(out) + 1
		bias = punyAdapt(i-oldi, count, oldi == 0)
		if i/count > punyMaxInt-n {
			return nil, false
		}
		n += i / count
		i %= count
		if n < punyInitialN || n > unicode.MaxRune || 0xD800 <= n && n <= 0xDFFF {
			return nil, false
		}
		out = append(out, 0)
		copy(out[i+1:], out[i:])
		out[i] = rune(n)
		i++
	}
	return out, true
}

// punycodeEncode encodes a label as Punycode (without the "xn--" prefix).
func punycodeEncode(label []rune) (string, bool) {
	var b []byte
	for _, r := range label {
		if r < utf8.RuneSelf {
			b = append(b, byte(r))
		}
	}
	basic := len(b)
	h := basic
	if basic > 0 {
		b = append(b, '-')
	}
	n, delta, bias := punyInitialN, 0, punyInitialBias
	for h < len(label) {
		m := punyMaxInt
		for _, r := range label {
			if int(r) >= n && int(r) < m {
				m = int(r)
			}
		}
		if m-n > (punyMaxInt-delta)/(h+1) {
			return "", false
		}
		delta += (m - n) * (h + 1)
		n = m
		for _, r := range label {
			if int(r) < n {
				delta++
				if delta > punyMaxInt {
					return "", false
				}
			}
			if int(r) == n {
				q := delta
				for k := punyBase; ; k += punyBase {
					t := punyThreshold(k, bias)
					if q < t {
						break
					}
					b = append(b, punyEncodeDigit(t+(q-t)%(punyBase-t)))
					q = (q - t) / (punyBase - t)
				}
				b = append(b, punyEncodeDigit(q))
				bias = punyAdapt(delta, h+1, h == basic)
				delta = 0
				h++
			}
		}
		delta++
		n++
	}
	return string(b), true
}

func punyEncodeDigit(d int) byte {
	if d < 26 {
		return byte('a' + d)
	}
	return byte('0' + d - 26)
}
