package supervise

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/agentrt/agentrt/canonjson"
)

// progress.ndjson stops at MaxProgressBytes: a line that fits is
// written whole, the first that does not is dropped with every later
// one, and state.json says the log was truncated while it still counts
// every spawn.
func TestProgressLogIsBounded(t *testing.T) {
	dir := t.TempDir()
	at := time.UnixMilli(1000)
	y, err := openLayout(dir, "run1", nil, nil, func() time.Time { return at }, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	first := ProgressRecord{ID: ProgressSpawn + ":run1:s1", Kind: ProgressSpawn, AtMS: 1000, Node: "run1:s1", Label: "a"}
	line, err := canonjson.AppendCanonicalOf(nil, &first)
	if err != nil {
		t.Fatal(err)
	}
	// Room for exactly the first line: the writer owns progBytes, and
	// it reads it only after observe kicks it.
	y.progBytes = MaxProgressBytes - int64(len(line)+1)
	y.observe(&Record{Kind: KindSpawned, Node: "run1:s1", Parent: "run1", Label: "a"})
	y.observe(&Record{Kind: KindSpawned, Node: "run1:s2", Parent: "run1", Label: "b"})
	if err := y.close(); err != nil {
		t.Fatal(err)
	}
	recs, skipped, err := ReadProgress(context.Background(), dir)
	if err != nil || skipped != 0 {
		t.Fatalf("ReadProgress: %d skipped, %v", skipped, err)
	}
	if len(recs) != 1 || recs[0] != first {
		t.Errorf("progress holds %+v, want only %+v", recs, first)
	}
	st, err := ReadRunState(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if !st.ProgressTruncated || st.Spawned != 2 {
		t.Errorf("state: truncated %v, spawned %d; want true, 2", st.ProgressTruncated, st.Spawned)
	}
}
