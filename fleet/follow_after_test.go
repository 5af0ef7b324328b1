package fleet_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/fleet"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/memory"
)

// twoAttemptRun records, in a memory store, an ended fleet run whose
// first attempt (generation 1) recorded first events and its second
// (generation 2) second events, as a takeover leaves it.
func twoAttemptRun(t testing.TB, first, second int) (store.Store, string) {
	t.Helper()
	ctx := t.Context()
	s := memory.New(nil)
	const id = "fleet-run-after"
	attempts := []fleet.Attempt{{Generation: 1, RunID: id + ".g1", Worker: "w1"}, {Generation: 2, RunID: id + ".g2", Worker: "w2", Status: "completed"}}
	av, err := canonjson.ToValue(attempts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateRun(ctx, store.Run{ID: id, Kind: fleet.Kind, Status: store.StatusCompleted,
		Doc: canonjson.ObjectValue([]canonjson.Member{{Name: "attempts", Value: av}})}); err != nil {
		t.Fatal(err)
	}
	for i, n := range []int{first, second} {
		a := attempts[i]
		r, err := s.CreateRun(ctx, store.Run{ID: a.RunID, Kind: "execute", Status: store.StatusRunning, Owner: a.Worker, LeaseUntil: time.Now().Add(time.Hour), Doc: canonjson.ObjectValue(nil)})
		if err != nil {
			t.Fatal(err)
		}
		evs := make([]store.NewEvent, n)
		for j := range evs {
			evs[j] = store.NewEvent{ID: fmt.Sprintf("e%d-%d", a.Generation, j+1), Type: "text", Time: time.Now(), Body: canonjson.ObjectValue([]canonjson.Member{{Name: "text", Value: canonjson.StringValue(fmt.Sprintf("g%d event %d", a.Generation, j+1))}})}
		}
		if _, err := s.AppendEvents(ctx, r.Fence(), evs); err != nil {
			t.Fatal(err)
		}
		if _, err := s.UpdateFenced(ctx, r.Fence(), func(r *store.Run) error { r.Status = store.StatusCompleted; return nil }); err != nil {
			t.Fatal(err)
		}
	}
	return s, id
}

// ids follows the run (after from, when set) and returns its events'
// ids, failing on an error.
func ids(t *testing.T, s store.Store, id string, from *fleet.Cursor, page int) ([]string, []fleet.Event) {
	t.Helper()
	var out []string
	var evs []fleet.Event
	for e, err := range fleet.Follow(t.Context(), s, id, fleet.FollowOptions{After: from, PageSize: page}) {
		if err != nil {
			t.Fatal(err)
		}
		out, evs = append(out, e.ID), append(evs, e)
	}
	return out, evs
}

// Issue 14 (runs events --after on fleet runs): a fleet run's event
// cursor (Event.FleetCursor) resumes after its event with the cursor
// semantics of a local run — exactly the events after it, in order, the
// rest of its attempt's and then the later attempts' — from every
// position, including an attempt's last event and the run's last.
func TestFollowAfterAFleetCursor(t *testing.T) {
	s, id := twoAttemptRun(t, 3, 4)
	for _, page := range []int{1, 2, 500} {
		all, evs := ids(t, s, id, nil, page)
		if len(all) != 7 {
			t.Fatalf("page %d: followed %d events, want 7: %v", page, len(all), all)
		}
		for i, e := range evs {
			c := e.FleetCursor()
			parsed, err := fleet.ParseCursor(c.String())
			if err != nil || parsed != c {
				t.Fatalf("cursor %q reads back as %+v, %v", c, parsed, err)
			}
			got, _ := ids(t, s, id, &parsed, page)
			if diff := cmp.Diff(all[i+1:], got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("page %d, after %s (event %d): (-want +got)\n%s", page, c, i+1, diff)
			}
		}
	}
	// A cursor of an attempt the run does not have is a *CursorError.
	for e, err := range fleet.Follow(context.Background(), s, id, fleet.FollowOptions{After: &fleet.Cursor{Generation: 9, Event: store.CursorFor(1)}}) {
		var ce *fleet.CursorError
		if !errors.As(err, &ce) || !errors.Is(err, fleet.ErrInvalid) || !strings.Contains(err.Error(), "generation 9") {
			t.Fatalf("following after an unknown attempt: %+v, %v; want a *CursorError naming generation 9", e, err)
		}
	}
}

// ParseCursor takes exactly the text form Cursor.String writes.
func TestParseFleetCursor(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want *fleet.Cursor
	}{
		{"g1/c0000000000000000001", &fleet.Cursor{Generation: 1, Event: "c0000000000000000001"}},
		{"g12/c0000000000000000000", &fleet.Cursor{Generation: 12, Event: "c0000000000000000000"}},
		{"c0000000000000000001", nil},
		{"", nil},
		{"g0/c0000000000000000001", nil},
		{"g-1/c0000000000000000001", nil},
		{"g01/c0000000000000000001", nil},
		{"g+1/c0000000000000000001", nil},
		{"g1/", nil},
		{"g1/c1", nil},
		{"g1/c+000000000000000001", nil},
		{"g1/c0000000000000000001/x", nil},
		{"1/c0000000000000000001", nil},
		{"g99999999999999999999/c0000000000000000001", nil},
		{"g1/" + strings.Repeat("c", 100), nil},
	} {
		got, err := fleet.ParseCursor(tc.in)
		if tc.want == nil {
			var ce *fleet.CursorError
			if !errors.As(err, &ce) || !errors.Is(err, fleet.ErrInvalid) {
				t.Errorf("ParseCursor(%q) = %+v, %v; want a *CursorError", tc.in, got, err)
			}
			continue
		}
		if err != nil || got != *tc.want || got.String() != tc.in {
			t.Errorf("ParseCursor(%q) = %+v, %v; want %+v", tc.in, got, err, *tc.want)
		}
	}
}

// FuzzParseFleetCursor: ParseCursor never panics, refuses with a
// *CursorError, and what it takes it writes back byte for byte.
func FuzzParseFleetCursor(f *testing.F) {
	for _, s := range []string{"g1/c0000000000000000001", "c0000000000000000001", "g0/", "g1/c1", "", "g9223372036854775807/c9223372036854775807"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := fleet.ParseCursor(s)
		if err != nil {
			var ce *fleet.CursorError
			if !errors.As(err, &ce) || !errors.Is(err, fleet.ErrInvalid) {
				t.Fatalf("ParseCursor(%q): %v is not a *CursorError", s, err)
			}
			return
		}
		if c.String() != s || c.Generation < 1 {
			t.Fatalf("ParseCursor(%q) = %+v, written back as %q", s, c, c.String())
		}
	})
}
