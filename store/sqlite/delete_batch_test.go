package sqlite_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/sqlite"
)

// DeleteIdempotency deletes all its names in one statement: a call of
// up to MaxIdempotencyBatch names, with names given twice and names of
// no record, deletes exactly the named records and counts each once; the
// others stay.
func TestDeleteIdempotencyAtOnce(t *testing.T) {
	ctx := context.Background()
	s, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "agentrt.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	digest := "sha256:" + strings.Repeat("0", 64)
	for i := range 700 {
		for _, scope := range []string{"a", "b"} {
			if _, _, err := s.ClaimIdempotency(ctx, store.Idempotency{Scope: scope, Key: fmt.Sprintf("k%d", i), RequestDigest: digest}); err != nil {
				t.Fatal(err)
			}
		}
	}
	var names []store.IdempotencyKey
	for i := range 600 {
		names = append(names, store.IdempotencyKey{Scope: "a", Key: fmt.Sprintf("k%d", i)})
	}
	names = append(names, names[:300]...) // given twice
	for i := range 100 {
		names = append(names, store.IdempotencyKey{Scope: "c", Key: fmt.Sprintf("k%d", i)}) // no record
	}
	if len(names) > store.MaxIdempotencyBatch {
		t.Fatalf("the test names %d, more than one call takes", len(names))
	}
	n, err := s.DeleteIdempotency(ctx, names)
	if err != nil || n != 600 {
		t.Fatalf("DeleteIdempotency = %d, %v; want 600 deleted", n, err)
	}
	for _, tc := range []struct {
		scope string
		want  int64
	}{{"a", 100}, {"b", 700}} {
		got, err := s.CountIdempotency(ctx, store.IdempotencyQuery{Scope: tc.scope})
		if err != nil || got != tc.want {
			t.Fatalf("scope %s holds %d (%v), want %d", tc.scope, got, err, tc.want)
		}
	}
	left, err := s.ListIdempotency(ctx, store.IdempotencyQuery{Scope: "a", Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range left {
		var i int
		if _, err := fmt.Sscanf(r.Key, "k%d", &i); err != nil || i < 600 {
			t.Fatalf("record a/%s was left, but it was named", r.Key)
		}
	}
}

// Names travel to SQLite as JSON text: keys that JSON escapes (quotes,
// backslashes, control characters, HTML-significant runes, U+2028,
// astral runes, text that is itself JSON) name their records exactly,
// and a key that only looks like another's escape names no other.
func TestDeleteIdempotencyEscapedKeys(t *testing.T) {
	ctx := context.Background()
	s, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "agentrt.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	digest := "sha256:" + strings.Repeat("0", 64)
	keys := []string{`a"b`, `a\\b`, "tab\there", "<&>", "line\u2028sep", "\U0001F600", `["x","y"]`, `\u0041`, "A", "é", "e\u0301"}
	for _, k := range keys {
		if _, _, err := s.ClaimIdempotency(ctx, store.Idempotency{Scope: "s", Key: k, RequestDigest: digest}); err != nil {
			t.Fatalf("claim %q: %v", k, err)
		}
	}
	// Delete every other key; the rest must stay, untouched.
	var names []store.IdempotencyKey
	for i, k := range keys {
		if i%2 == 0 {
			names = append(names, store.IdempotencyKey{Scope: "s", Key: k})
		}
	}
	n, err := s.DeleteIdempotency(ctx, names)
	if err != nil || n != len(names) {
		t.Fatalf("DeleteIdempotency = %d, %v; want %d", n, err, len(names))
	}
	left, err := s.ListIdempotency(ctx, store.IdempotencyQuery{Scope: "s", Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, r := range left {
		got[r.Key] = true
	}
	for i, k := range keys {
		if got[k] != (i%2 == 1) {
			t.Errorf("key %q left = %v, want %v", k, got[k], i%2 == 1)
		}
	}
}
