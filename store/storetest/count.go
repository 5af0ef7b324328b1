package storetest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt/store"
)

// RunCountIdempotency checks a store's store.IdempotencyCounter: for
// every query (a scope; with a key prefix, including one no range can
// express; with an age) the count is the number of records
// ListIdempotency selects, and a count without a scope is refused with
// store.ErrInvalid.
func RunCountIdempotency(t *testing.T, open Open) {
	clock := NewClock()
	s := open(t, clock.Now)
	c, ok := s.(store.IdempotencyCounter)
	if !ok {
		t.Fatalf("%T does not count its idempotency records (store.IdempotencyCounter)", s)
	}
	ctx := context.Background()
	digest := "sha256:" + strings.Repeat("0", 64)
	keys := []string{"a", "a#1", "a#2", "ab", "b", "é", "é#1", "z"}
	for i, k := range keys {
		for _, scope := range []string{"count.one", "count.two"} {
			if _, _, err := s.ClaimIdempotency(ctx, store.Idempotency{Scope: scope, Key: k, RequestDigest: digest}); err != nil {
				t.Fatal(err)
			}
		}
		if i == 3 {
			clock.Advance(time.Minute)
		}
	}
	middle := clock.Now().Add(-30 * time.Second)
	for _, q := range []store.IdempotencyQuery{
		{Scope: "count.one"},
		{Scope: "count.two", KeyPrefix: "a"},
		{Scope: "count.one", KeyPrefix: "a#"},
		{Scope: "count.one", KeyPrefix: "é"},
		{Scope: "count.one", Before: middle},
		{Scope: "count.two", KeyPrefix: "a", Before: middle},
		{Scope: "count.none"},
	} {
		t.Run(fmt.Sprintf("%s %q %v", q.Scope, q.KeyPrefix, !q.Before.IsZero()), func(t *testing.T) {
			n, err := c.CountIdempotency(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			q.Limit = store.MaxIdempotencyBatch
			recs, err := s.ListIdempotency(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			if n != int64(len(recs)) {
				t.Errorf("CountIdempotency = %d, ListIdempotency selects %d", n, len(recs))
			}
		})
	}
	if n, err := c.CountIdempotency(ctx, store.IdempotencyQuery{Scope: "count.two"}); err != nil || n != int64(len(keys)) {
		t.Errorf("CountIdempotency of a scope = %d, %v; want its %d records", n, err, len(keys))
	}
	if _, err := c.CountIdempotency(ctx, store.IdempotencyQuery{}); err == nil || !strings.Contains(err.Error(), "scope") {
		t.Errorf("a count without a scope: %v, want a refusal naming the scope", err)
	}
}
