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

// DeleteIdempotency deletes its names a statement per chunk, not per
// name: a call of MaxIdempotencyBatch names spanning several chunks,
// with names given twice and names of no record, deletes exactly the
// named records and counts each once; the others stay.
func TestDeleteIdempotencyInChunks(t *testing.T) {
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
