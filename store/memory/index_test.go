package memory_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/memory"
	"github.com/google/go-cmp/cmp"
)

// The ordered index answers ListRuns exactly as sorting every run would
// (newest first by creation time, then id descending) for runs created
// out of order, with equal creation times, across kinds, after deletes,
// for every filter and limit.
func TestListRunsOrderedIndex(t *testing.T) {
	ctx := context.Background()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := t0.Add(time.Hour)
	s := memory.New(func() time.Time { return now })
	t.Cleanup(func() { s.Close() })
	rng := rand.New(rand.NewPCG(1, 2))
	var want []store.Run
	for i := range 300 {
		st := store.StatusCompleted
		if i%3 == 0 {
			st = store.StatusFailed
		}
		// Few distinct times, so ties are ordered by id; the zone varies
		// and must not matter.
		at := t0.Add(time.Duration(rng.IntN(40)) * time.Second)
		if i%4 == 0 {
			at = at.In(time.FixedZone("x", 3600))
		}
		r, err := s.CreateRun(ctx, store.Run{ID: fmt.Sprintf("r%03d", rng.IntN(1000)*1000+i), Kind: []string{"a", "b", "c"}[i%3],
			Status: st, CreatedAt: at})
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, r)
	}
	for i := 0; i < len(want); i += 7 {
		if err := s.DeleteRun(ctx, want[i].ID); err != nil {
			t.Fatal(err)
		}
		want[i].ID = ""
	}
	want = slices.DeleteFunc(want, func(r store.Run) bool { return r.ID == "" })
	slices.SortFunc(want, func(a, b store.Run) int {
		if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(b.ID, a.ID)
	})
	for _, kind := range []string{"", "a", "b", "c", "none"} {
		for _, status := range []store.Status{"", store.StatusCompleted, store.StatusFailed} {
			for _, limit := range []int{0, 1, 5, 1000} {
				var exp []string
				for _, r := range want {
					if (kind == "" || r.Kind == kind) && (status == "" || r.Status == status) && (limit == 0 || len(exp) < limit) {
						exp = append(exp, r.ID)
					}
				}
				runs, err := s.ListRuns(ctx, store.ListOptions{Kind: kind, Status: status, Limit: limit})
				if err != nil {
					t.Fatal(err)
				}
				var got []string
				for _, r := range runs {
					got = append(got, r.ID)
				}
				if d := cmp.Diff(exp, got); d != "" {
					t.Errorf("kind %q status %q limit %d (-want +got):\n%s", kind, status, limit, d)
				}
			}
		}
	}
}
