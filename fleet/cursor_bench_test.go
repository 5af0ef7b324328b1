package fleet_test

import (
	"testing"

	"github.com/agentrt/agentrt/fleet"
)

func BenchmarkParseFleetCursor(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := fleet.ParseCursor("g12/c0000000000000000042"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFollowAfter resumes a two-attempt run after its first
// attempt's second event: the rest of that attempt and the next one.
func BenchmarkFollowAfter(b *testing.B) {
	s, id := twoAttemptRun(b, 3, 4)
	after := fleet.Cursor{Generation: 1, Event: "c0000000000000000002"}
	b.ReportAllocs()
	for b.Loop() {
		n := 0
		for _, err := range fleet.Follow(b.Context(), s, id, fleet.FollowOptions{After: &after}) {
			if err != nil {
				b.Fatal(err)
			}
			n++
		}
		if n != 5 {
			b.Fatalf("followed %d events, want 5", n)
		}
	}
}
