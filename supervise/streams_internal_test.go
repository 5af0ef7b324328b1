package supervise

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/store"
)

// The stream logs are fenced by the run's lease: once the fence fails
// (another process took the run over) nothing more is written, whatever
// is queued.
func TestStreamLogsStopOnceTheLeaseIsLost(t *testing.T) {
	dir := t.TempDir()
	var lost atomic.Bool
	fence := func() error {
		if lost.Load() {
			return &store.FenceError{Reason: store.FenceSuperseded}
		}
		return nil
	}
	s, err := openStreams(dir, nil, fence, time.Now, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	s.observe(&Record{Kind: KindSpawned, Node: "run1:s1", Label: "a", Profile: "writer", Task: "first"})
	s.add("", StreamRecord{Kind: StreamTurnStarted, Run: "before"})
	waitDrained(t, s)
	lost.Store(true)
	s.add("", StreamRecord{Kind: StreamTurnStarted, Run: "after"})
	s.observe(&Record{Kind: KindSettled, Node: "run1:s1", State: StateDone})
	if err := s.close(); err != nil {
		t.Fatal(err)
	}
	root, _, err := ReadRootStream(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(root) != 1 || root[0].Run != "before" {
		t.Errorf("root stream %+v, want only the line written before the lease was lost", root)
	}
	worker, _, err := ReadWorkerLog(context.Background(), dir, "a")
	if err != nil {
		t.Fatal(err)
	}
	if len(worker) != 1 || worker[0].Kind != StreamSpawned {
		t.Errorf("worker log %+v, want only its spawned line", worker)
	}
	if !errors.Is(fence(), store.ErrFenced) {
		t.Fatal("the test's fence does not read as fenced")
	}
}

// A worker log is bounded: the line that would pass MaxWorkerLogBytes is
// replaced by one truncated record, later lines are dropped, and long
// texts are clipped to MaxStreamText and marked.
func TestWorkerLogIsBounded(t *testing.T) {
	dir := t.TempDir()
	s, err := openStreams(dir, nil, nil, time.Now, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	s.observe(&Record{Kind: KindSpawned, Node: "run1:s1", Label: "big", Profile: "writer", Task: strings.Repeat("t", 3*MaxStreamText)})
	line := strings.Repeat("x", MaxStreamText)
	for range 2 * MaxWorkerLogBytes / MaxStreamText {
		s.add("big", StreamRecord{Kind: StreamEvent, Node: "run1:s1"}.withText(line))
	}
	s.observe(&Record{Kind: KindSettled, Node: "run1:s1", State: StateDone})
	if err := s.close(); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(WorkerLogPath(dir, "big"))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() > MaxWorkerLogBytes {
		t.Errorf("the worker log is %d bytes, over MaxWorkerLogBytes %d", fi.Size(), MaxWorkerLogBytes)
	}
	recs, skipped, err := ReadWorkerLog(context.Background(), dir, "big")
	if err != nil || skipped != 0 {
		t.Fatalf("ReadWorkerLog: %d skipped, %v", skipped, err)
	}
	if first := recs[0]; !first.Clipped || len(first.Text) > MaxStreamText+len("…") {
		t.Errorf("the spawned record's task is %d bytes (clipped %v), want at most %d and marked", len(first.Text), first.Clipped, MaxStreamText)
	}
	if last := recs[len(recs)-1]; last.Kind != StreamTruncated {
		t.Errorf("the last line is %s, want %s", last.Kind, StreamTruncated)
	}
}

// waitDrained waits until the writer took every queued line and wrote it.
func waitDrained(t *testing.T, s *streams) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		s.mu.Lock()
		n := len(s.pending)
		s.mu.Unlock()
		if n == 0 {
			// The writer took the batch; give its append a moment to land.
			if recs, _, err := ReadRootStream(context.Background(), s.dir); err == nil && len(recs) > 0 {
				return
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatal("the stream writer did not drain within 30s")
}

// Neither the spawn path nor a worker waits on the stream logs: when the
// writer is maxPendingStream lines behind, further lines are dropped at
// once and counted, and a dropped line in the root stream says how many.
func TestStreamLogsDropRatherThanBlock(t *testing.T) {
	dir := t.TempDir()
	s, err := newStreams(dir, nil, nil, time.Now, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	added := make(chan struct{})
	go func() {
		defer close(added)
		for i := range maxPendingStream + 10 {
			s.add("", StreamRecord{Kind: StreamTurnStarted, Run: fmt.Sprint(i)})
		}
	}()
	select {
	case <-added:
	case <-time.After(30 * time.Second):
		t.Fatal("adding to a stream whose writer is stalled blocked")
	}
	go s.write() // the writer catches up
	if err := s.close(); err != nil {
		t.Fatal(err)
	}
	recs, _, err := ReadRootStream(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != maxPendingStream+1 {
		t.Fatalf("%d lines, want %d queued and one dropped line", len(recs), maxPendingStream)
	}
	if last := recs[len(recs)-1]; last.Kind != StreamDropped || last.Dropped != 10 {
		t.Errorf("last line %+v, want a dropped line counting 10", last)
	}
}

// A batch far from its logs' bounds is encoded once, by each log's
// append; a log whose lines hold one that does not encode (text that
// is not UTF-8) falls back to encoding each line first, so that line
// is skipped and the others are written in order. The writer's count
// of each log's bytes stays its file's size.
func TestStreamBatchSkipsALineThatDoesNotEncode(t *testing.T) {
	dir := t.TempDir()
	s, err := newStreams(dir, nil, nil, func() time.Time { return time.UnixMilli(1000) }, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	ev := func(stem, text string) streamItem {
		return streamItem{stem: stem, rec: StreamRecord{Kind: StreamEvent, AtMS: 1000, Node: "run1:s1", Text: text}}
	}
	// The writer is not started: writeBatch is the test's to call.
	s.writeBatch([]streamItem{ev("w", "a"), ev("", "r1"), ev("w", "\xff"), ev("w", "c"), ev("", "r2")})
	for _, tc := range []struct {
		stem string
		want []string
	}{{"w", []string{"a", "c"}}, {"", []string{"r1", "r2"}}} {
		f := s.files[tc.stem]
		path := filepath.Join(dir, RootStreamFile)
		if tc.stem != "" {
			path = WorkerLogPath(dir, tc.stem)
		}
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if f.size != fi.Size() {
			t.Errorf("log %q: the writer counts %d bytes, the file holds %d", tc.stem, f.size, fi.Size())
		}
		recs, skipped, err := readTolerant[StreamRecord](context.Background(), path)
		if err != nil || skipped != 0 {
			t.Fatalf("log %q: %d skipped, %v", tc.stem, skipped, err)
		}
		var got []string
		for _, r := range recs {
			got = append(got, r.Text)
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("log %q lines (-want +got):\n%s", tc.stem, diff)
		}
	}
	go s.write()
	if err := s.close(); err != nil {
		t.Fatal(err)
	}
}
