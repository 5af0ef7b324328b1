package whatwgurl

// eof stands for the standard's EOF code point.
const eof rune = -1

type state int

const (
	stSchemeStart state = iota
	stScheme
	stNoScheme
	stSpecialAuthoritySlashes
	stSpecialAuthorityIgnoreSlashes
	stPathOrAuthority
	stAuthority
	stHost
	stPort
	stFile
	stFileSlash
	stFileHost
	stPathStart
	stPath
	stOpaquePath
	stQuery
	stFragment
)

// specialSchemes maps each special scheme to its default port (-1: none).
var specialSchemes = map[string]int{
	"ftp":   21,
	"file":  -1,
	"http":  80,
	"https": 443,
	"ws":    80,
	"wss":   443,
}

func isASCIIAlpha(r rune) bool { return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' }
func isDigit(r rune) bool      { return '0' <= r && r <= '9' }

func asciiLowerRune(r rune) rune {
	if 'A' <= r && r <= 'Z' {
		return r + 'a' - 'A'
	}
	return r
}

// preprocess converts input to code points (USVString semantics), strips
// leading and trailing C0 controls and spaces, and removes tab and newline.
func preprocess(input string) []rune {
	in := decodeUTF8([]byte(input), true)
	start, end := 0, len(in)
	for start < end && in[start] <= 0x20 {
		start++
	}
	for end > start && in[end-1] <= 0x20 {
		end--
	}
	out := make([]rune, 0, end-start)
	for _, r := range in[start:end] {
		if r == '\t' || r == '\n' || r == '\r' {
			continue
		}
		out = append(out, r)
	}
	return out
}

// isWindowsDriveLetter reports whether s is an ASCII letter followed by ":"
// or "|".
func isWindowsDriveLetter(s []rune) bool {
	return len(s) == 2 && isASCIIAlpha(s[0]) && (s[1] == ':' || s[1] == '|')
}

// startsWithWindowsDriveLetter reports whether s, which holds no "?" or
// "#", starts with a Windows drive letter.
func startsWithWindowsDriveLetter(s []rune) bool {
	return len(s) >= 2 && isWindowsDriveLetter(s[:2]) && (len(s) == 2 || s[2] == '/' || s[2] == '\\')
}

func isSingleDot(s []rune) bool {
	switch len(s) {
	case 1:
		return s[0] == '.'
	case 3:
		return s[0] == '%' && s[1] == '2' && (s[2] == 'e' || s[2] == 'E')
	}
	return false
}

func isDoubleDot(s []rune) bool {
	switch len(s) {
	case 2:
		return s[0] == '.' && s[1] == '.'
	case 4:
		return isSingleDot(s[:1]) && isSingleDot(s[1:]) || isSingleDot(s[:3]) && isSingleDot(s[3:])
	case 6:
		return isSingleDot(s[:3]) && isSingleDot(s[3:])
	}
	return false
}

// parse runs the basic URL parser with no base URL and no state override.
func parse(input string) (*record, error) {
	in := preprocess(input)
	u := &record{port: -1}
	special := false
	st := stSchemeStart
	var buf []rune
	atSignSeen, insideBrackets, passwordTokenSeen := false, false, false
	pathStarted := false

	for p := 0; ; p++ {
		c := eof
		if p >= 0 && p < len(in) {
			c = in[p]
		}
		switch st {
		case stSchemeStart:
			if isASCIIAlpha(c) {
				buf = append(buf, asciiLowerRune(c))
				st = stScheme
			} else {
				st = stNoScheme
				p--
			}

		case stScheme:
			switch {
			case isASCIIAlpha(c) || isDigit(c) || c == '+' || c == '-' || c == '.':
				buf = append(buf, asciiLowerRune(c))
			case c == ':':
				u.scheme = string(buf)
				buf = buf[:0]
				_, special = specialSchemes[u.scheme]
				switch {
				case u.scheme == "file":
					st = stFile
				case special:
					st = stSpecialAuthoritySlashes
				case p+1 < len(in) && in[p+1] == '/':
					st = stPathOrAuthority
					p++
				default:
					u.opaque = true
					st = stOpaquePath
				}
			default:
				buf = buf[:0]
				st = stNoScheme
				p = -1
			}

		case stNoScheme:
			// Without a base URL every input that does not start with a
			// scheme is a failure.
			return nil, errorf("missing scheme")

		case stSpecialAuthoritySlashes:
			st = stSpecialAuthorityIgnoreSlashes
			if c == '/' && p+1 < len(in) && in[p+1] == '/' {
				p++
			} else {
				p--
			}

		case stSpecialAuthorityIgnoreSlashes:
			if c != '/' && c != '\\' {
				st = stAuthority
				p--
			}

		case stPathOrAuthority:
			if c == '/' {
				st = stAuthority
			} else {
				st = stPath
				p--
			}

		case stAuthority:
			switch {
			case c == '@':
				if atSignSeen {
					buf = append([]rune("%40"), buf...)
				}
				atSignSeen = true
				for _, cp := range buf {
					if cp == ':' && !passwordTokenSeen {
						passwordTokenSeen = true
						continue
					}
					if passwordTokenSeen {
						u.password = appendEncoded(u.password, cp, userinfoSet)
					} else {
						u.username = appendEncoded(u.username, cp, userinfoSet)
					}
				}
				buf = buf[:0]
			case c == eof || c == '/' || c == '?' || c == '#' || special && c == '\\':
				if atSignSeen && len(buf) == 0 {
					return nil, errorf("credentials without host")
				}
				p -= len(buf) + 1
				buf = buf[:0]
				st = stHost
			default:
				buf = append(buf, c)
			}

		case stHost:
			switch {
			case c == ':' && !insideBrackets:
				if len(buf) == 0 {
					return nil, errorf("missing host")
				}
				h, err := parseHost(buf, !special)
				if err != nil {
					return nil, err
				}
				u.hasHost, u.host = true, h
				buf = buf[:0]
				st = stPort
			case c == eof || c == '/' || c == '?' || c == '#' || special && c == '\\':
				p--
				if special && len(buf) == 0 {
					return nil, errorf("missing host")
				}
				h, err := parseHost(buf, !special)
				if err != nil {
					return nil, err
				}
				u.hasHost, u.host = true, h
				buf = buf[:0]
				st = stPathStart
			default:
				if c == '[' {
					insideBrackets = true
				} else if c == ']' {
					insideBrackets = false
				}
				buf = append(buf, c)
			}

		case stPort:
			switch {
			case isDigit(c):
				buf = append(buf, c)
			case c == eof || c == '/' || c == '?' || c == '#' || special && c == '\\':
				if len(buf) > 0 {
					port := 0
					for _, d := range buf {
						port = port*10 + int(d-'0')
						if port > 0xFFFF {
							return nil, errorf("port out of range")
						}
					}
					if def, ok := specialSchemes[u.scheme]; ok && def == port {
						port = -1
					}
					u.port = port
					buf = buf[:0]
				}
				st = stPathStart
				p--
			default:
				return nil, errorf("invalid port")
			}

		case stFile:
			u.scheme = "file"
			u.hasHost, u.host = true, ""
			if c == '/' || c == '\\' {
				st = stFileSlash
			} else {
				st = stPath
				p--
			}

		case stFileSlash:
			if c == '/' || c == '\\' {
				st = stFileHost
			} else {
				st = stPath
				p--
			}

		case stFileHost:
			switch c {
			case eof, '/', '\\', '?', '#':
				p--
				switch {
				case isWindowsDriveLetter(buf):
					// The buffer is kept and becomes the first path segment.
					st = stPath
				case len(buf) == 0:
					u.hasHost, u.host = true, ""
					st = stPathStart
				default:
					h, err := parseHost(buf, false)
					if err != nil {
						return nil, err
					}
					if h == "localhost" {
						h = ""
					}
					u.hasHost, u.host = true, h
					buf = buf[:0]
					st = stPathStart
				}
			default:
				buf = append(buf, c)
			}

		case stPathStart:
			switch {
			case special:
				st = stPath
				if c != '/' && c != '\\' {
					p--
				}
			case c == '?':
				u.hasQuery = true
				st = stQuery
			case c == '#':
				u.hasFrag = true
				st = stFragment
			case c != eof:
				st = stPath
				if c != '/' {
					p--
				}
			}

		case stPath:
			if !pathStarted {
				pathStarted = true
				if len(buf) == 0 {
					if end, ok := u.verbatimPath(in, p); ok {
						p = end
						if p < len(in) && in[p] == '?' {
							u.hasQuery = true
							st = stQuery
						} else if p < len(in) && in[p] == '#' {
							u.hasFrag = true
							st = stFragment
						}
						break
					}
				}
			}
			slash := c == '/' || special && c == '\\'
			if c == eof || slash || c == '?' || c == '#' {
				switch {
				case isDoubleDot(buf):
					// Node.js 20 (Ada 2.9) appends no empty segment when a
					// final ".." of a non-special URL finds the path empty.
					wasEmpty := len(u.path) == 0
					u.shortenPath()
					if !slash && (special || !wasEmpty) {
						u.path = append(u.path, "")
					}
				case isSingleDot(buf):
					if !slash {
						u.path = append(u.path, "")
					}
				default:
					if u.scheme == "file" && len(u.path) == 0 && isWindowsDriveLetter(buf) {
						buf[1] = ':'
					}
					u.path = append(u.path, string(buf))
				}
				buf = buf[:0]
				if c == '?' {
					u.hasQuery = true
					st = stQuery
				} else if c == '#' {
					u.hasFrag = true
					st = stFragment
				}
			} else {
				for _, b := range appendEncoded(nil, c, pathSet) {
					buf = append(buf, rune(b))
				}
			}

		case stOpaquePath:
			switch c {
			case '?':
				u.hasQuery = true
				st = stQuery
			case '#':
				u.hasFrag = true
				st = stFragment
			case eof:
			default:
				u.opaquePath = appendEncoded(u.opaquePath, c, c0ControlSet)
			}

		case stQuery:
			if c == '#' || c == eof {
				set := querySet
				if special {
					set = specialQuerySet
				}
				for _, r := range buf {
					u.query = appendEncoded(u.query, r, set)
				}
				buf = buf[:0]
				if c == '#' {
					u.hasFrag = true
					st = stFragment
				}
			} else {
				buf = append(buf, c)
			}

		case stFragment:
			if c != eof {
				u.fragment = appendEncoded(u.fragment, c, fragmentSet)
			}
		}
		if p >= len(in) {
			break
		}
	}
	return u, nil
}

// verbatimPath reproduces a shortcut of Node.js 20 (Ada 2.9): a path whose
// code points (up to "?" or "#") are all left alone by percent-encoding, that
// has a "." but no "%" or "\\", that does not start with "." (nor, for file
// URLs, with a Windows drive letter), and whose first "/." is followed by
// neither ".", "/" nor the end of the path, is taken over as it is, without
// removing the dot segments it may still contain ("/x/.:/.." stays as it is).
// start is the index of the path's first code point after the slash the path
// start state consumed. verbatimPath reports whether it applied, and returns
// the index of the code point that ends the path.
func (u *record) verbatimPath(in []rune, start int) (int, bool) {
	end := start
	for end < len(in) && in[end] != '?' && in[end] != '#' {
		end++
	}
	rest := in[start:end]
	hasDot := false
	for _, r := range rest {
		if r == '.' {
			hasDot = true
		} else if r >= 0x80 || r == '%' || r == '\\' || pathSet[r] {
			return 0, false
		}
	}
	if !hasDot || rest[0] == '.' || u.scheme == "file" && startsWithWindowsDriveLetter(rest) {
		return 0, false
	}
	for i := 0; i+1 < len(rest); i++ {
		if rest[i] == '/' && rest[i+1] == '.' {
			if i+2 == len(rest) || rest[i+2] == '.' || rest[i+2] == '/' {
				return 0, false
			}
			break
		}
	}
	seg := 0
	for i := 0; i <= len(rest); i++ {
		if i == len(rest) || rest[i] == '/' {
			u.path = append(u.path, string(rest[seg:i]))
			seg = i + 1
		}
	}
	return end, true
}

// shortenPath is the standard's "shorten a URL's path", except that, as in
// Node.js 20 (Ada 2.9), a file URL's only segment is kept whenever it starts
// with an ASCII letter and ":" ("C:", but also "C:x").
func (u *record) shortenPath() {
	if u.scheme == "file" && len(u.path) == 1 && len(u.path[0]) >= 2 && isASCIIAlpha(rune(u.path[0][0])) && u.path[0][1] == ':' {
		return
	}
	if len(u.path) > 0 {
		u.path = u.path[:len(u.path)-1]
	}
}
