package wsarchive

import (
	"strings"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/profile"
)

// checkPath reports why p is not a workspace path, or "" when it is one.
// The rule is the union of the manifest's path rule P(false) (candidate
// §1: relative, "/"-separated, well-formed, no control character, no
// empty, ".", "..", ".git" or ".sidecar" segment) and the reference
// archive reader's: at most maxBytes UTF-8 bytes and a first segment that
// is not ".git" or ".sidecar" in any ASCII case.
func checkPath(p string, maxBytes int) string {
	if len(p) > maxBytes {
		return "path exceeds the path limit"
	}
	if !profile.IsSafeRelativePath(p, false) {
		return "path is not a safe relative path"
	}
	first, _, _ := strings.Cut(p, "/")
	// JavaScript's toLowerCase maps no non-ASCII character to one of these
	// letters except U+0130, which becomes two code points, so an ASCII
	// fold decides exactly as the reference does.
	if f := asciiLower(first); f == ".git" || f == ".sidecar" {
		return "path begins with a protected directory"
	}
	return ""
}

func asciiLower(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'A' && r <= 'Z' {
			return r + ('a' - 'A')
		}
		return r
	}, s)
}

// pathOrder checks that paths arrive strictly ascending in UTF-16
// code-unit order and that no path is a directory of an earlier one ("a"
// then "a/b"). Sorted order puts such a pair in that order, though not
// always next to each other ("a", "a-b", "a/b").
type pathOrder struct {
	prev string
	any  bool
	seen map[string]struct{}
}

func (o *pathOrder) add(p string) bool {
	if o.any && canonjson.CompareUTF16(o.prev, p) >= 0 {
		return false
	}
	for i := 0; i < len(p); i++ {
		if p[i] == '/' {
			if _, ok := o.seen[p[:i]]; ok {
				return false
			}
		}
	}
	if o.seen == nil {
		o.seen = make(map[string]struct{})
	}
	o.seen[p] = struct{}{}
	o.prev, o.any = p, true
	return true
}
