package cli

import (
	"context"
	"io"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentrt/agentrt/supervise"
)

// Task D2 point 3: the progress lines follow a journal whose store
// stopped answering. A read that ran out its progressReadTimeout says
// the store is not answering; stopping the progress then must not ask
// it once more (another progressReadTimeout before the command can
// end), only wait out the read in flight.
func TestProgressStopAfterAFrozenReadAsksNoMore(t *testing.T) {
	var calls atomic.Int64
	inFlight := make(chan struct{}, 16)
	feed := journalFeed{name: "frozen", next: func(ctx context.Context) ([]supervise.Record, error) {
		n := calls.Add(1)
		if n == 1 {
			return nil, nil // the first look, before the run
		}
		inFlight <- struct{}{}
		<-ctx.Done()
		return nil, ctx.Err()
	}}
	p := startProgress(context.Background(), io.Discard, feed, false, nil)
	// The loop's first read is in flight and times out; the one after it
	// too: the store is not answering.
	<-inFlight
	<-inFlight
	stopped := make(chan struct{})
	go func() { p.stop(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(time.Minute):
		t.Fatal("stop did not return within a minute")
	}
	// The reads are the first look and the two frozen ones, the second
	// of which stop found in flight: none after it.
	if n := calls.Load(); n != 3 {
		t.Errorf("the progress read the journal %d times, want 3 (no read after stop once one timed out)", n)
	}
}
