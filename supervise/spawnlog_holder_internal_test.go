package supervise

import "testing"

// A store spawn journal's event ids name the holder that appended them
// (HeldRecord.Generation), and only ids of that form name one.
func TestEventGeneration(t *testing.T) {
	for _, tc := range []struct {
		id   string
		want int64
	}{
		{spawnEventID(1, 1), 1},
		{spawnEventID(42, 7), 42},
		{"g3.0", 3},
		{"g0.1", 0},
		{"g-2.1", 0},
		{"g.1", 0},
		{"g12", 0},
		{"x3.1", 0},
		{"", 0},
		{"g99999999999999999999.1", 0},
	} {
		if got := eventGeneration(tc.id); got != tc.want {
			t.Errorf("eventGeneration(%q) = %d, want %d", tc.id, got, tc.want)
		}
	}
}
