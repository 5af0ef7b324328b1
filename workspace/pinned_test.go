package workspace_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/workspace"
)

func doc(path string, rev int64, body string) workspace.Document {
	return workspace.Document{Meta: workspace.Meta{Path: path, Revision: rev, Size: int64(len(body)), UpdatedBy: "x"}, Body: []byte(body)}
}

// WST-12: same documents, same bytes, in every order; explicit empty form.
func TestRenderPinnedMemory(t *testing.T) {
	if got := workspace.RenderPinnedMemory(nil); got != "# Pinned memory (0)\n(none)\n" {
		t.Errorf("empty: %q", got)
	}
	docs := []workspace.Document{
		doc("/memories/workspace/b", 3, "line one\nline two\n"),
		doc("/memories/members/m/a", 12, ""),
		doc("/memories/workspace/b", 2, "older"),
		doc("/memories/workspace/a", 1, "\xff\x00"),
	}
	want := "# Pinned memory (4)\n" +
		"## /memories/members/m/a (revision 12)\n|\n" +
		"## /memories/workspace/a (revision 1, base64)\n| /wA=\n" +
		"## /memories/workspace/b (revision 2)\n| older\n" +
		"## /memories/workspace/b (revision 3)\n| line one\n| line two\n|\n"
	permute(docs, func(order []workspace.Document) {
		if diff := cmp.Diff(want, workspace.RenderPinnedMemory(order)); diff != "" {
			t.Fatalf("order %v (-want +got):\n%s", order, diff)
		}
	})
	// Metadata that is not content (time, writer) never shows.
	changed := append([]workspace.Document{}, docs...)
	changed[0].UpdatedBy, changed[0].UpdatedAt = "someone else", changed[0].UpdatedAt.AddDate(1, 0, 0)
	if workspace.RenderPinnedMemory(changed) != want {
		t.Error("writer or time changed the block")
	}
}

// permute calls fn with every ordering of docs.
func permute(docs []workspace.Document, fn func([]workspace.Document)) {
	var rec func(k int)
	a := append([]workspace.Document{}, docs...)
	rec = func(k int) {
		if k == len(a) {
			fn(append([]workspace.Document{}, a...))
			return
		}
		for i := k; i < len(a); i++ {
			a[k], a[i] = a[i], a[k]
			rec(k + 1)
			a[k], a[i] = a[i], a[k]
		}
	}
	rec(0)
}
