package whatwgurl

import "strings"

// IsHTTP reports whether Parse(input) succeeds with the protocol "http:"
// or "https:". The common shape, "http://" or "https://", a plain ASCII
// domain, an optional port and anything after it, is recognized by one
// scan without building the URL; everything else is parsed.
func IsHTTP(input string) bool {
	if quickHTTP(input) {
		return true
	}
	u, err := Parse(input)
	return err == nil && (u.Protocol == "http:" || u.Protocol == "https:")
}

// quickHTTP reports true only for inputs Parse accepts as http: or https:
// URLs; false means "parse to find out", never "invalid". It accepts
//
//	("http://" | "https://") host [":" port] [("/" | "?" | "#") anything]
//
// where host is one or more of A-Z a-z 0-9 "-" "_" ".", has no label
// starting with "xn--" (case-insensitively) and ends, after at most one
// trailing ".", with a label that starts with a letter; port is at most
// five digits of value at most 65535 (or empty). Why each such input is
// valid, step by step through the parser:
//   - it starts with "h", so there is nothing to strip in front, and the
//     lower-case special scheme is followed by "//", so no slash is
//     ignored;
//   - the authority ends at the first "/", "?", "#" (or the end), and
//     holds no "@" or "\", so there is no userinfo and the host and port
//     are as above;
//   - an ASCII domain with no punycode label is only lower-cased, and no
//     byte of the set is a forbidden domain code point;
//   - a last label that starts with a letter is neither all digits nor a
//     0x number, so the host does not end in a number and is no IPv4
//     address;
//   - the port fits 16 bits;
//   - path, query and fragment never fail (tab and newline removal,
//     trailing C0 stripping and U+FFFD replacement change them only).
//
// FuzzQuickHTTP checks the claim against Parse.
func quickHTTP(s string) bool {
	var rest string
	switch {
	case strings.HasPrefix(s, "https://"):
		rest = s[len("https://"):]
	case strings.HasPrefix(s, "http://"):
		rest = s[len("http://"):]
	default:
		return false
	}
	end := 0
	for ; end < len(rest) && isQuickHostByte(rest[end]); end++ {
		if (end == 0 || rest[end-1] == '.') && len(rest)-end >= 4 && strings.EqualFold(rest[end:end+4], "xn--") {
			return false // a punycode label: IDNA decides
		}
	}
	host := strings.TrimSuffix(rest[:end], ".")
	last := host[strings.LastIndexByte(host, '.')+1:]
	if last == "" || !(last[0] >= 'a' && last[0] <= 'z' || last[0] >= 'A' && last[0] <= 'Z') {
		return false
	}
	rest = rest[end:]
	if rest != "" && rest[0] == ':' {
		digits, port := 0, 0
		for digits+1 < len(rest) && rest[digits+1] >= '0' && rest[digits+1] <= '9' {
			port = port*10 + int(rest[digits+1]-'0')
			digits++
			if digits > 5 {
				return false
			}
		}
		if port > 0xFFFF {
			return false
		}
		rest = rest[1+digits:]
	}
	return rest == "" || rest[0] == '/' || rest[0] == '?' || rest[0] == '#'
}

// isQuickHostByte reports whether c is one of the host bytes quickHTTP
// accepts: A-Z a-z 0-9 "-" "_" ".".
func isQuickHostByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.'
}
