package whatwgurl

import (
	"strconv"
	"strings"
)

// URL is a parsed absolute URL. Its fields hold the WHATWG serializations
// that the JavaScript URL getters of the same names return.
type URL struct {
	Protocol string // url.protocol: the lower-case scheme followed by ":", e.g. "https:"
	Username string // url.username, in its percent-encoded form
	Password string // url.password, in its percent-encoded form
	Hostname string // url.hostname: IPv6 in brackets, domains in IDNA ASCII form; "" when there is no host
	Port     string // url.port: "" when the port is absent or the scheme's default
	Pathname string // url.pathname
	Search   string // url.search: "" or "?" followed by the non-empty query
	Hash     string // url.hash: "" or "#" followed by the non-empty fragment
	Href     string // url.href: the whole serialized URL

	// query is the URL record's query without "?" (meaningful only when
	// Search is not empty, since an empty query has no search parameters).
	query string
}

// Error is returned by Parse for every input on which new URL(input) throws.
type Error struct {
	// Reason is a short description of why the input is not a valid URL.
	Reason string
}

// Error implements the error interface.
func (e *Error) Error() string { return "whatwgurl: invalid URL: " + e.Reason }

func errorf(reason string) *Error { return &Error{Reason: reason} }

// Host returns url.host: the hostname followed by ":" and the port when a
// non-default port is set.
func (u *URL) Host() string {
	if u.Port == "" {
		return u.Hostname
	}
	return u.Hostname + ":" + u.Port
}

// SearchParamNames returns the names of url.searchParams in order: the query
// parsed as application/x-www-form-urlencoded (split on "&", empty pieces
// dropped, the name ending at the first "=", "+" read as a space, then
// percent-decoded and decoded as UTF-8 with U+FFFD for ill-formed bytes).
func (u *URL) SearchParamNames() []string {
	if u.query == "" {
		return []string{}
	}
	names := []string{}
	for _, piece := range strings.Split(u.query, "&") {
		if piece == "" {
			continue
		}
		name := piece
		if i := strings.IndexByte(piece, '='); i >= 0 {
			name = piece[:i]
		}
		b := percentDecode([]byte(strings.ReplaceAll(name, "+", " ")))
		names = append(names, string(decodeUTF8(b, false)))
	}
	return names
}

// Parse parses input as new URL(input) does with no base URL. It returns an
// *Error exactly when JavaScript would throw a TypeError.
func Parse(input string) (*URL, error) {
	rec, err := parse(input)
	if err != nil {
		return nil, err
	}
	return rec.toURL(), nil
}

// record is the URL record of the standard.
type record struct {
	scheme     string
	username   []byte
	password   []byte
	hasHost    bool
	host       string // serialized host
	port       int    // -1 when null
	path       []string
	opaque     bool
	opaquePath []byte
	hasQuery   bool
	query      []byte
	hasFrag    bool
	fragment   []byte
}

func (r *record) pathname() string {
	if r.opaque {
		return string(r.opaquePath)
	}
	var b strings.Builder
	for _, seg := range r.path {
		b.WriteByte('/')
		b.WriteString(seg)
	}
	return b.String()
}

func (r *record) toURL() *URL {
	u := &URL{
		Protocol: r.scheme + ":",
		Username: string(r.username),
		Password: string(r.password),
		Hostname: r.host,
		Pathname: r.pathname(),
	}
	if r.port >= 0 {
		u.Port = strconv.Itoa(r.port)
	}
	if r.hasQuery && len(r.query) > 0 {
		u.query = string(r.query)
		u.Search = "?" + u.query
	}
	if r.hasFrag && len(r.fragment) > 0 {
		u.Hash = "#" + string(r.fragment)
	}

	var b strings.Builder
	b.WriteString(u.Protocol)
	if r.hasHost {
		b.WriteString("//")
		if len(r.username) > 0 || len(r.password) > 0 {
			b.Write(r.username)
			if len(r.password) > 0 {
				b.WriteByte(':')
				b.Write(r.password)
			}
			b.WriteByte('@')
		}
		b.WriteString(r.host)
		if u.Port != "" {
			b.WriteByte(':')
			b.WriteString(u.Port)
		}
	} else if !r.opaque && len(r.path) > 1 && r.path[0] == "" {
		b.WriteString("/.")
	}
	b.WriteString(u.Pathname)
	if r.hasQuery {
		b.WriteByte('?')
		b.Write(r.query)
	}
	if r.hasFrag {
		b.WriteByte('#')
		b.Write(r.fragment)
	}
	u.Href = b.String()
	return u
}
