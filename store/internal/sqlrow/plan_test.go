package sqlrow

import (
	"errors"
	"testing"
	"time"

	"github.com/agentrt/agentrt/store"
)

// Each append of a batch is decided alone: the failing ones take no
// sequence numbers, so the others stay contiguous.
func TestPlanAppends(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	ev := func(ids ...string) []store.NewEvent {
		out := make([]store.NewEvent, len(ids))
		for i, id := range ids {
			out[i] = store.NewEvent{ID: id, Type: "t"}
		}
		return out
	}
	a := func(run string, gen int64, ids ...string) Append {
		return Append{Fence: store.Fence{RunID: run, Generation: gen}, Events: ev(ids...)}
	}
	heads := map[string]*Head{
		"r": {Status: "running", Generation: 1, Last: 4},
		"s": {Status: "running", Generation: 2},
		"e": {Status: "completed", Generation: 1, Last: 9},
	}
	stored := map[EventKey]bool{{"r", "old"}: true}
	batch := []Append{
		a("r", 1, "x", "y"),   // 5, 6
		a("s", 1, "x"),        // superseded
		a("r", 1, "z", "old"), // stored already
		a("missing", 1, "x"),  // no such run
		a("r", 1, "y"),        // taken earlier in the batch
		a("s", 2, "x"),        // 1
		a("e", 1, "x"),        // ended
		a("r", 1, "z"),        // 7: the failed append above did not take z
	}
	first, errs := PlanAppends(batch, heads, stored, now)
	wantFirst := []int64{5, 0, 0, 0, 0, 1, 0, 7}
	wantErr := []error{nil, store.ErrFenced, store.ErrExists, store.ErrNotFound, store.ErrExists, nil, store.ErrFenced, nil}
	for i := range batch {
		if first[i] != wantFirst[i] || !errors.Is(errs[i], wantErr[i]) || (wantErr[i] == nil) != (errs[i] == nil) {
			t.Errorf("append %d: first %d, %v; want %d, %v", i, first[i], errs[i], wantFirst[i], wantErr[i])
		}
	}
	if heads["r"].Last != 7 || heads["s"].Last != 1 {
		t.Errorf("last sequences r=%d s=%d, want 7 and 1", heads["r"].Last, heads["s"].Last)
	}
}
