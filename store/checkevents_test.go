package store_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/internal/scaletest"
	"github.com/agentrt/agentrt/store"
)

// batch is n valid events e0..e(n-1).
func batch(tb testing.TB, n int) []store.NewEvent {
	body, err := canonjson.Decode([]byte(`{"type":"message.delta","delta":"hello"}`))
	if err != nil {
		tb.Fatal(err)
	}
	out := make([]store.NewEvent, n)
	for i := range out {
		out[i] = store.NewEvent{ID: fmt.Sprint("e", i), Type: "message.delta", Time: time.Unix(1, 0), Body: body}
	}
	return out
}

// TestCheckEventsRepeatedID: an id twice in one append is ErrExists
// whether the batch is searched in place (short) or through a set
// (long), wherever the repeat sits; distinct ids pass.
func TestCheckEventsRepeatedID(t *testing.T) {
	for _, tc := range []struct {
		name    string
		n       int
		dupOf   int // index whose id the last event repeats; -1 for none
		wantErr error
	}{
		{"one", 1, -1, nil},
		{"short distinct", 16, -1, nil},
		{"short repeat", 16, 3, store.ErrExists},
		{"long distinct", 10_000, -1, nil},
		{"long repeat of the first", 10_000, 0, store.ErrExists},
		{"long repeat of the one before", 10_000, 9_998, store.ErrExists},
		{"just past short repeat", 17, 16 - 1, store.ErrExists},
	} {
		t.Run(tc.name, func(t *testing.T) {
			events := batch(t, tc.n)
			if tc.dupOf >= 0 {
				events[tc.n-1].ID = events[tc.dupOf].ID
			}
			err := store.CheckEvents(events)
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil) != (err == nil) {
				t.Fatalf("CheckEvents = %v, want %v", err, tc.wantErr)
			}
		})
	}
}

// BenchmarkCheckEvents: the check is linear in the batch (ns/event flat
// from 1k to 100k events); it searched every earlier event for each
// one's id before, which was quadratic.
func BenchmarkCheckEvents(b *testing.B) {
	for _, n := range []int{1_000, 10_000, 100_000} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			events := batch(b, n)
			b.ReportAllocs()
			stop := scaletest.CPU(b)
			for b.Loop() {
				if err := store.CheckEvents(events); err != nil {
					b.Fatal(err)
				}
			}
			stop()
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/event")
		})
	}
}
