package workspace

import (
	"context"
	"encoding/base64"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// RenderPinnedMemory renders the per-turn pinned memory block from docs.
// It is deterministic: the same documents give the same bytes whatever
// their order, because it sorts by path, then revision, and prints
// nothing but paths, revisions and content (no times, no ids, integers in
// plain decimal). Every content line is prefixed with "| " (an empty
// line with "|"), so content can never forge a header; content that is
// not UTF-8 is shown as one base64 line. No documents render the
// explicit empty form "# Pinned memory (0)\n(none)\n".
func RenderPinnedMemory(docs []Document) string {
	sorted := make([]Document, len(docs))
	copy(sorted, docs)
	sort.SliceStable(sorted, func(i, j int) bool {
		if sorted[i].Path != sorted[j].Path {
			return sorted[i].Path < sorted[j].Path
		}
		return sorted[i].Revision < sorted[j].Revision
	})
	var b strings.Builder
	b.WriteString("# Pinned memory (")
	b.WriteString(strconv.Itoa(len(sorted)))
	b.WriteString(")\n")
	if len(sorted) == 0 {
		b.WriteString("(none)\n")
		return b.String()
	}
	for _, d := range sorted {
		b.WriteString("## ")
		b.WriteString(d.Path)
		b.WriteString(" (revision ")
		b.WriteString(strconv.FormatInt(d.Revision, 10))
		if !utf8.Valid(d.Body) {
			b.WriteString(", base64)\n| ")
			b.WriteString(base64.StdEncoding.EncodeToString(d.Body))
			b.WriteString("\n")
			continue
		}
		b.WriteString(")\n")
		for _, line := range strings.Split(string(d.Body), "\n") {
			if line == "" {
				b.WriteString("|\n")
				continue
			}
			b.WriteString("| ")
			b.WriteString(line)
			b.WriteString("\n")
		}
	}
	return b.String()
}

// PinnedMemory loads the memories the trusted active turn on ctx may read
// under pol (nil: DefaultMemoryPolicy(nil)) — its own member memories and
// the workspace memories — and renders them with RenderPinnedMemory.
func PinnedMemory(ctx context.Context, s Store, pol MemoryPolicy) (string, error) {
	turn, err := activeTurn(ctx)
	if err != nil {
		return "", err
	}
	if pol == nil {
		pol = DefaultMemoryPolicy(nil)
	}
	docs, _, err := readableMemories(ctx, s, pol, turn, scopeAll, "", 0)
	if err != nil {
		return "", err
	}
	return RenderPinnedMemory(docs), nil
}
