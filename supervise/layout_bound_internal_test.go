package supervise

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/canonjson"
)

// progress.ndjson stops at MaxProgressBytes: a line that fits is
// written whole, the first that does not is dropped with every later
// one, and state.json says the log was truncated while it still counts
// every spawn.
func TestProgressLogIsBounded(t *testing.T) {
	dir := t.TempDir()
	at := time.UnixMilli(1000)
	y, err := openLayout(dir, "run1", nil, nil, func() time.Time { return at }, slog.New(slog.DiscardHandler), false)
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

// A progress batch far from the bound is encoded once, by the append;
// one holding a record that does not encode (a label that is not
// UTF-8) falls back to encoding each line first, so that record is
// skipped and the others are written, as before. Either way the
// writer's count of the file's bytes stays the file's size.
func TestProgressBatchSkipsARecordThatDoesNotEncode(t *testing.T) {
	for _, tc := range []struct {
		name   string
		labels []string
		want   []string
	}{
		{"all encode", []string{"a", "b", "c"}, []string{"a", "b", "c"}},
		{"one does not", []string{"a", "\xff", "c"}, []string{"a", "c"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			y, err := openLayout(dir, "run1", nil, nil, func() time.Time { return time.UnixMilli(1000) }, slog.New(slog.DiscardHandler), false)
			if err != nil {
				t.Fatal(err)
			}
			batch := make([]ProgressRecord, len(tc.labels))
			for i, l := range tc.labels {
				node := NodeID("run1:s" + string(rune('1'+i)))
				batch[i] = ProgressRecord{ID: ProgressSpawn + ":" + string(node), Kind: ProgressSpawn, AtMS: 1000, Node: node, Label: l}
			}
			// The writer goroutine owns appendProgress; it has nothing
			// queued, so the test may call it.
			y.appendProgress(batch)
			counted := y.progBytes
			if err := y.close(); err != nil {
				t.Fatal(err)
			}
			recs, skipped, err := ReadProgress(context.Background(), dir)
			if err != nil || skipped != 0 {
				t.Fatalf("ReadProgress: %d skipped, %v", skipped, err)
			}
			var got []string
			for _, r := range recs {
				got = append(got, r.Label)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("labels written (-want +got):\n%s", diff)
			}
			fi, err := os.Stat(filepath.Join(dir, ProgressFile))
			if err != nil {
				t.Fatal(err)
			}
			if counted != fi.Size() {
				t.Errorf("the writer counts %d bytes, the file holds %d", counted, fi.Size())
			}
		})
	}
}
