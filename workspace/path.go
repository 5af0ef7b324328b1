package workspace

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/agentrt/agentrt/canonjson"
)

// Limits every adapter enforces (through the Check functions).
const (
	// MaxPathBytes bounds a path's length in bytes.
	MaxPathBytes = 1024
	// MaxSegmentBytes bounds one path segment's length in bytes.
	MaxSegmentBytes = 255
	// MaxBodyBytes bounds a document's content.
	MaxBodyBytes = 8 << 20
	// MaxNameBytes bounds a tenant id and a writer's name.
	MaxNameBytes = 256
	// MaxQueryBytes bounds a search's text.
	MaxQueryBytes = 4096
	// MaxQueryTerms bounds the number of terms in a search's text.
	MaxQueryTerms = 32
)

// The roots a path may start with.
const (
	RootMemories  = "/memories"
	RootKnowledge = "/knowledge"
	RootFiles     = "/files"
)

// PathError reports a refused path or prefix. It matches ErrInvalid.
type PathError struct {
	Path   string
	Reason string
}

// Error says which path was refused and why.
func (e *PathError) Error() string {
	return fmt.Sprintf("workspace: invalid path %q: %s", e.Path, e.Reason)
}

// Unwrap returns ErrInvalid.
func (e *PathError) Unwrap() error { return ErrInvalid }

// ValidatePath checks a document path. It accepts exactly
// /memories/workspace/<id>, /memories/members/<memberId>/<id>,
// /knowledge/<one or more segments> and /files/<one or more segments>,
// where every segment is non-empty, is not "." or "..", holds no "/",
// "\", control character (C0, DEL, C1) or leading or trailing white
// space, is well-formed UTF-8 and at most MaxSegmentBytes long. Paths are
// compared byte for byte and never normalized: a path that would need
// normalizing is refused.
func ValidatePath(p string) error {
	segs, err := splitPath(p)
	if err != nil {
		return err
	}
	if len(segs) == 0 {
		return &PathError{p, "a document path names a document below a root, not the root of everything"}
	}
	switch segs[0] {
	case "memories":
		switch {
		case len(segs) >= 2 && segs[1] == "workspace":
			if len(segs) != 3 {
				return &PathError{p, "a workspace memory is /memories/workspace/<id>"}
			}
		case len(segs) >= 2 && segs[1] == "members":
			if len(segs) != 4 {
				return &PathError{p, "a member memory is /memories/members/<memberId>/<id>"}
			}
		default:
			return &PathError{p, "memories live under /memories/workspace/ or /memories/members/"}
		}
	case "knowledge", "files":
		if len(segs) < 2 {
			return &PathError{p, "a document path names a document below /" + segs[0] + "/"}
		}
	default:
		return &PathError{p, "unknown root; paths start with /memories/, /knowledge/ or /files/"}
	}
	return nil
}

// ValidatePrefix checks a listing or search prefix and returns its
// normalized form: "" and "/" mean everything; one trailing "/" is
// dropped. A prefix is valid when it is a whole-segment ancestor of (or
// equal to) some valid path, such as /memories/members/alice or /files/notes.
// A prefix selects the path equal to it and the paths below it, never
// /files/notes2 for /files/notes.
func ValidatePrefix(prefix string) (string, error) {
	if prefix == "" || prefix == "/" {
		return "/", nil
	}
	p := strings.TrimSuffix(prefix, "/")
	segs, err := splitPath(p)
	if err != nil {
		return "", &PathError{prefix, err.(*PathError).Reason}
	}
	if len(segs) == 0 {
		return "", &PathError{prefix, "empty segment (// or a trailing /)"}
	}
	switch segs[0] {
	case "memories":
		if len(segs) >= 2 {
			switch {
			case segs[1] == "workspace" && len(segs) <= 3, segs[1] == "members" && len(segs) <= 4:
			default:
				return "", &PathError{prefix, "memories live under /memories/workspace/ or /memories/members/"}
			}
		}
	case "knowledge", "files":
	default:
		return "", &PathError{prefix, "unknown root; prefixes start with /memories, /knowledge or /files"}
	}
	return p, nil
}

// InPrefix reports whether path is selected by a normalized prefix (the
// result of ValidatePrefix): "/" selects everything, otherwise the path
// must equal the prefix or continue it with "/".
func InPrefix(prefix, path string) bool {
	if prefix == "/" {
		return true
	}
	return path == prefix || strings.HasPrefix(path, prefix) && path[len(prefix)] == '/'
}

// splitPath checks the spelling of an absolute path and returns its
// segments ("/" alone has none).
func splitPath(p string) ([]string, error) {
	if p == "" || p[0] != '/' {
		return nil, &PathError{p, "a path starts with /"}
	}
	if len(p) > MaxPathBytes {
		return nil, &PathError{p, fmt.Sprintf("longer than %d bytes", MaxPathBytes)}
	}
	if !canonjson.IsWellFormed(p) {
		return nil, &PathError{p, "not well-formed UTF-8"}
	}
	if p == "/" {
		return nil, nil
	}
	segs := strings.Split(p[1:], "/")
	for _, s := range segs {
		if reason := segmentProblem(s); reason != "" {
			return nil, &PathError{p, reason}
		}
	}
	return segs, nil
}

