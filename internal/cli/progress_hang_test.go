package cli

import (
	"context"
	"io"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentrt/agentrt/supervise"
)

// The progress lines of agentrt supervise and graph follow the run's
// journal; when the store holding it stops answering (a --journal-in-store
// run whose database hangs), the run's end must not wait on that read
// forever. Before the fix the follower read without any deadline and
// stop, called once Supervise returned, waited for it: the command hung
// past every deadline after the run had ended.
func TestProgressStopDoesNotWaitOnAStoreThatStoppedAnswering(t *testing.T) {
	var calls atomic.Int64
	feed := journalFeed{name: "run r in the store", next: func(ctx context.Context) ([]supervise.Record, error) {
		if calls.Add(1) == 1 {
			return nil, nil // the first look, before the run starts, answers
		}
		<-ctx.Done() // then the store stops answering: only a deadline ends the read
		return nil, ctx.Err()
	}}
	p := startProgress(context.Background(), io.Discard, feed, false, nil)
	stopped := make(chan struct{})
	go func() {
		p.stop()
		close(stopped)
	}()
	select {
	case <-stopped:
	case <-time.After(progressReadTimeout + 30*time.Second):
		t.Fatalf("progress stop still waiting on the journal read %s after the run ended", progressReadTimeout+30*time.Second)
	}
}
