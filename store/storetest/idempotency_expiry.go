package storetest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/store"
)

// testIdempotencyListDelete: ListIdempotency selects one scope's records
// by key prefix (byte for byte, also past ASCII) and age, oldest first,
// bounded by the limit; DeleteIdempotency removes exactly the named
// records, counts only those that existed, frees the key for a new
// claim, and refuses a malformed call before any effect.
func testIdempotencyListDelete(t *testing.T, open Open) {
	ctx := context.Background()
	clock := NewClock()
	s := open(t, clock.Now)
	d := "sha256:" + fmt.Sprintf("%064x", 7)
	claim := func(scope, key string) {
		t.Helper()
		if _, created, err := s.ClaimIdempotency(ctx, store.Idempotency{Scope: scope, Key: key, RequestDigest: d, Result: doc(`{"n":1}`)}); err != nil || !created {
			t.Fatalf("claim %s/%s: %v %v", scope, key, created, err)
		}
		clock.Advance(time.Second)
	}
	start := clock.Now()
	for _, k := range []string{`["a","1"]`, `["a","2"]`, `["ab","1"]`, `["a","1"]#1`, `é1`, `é2`, `ê1`} {
		claim("s", k)
	}
	claim("other", `["a","3"]`)
	keys := func(q store.IdempotencyQuery) []string {
		t.Helper()
		recs, err := s.ListIdempotency(ctx, q)
		if err != nil {
			t.Fatalf("ListIdempotency(%+v): %v", q, err)
		}
		out := []string{}
		for _, r := range recs {
			if r.Scope != q.Scope || r.RequestDigest != d || !r.Result.IsValid() || r.CreatedAt.IsZero() {
				t.Errorf("record %+v is not what was claimed", r)
			}
			out = append(out, r.Key)
		}
		return out
	}
	for _, c := range []struct {
		name string
		q    store.IdempotencyQuery
		want []string
	}{
		{"prefix", store.IdempotencyQuery{Scope: "s", KeyPrefix: `["a",`, Limit: 10}, []string{`["a","1"]`, `["a","2"]`, `["a","1"]#1`}},
		{"exact key as prefix", store.IdempotencyQuery{Scope: "s", KeyPrefix: `["a","1"]`, Limit: 10}, []string{`["a","1"]`, `["a","1"]#1`}},
		{"prefix past ASCII", store.IdempotencyQuery{Scope: "s", KeyPrefix: `é`, Limit: 10}, []string{`é1`, `é2`}},
		{"limit keeps the oldest", store.IdempotencyQuery{Scope: "s", Limit: 2}, []string{`["a","1"]`, `["a","2"]`}},
		{"before", store.IdempotencyQuery{Scope: "s", Before: start.Add(3 * time.Second), Limit: 10}, []string{`["a","1"]`, `["a","2"]`, `["ab","1"]`}},
		{"no match", store.IdempotencyQuery{Scope: "s", KeyPrefix: `["b"`, Limit: 10}, []string{}},
	} {
		if diff := cmp.Diff(c.want, keys(c.q)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", c.name, diff)
		}
	}
	for _, q := range []store.IdempotencyQuery{{Limit: 1}, {Scope: "s"}, {Scope: "s", Limit: store.MaxIdempotencyBatch + 1}} {
		if _, err := s.ListIdempotency(ctx, q); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("ListIdempotency(%+v) = %v, want ErrInvalid", q, err)
		}
	}

	n, err := s.DeleteIdempotency(ctx, []store.IdempotencyKey{{Scope: "s", Key: `["a","1"]`}, {Scope: "s", Key: `["a","1"]#1`}, {Scope: "s", Key: "missing"}, {Scope: "other", Key: `["a","1"]`}})
	if err != nil || n != 2 {
		t.Fatalf("DeleteIdempotency = %d, %v; want 2 removed", n, err)
	}
	if diff := cmp.Diff([]string{`["a","2"]`}, keys(store.IdempotencyQuery{Scope: "s", KeyPrefix: `["a",`, Limit: 10})); diff != "" {
		t.Errorf("after delete (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{`["a","3"]`}, keys(store.IdempotencyQuery{Scope: "other", Limit: 10})); diff != "" {
		t.Errorf("another scope changed (-want +got):\n%s", diff)
	}
	// The key is free again: a new claim creates it.
	claim("s", `["a","1"]`)
	if n, err := s.DeleteIdempotency(ctx, nil); err != nil || n != 0 {
		t.Errorf("DeleteIdempotency(nil) = %d, %v", n, err)
	}
	for _, bad := range [][]store.IdempotencyKey{{{Scope: "s"}}, {{Key: "k"}}, make([]store.IdempotencyKey, store.MaxIdempotencyBatch+1)} {
		if _, err := s.DeleteIdempotency(ctx, bad); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("DeleteIdempotency of %d malformed names = %v, want ErrInvalid", len(bad), err)
		}
	}
	// A whole batch is one call.
	batch := make([]store.IdempotencyKey, 0, store.MaxIdempotencyBatch)
	for i := range store.MaxIdempotencyBatch {
		batch = append(batch, store.IdempotencyKey{Scope: "s", Key: fmt.Sprintf("none-%d", i)})
	}
	if n, err := s.DeleteIdempotency(ctx, batch); err != nil || n != 0 {
		t.Errorf("DeleteIdempotency of a full batch = %d, %v", n, err)
	}
}