// segmentProblem says what is wrong with one path segment, or "".
func segmentProblem(s string) string {
	switch {
	case s == "":
		return "empty segment (// or a trailing /)"
	case s == "." || s == "..":
		return "segment " + s + " (no relative segments)"
	case len(s) > MaxSegmentBytes:
		return fmt.Sprintf("a segment is longer than %d bytes", MaxSegmentBytes)
	case canonjson.TrimJS(s) != s:
		return "a segment starts or ends with white space"
	}
	for _, r := range s {
		if r < 0x20 || r >= 0x7f && r <= 0x9f {
			return "control character"
		}
		if r == '\\' {
			return "backslash"
		}
	}
	return ""
}

// ValidateSegment checks one path segment, such as a memory id or a
// member id, by the rules of ValidatePath.
func ValidateSegment(s string) error {
	if reason := segmentProblem(s); reason != "" {
		return &PathError{s, reason}
	}
	if !utf8.ValidString(s) || !canonjson.IsWellFormed(s) {
		return &PathError{s, "not well-formed UTF-8"}
	}
	if strings.Contains(s, "/") {
		return &PathError{s, "a segment holds no /"}
	}
	return nil
}

// ValidateTenant checks a tenant id: non-empty, at most MaxNameBytes,
// well-formed UTF-8, no control characters, no leading or trailing white
// space. Tenant ids are otherwise opaque.
func ValidateTenant(tenant string) error { return checkName("tenant", tenant) }

// ValidateWriter checks a writer's name (the by argument of Put and
// Delete) by the rules of ValidateTenant.
func ValidateWriter(by string) error { return checkName("writer", by) }

func checkName(what, s string) error {
	switch {
	case s == "":
		return fmt.Errorf("%w: empty %s", ErrInvalid, what)
	case len(s) > MaxNameBytes:
		return fmt.Errorf("%w: %s longer than %d bytes", ErrInvalid, what, MaxNameBytes)
	case !canonjson.IsWellFormed(s):
		return fmt.Errorf("%w: %s is not well-formed UTF-8", ErrInvalid, what)
	case canonjson.HasControl(s):
		return fmt.Errorf("%w: %s holds a control character", ErrInvalid, what)
	case canonjson.TrimJS(s) != s:
		return fmt.Errorf("%w: %s starts or ends with white space", ErrInvalid, what)
	}
	return nil
}

// CheckPut validates a Put before any storage is touched.
func CheckPut(tenant, path string, body []byte, exp Expect, by string) error {
	if err := ValidateTenant(tenant); err != nil {
		return err
	}
	if err := ValidatePath(path); err != nil {
		return err
	}
	if err := ValidateWriter(by); err != nil {
		return err
	}
	if !exp.Valid() {
		return fmt.Errorf("%w: a write needs a precondition (ExpectAbsent or ExpectRevision(r ≥ 1)), got %s", ErrInvalid, exp)
	}
	if len(body) > MaxBodyBytes {
		return fmt.Errorf("%w: content of %d bytes exceeds %d", ErrInvalid, len(body), MaxBodyBytes)
	}
	return nil
}

// CheckDelete validates a Delete: its precondition must name a revision.
func CheckDelete(tenant, path string, exp Expect, by string) error {
	if err := ValidateTenant(tenant); err != nil {
		return err
	}
	if err := ValidatePath(path); err != nil {
		return err
	}
	if err := ValidateWriter(by); err != nil {
		return err
	}
	if r, ok := exp.Revision(); !ok || r < 1 {
		return fmt.Errorf("%w: a delete needs ExpectRevision(r ≥ 1), got %s", ErrInvalid, exp)
	}
	return nil
}

// CheckQuery validates a search and returns it with its prefix
// normalized.
func CheckQuery(q Query) (Query, error) {
	p, err := ValidatePrefix(q.Prefix)
	if err != nil {
		return Query{}, err
	}
	q.Prefix = p
	switch n := len(strings.Fields(q.Text)); {
	case len(q.Text) > MaxQueryBytes:
		return Query{}, fmt.Errorf("%w: search text longer than %d bytes", ErrInvalid, MaxQueryBytes)
	case !canonjson.IsWellFormed(q.Text):
		return Query{}, fmt.Errorf("%w: search text is not well-formed UTF-8", ErrInvalid)
	case n == 0:
		return Query{}, fmt.Errorf("%w: search text has no terms", ErrInvalid)
	case n > MaxQueryTerms:
		return Query{}, fmt.Errorf("%w: search text has more than %d terms", ErrInvalid, MaxQueryTerms)
	case q.Limit < 0:
		return Query{}, fmt.Errorf("%w: negative search limit", ErrInvalid)
	}
	return q, nil
}

// Match reports whether a document matches a checked query: every term
// of q.Text occurs in the path or in the content, compared after case
// folding (Unicode lower case for UTF-8 text, ASCII lower case for other
// bytes). It ignores q.Prefix and q.Limit. Every adapter decides matches
// with this function, so all agree.
func Match(q Query, path string, body []byte) bool {
	hay := fold(path) + "\n" + fold(string(body))
	for _, term := range strings.Fields(q.Text) {
		if !strings.Contains(hay, fold(term)) {
			return false
		}
	}
	return true
}

func fold(s string) string {
	if utf8.ValidString(s) {
		return strings.ToLower(s)
	}
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}
