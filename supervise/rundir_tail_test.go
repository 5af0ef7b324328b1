package supervise_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/supervise"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func recordLine(i int) string {
	return fmt.Sprintf(`{"kind":"spawned","node":"run1:s%d","task":"task %d"}`, i, i) + "\n"
}

func appendFile(t testing.TB, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// RunDirTail reads what ReadRunDir reads, a step at a time: each Next
// returns only the lines completed since the last, a line still being
// written waits for its end, a corrupt line is counted once a line
// follows it, a line longer than any record is dropped, and a journal
// cut shorter or replaced is read again from its start.
func TestRunDirTailFollowsAppends(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, supervise.SpawnJournalFile)
	tail := supervise.TailRunDir(dir)
	ctx := context.Background()
	if _, _, err := tail.Next(ctx); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a missing journal: %v", err)
	}
	long := strings.Repeat("x", 3<<20)
	steps := []struct {
		name        string
		write       string
		replace     bool
		want        []int // record numbers Next returns
		restarted   bool
		wantSkipped int
	}{
		{name: "first records", write: recordLine(1) + recordLine(2), want: []int{1, 2}},
		{name: "nothing new", want: nil},
		{name: "a torn line waits", write: recordLine(3)[:20], want: nil},
		{name: "its end arrives", write: recordLine(3)[20:] + recordLine(4), want: []int{3, 4}},
		{name: "a corrupt last line is not counted yet", write: "{not json\n", want: nil},
		{name: "a line after it makes it corrupt", write: recordLine(5), want: []int{5}, wantSkipped: 1},
		{name: "a line longer than any record", write: long + "\n" + recordLine(6), want: []int{6}, wantSkipped: 2},
		{name: "a record that is no Record", write: `{"kind": 7}` + "\n" + recordLine(7), want: []int{7}, wantSkipped: 3},
		{name: "replaced by a new journal", replace: true, write: recordLine(1), want: []int{1}, restarted: true},
	}
	var all []supervise.Record
	for _, s := range steps {
		if s.replace {
			tmp := filepath.Join(dir, "new.jsonl")
			if err := os.WriteFile(tmp, []byte(s.write), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(tmp, path); err != nil {
				t.Fatal(err)
			}
			all = nil
		} else if s.write != "" {
			appendFile(t, path, s.write)
		}
		got, restarted, err := tail.Next(ctx)
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		var nodes []int
		for _, r := range got {
			var n int
			if _, err := fmt.Sscanf(string(r.Node), "run1:s%d", &n); err != nil {
				t.Fatalf("%s: record %+v", s.name, r)
			}
			nodes = append(nodes, n)
		}
		if diff := cmp.Diff(s.want, nodes); diff != "" || restarted != s.restarted || tail.Skipped() != s.wantSkipped {
			t.Errorf("%s: records (-want +got):\n%s restarted %v, skipped %d; want %v, %d", s.name, diff, restarted, tail.Skipped(), s.restarted, s.wantSkipped)
		}
		all = append(all, got...)
		whole, _, err := supervise.ReadRunDir(ctx, dir)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(whole, all, cmpopts.EquateEmpty(), cmp.Comparer(canonjson.Equal)); diff != "" {
			t.Errorf("%s: what the tail read differs from ReadRunDir (-whole +tail):\n%s", s.name, diff)
		}
	}

	// Cut shorter than what was read (a hand-edited journal).
	if err := os.WriteFile(path, []byte(recordLine(9)), 0o600); err != nil {
		t.Fatal(err)
	}
	got, restarted, err := tail.Next(ctx)
	if err != nil || !restarted || len(got) != 1 || got[0].Node != "run1:s9" {
		t.Errorf("a journal cut shorter: %+v, restarted %v, %v", got, restarted, err)
	}
}

// A real run's journal, followed while Supervise appends to it, reads
// the same records as ReadRunDir once the run ended.
func TestRunDirTailFollowsARun(t *testing.T) {
	dir := t.TempDir()
	tail := supervise.TailRunDir(dir)
	var followed []supervise.Record
	o := baseOptions(t, newCounting(t, workerProvider(t)), nil)
	o.RunDir = dir
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		for _, task := range []string{"write alpha", "write beta", "write alpha again"} {
			if _, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "writer", Task: task}); err != nil {
				return supervise.BrainReport{}, err
			}
			recs, _, err := tail.Next(ctx)
			if err != nil {
				return supervise.BrainReport{}, err
			}
			followed = append(followed, recs...)
			if _, err := c.Await(ctx, supervise.AwaitArgs{TimeoutMS: 60_000}); err != nil {
				return supervise.BrainReport{}, err
			}
		}
		return supervise.BrainReport{}, nil
	})
	if _, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o); err != nil {
		t.Fatal(err)
	}
	recs, restarted, err := tail.Next(context.Background())
	if err != nil || restarted {
		t.Fatalf("%v, restarted %v", err, restarted)
	}
	followed = append(followed, recs...)
	whole, skipped, err := supervise.ReadRunDir(context.Background(), dir)
	if err != nil || skipped != 0 {
		t.Fatalf("%v, skipped %d", err, skipped)
	}
	if diff := cmp.Diff(whole, followed, cmp.Comparer(canonjson.Equal)); diff != "" {
		t.Errorf("followed journal (-whole +followed):\n%s", diff)
	}
}

// FuzzRunDirTail writes arbitrary bytes to a journal in pieces, reading
// it with a RunDirTail after each: the records it read in all are
// always ReadRunDir's, and it never errs or panics.
func FuzzRunDirTail(f *testing.F) {
	f.Add([]byte(recordLine(1)+recordLine(2)), uint8(7))
	f.Add([]byte(recordLine(1)+"{bad\n"+recordLine(2)+`{"kind":"x"`), uint8(3))
	f.Add([]byte("\n\n"+recordLine(3)+"[1,2]\n"), uint8(1))
	f.Add([]byte(`{"kind":"spawned","node":"a\u0000"}`+"\n"+`{"a":1,"a":2}`+"\n"), uint8(11))
	f.Fuzz(func(t *testing.T, data []byte, step uint8) {
		dir := t.TempDir()
		path := filepath.Join(dir, supervise.SpawnJournalFile)
		if err := os.WriteFile(path, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		tail := supervise.TailRunDir(dir)
		n := int(step%32) + 1
		var all []supervise.Record
		for i := 0; i < len(data); i += n {
			appendFile(t, path, string(data[i:min(i+n, len(data))]))
			recs, restarted, err := tail.Next(context.Background())
			if err != nil || restarted {
				t.Fatalf("at %d: %v, restarted %v", i, err, restarted)
			}
			all = append(all, recs...)
		}
		whole, _, err := supervise.ReadRunDir(context.Background(), dir)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(whole, all, cmpopts.EquateEmpty(), cmp.Comparer(canonjson.Equal)); diff != "" {
			t.Fatalf("tail (-whole +tail):\n%s", diff)
		}
	})
}

// BenchmarkFollowRunDir is one look of a follower at a journal of 5,000
// records that just grew by one: re-reading the whole journal (what
// agentrt supervise's progress did every 100 ms) against the tail.
func BenchmarkFollowRunDir(b *testing.B) {
	const prefill = 5000
	setup := func(b *testing.B) (string, string) {
		dir := b.TempDir()
		path := filepath.Join(dir, supervise.SpawnJournalFile)
		var sb strings.Builder
		for i := range prefill {
			sb.WriteString(recordLine(i))
		}
		if err := os.WriteFile(path, []byte(sb.String()), 0o600); err != nil {
			b.Fatal(err)
		}
		return dir, path
	}
	b.Run("reread", func(b *testing.B) {
		dir, path := setup(b)
		seen := 0
		ctx := context.Background()
		for i := 0; b.Loop(); i++ {
			appendFile(b, path, recordLine(prefill+i))
			recs, _, err := supervise.ReadRunDir(ctx, dir)
			if err != nil || len(recs) != seen+1 && seen != 0 {
				b.Fatalf("%v %d", err, len(recs))
			}
			seen = len(recs)
		}
	})
	b.Run("tail", func(b *testing.B) {
		dir, path := setup(b)
		tail := supervise.TailRunDir(dir)
		ctx := context.Background()
		if _, _, err := tail.Next(ctx); err != nil {
			b.Fatal(err)
		}
		for i := 0; b.Loop(); i++ {
			appendFile(b, path, recordLine(prefill+i))
			recs, _, err := tail.Next(ctx)
			if err != nil || len(recs) != 1 {
				b.Fatalf("%v %d", err, len(recs))
			}
		}
	})
}

// FuzzStreamTail feeds a worker log to a StreamTail in steps of 1–32
// bytes and checks that it yields, in all, what ReadWorkerLog reads of
// the whole log: no line lost, repeated or poisoned by a line before
// it (invalid UTF-8, NUL, duplicate members, 1e400, a JSON value of the
// wrong kind). Seeded with lines a run writes.
func FuzzStreamTail(f *testing.F) {
	spawned := `{"atMs":1772366400000,"kind":"spawned","label":"w0","node":"sup-1:s0","profile":"coder"}` + "\n"
	turn := `{"atMs":1772366401000,"inputTokens":12,"kind":"turn-ended","node":"sup-1:s0","outputTokens":30,"terminal":"completed"}` + "\n"
	settled := `{"atMs":1772366402000,"kind":"settled","node":"sup-1:s0","reason":"done","state":"done"}` + "\n"
	f.Add([]byte(spawned+turn+settled), uint8(7))
	f.Add([]byte(spawned+"{bad\n"+turn+`{"kind":"x"`), uint8(3))
	f.Add([]byte("\n\n"+turn+"[1,2]\n"+`{"atMs":1e400,"kind":"turn-ended"}`+"\n"+settled), uint8(1))
	f.Add([]byte(`{"kind":"event","text":"a\u0000"}`+"\n"+`{"kind":"a","kind":"b"}`+"\n\xff\xfe\n"+settled), uint8(11))
	f.Fuzz(func(t *testing.T, data []byte, step uint8) {
		dir := t.TempDir()
		path := supervise.WorkerLogPath(dir, "w0")
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		tail := supervise.TailWorkerLog(dir, "w0")
		n := int(step%32) + 1
		var all []supervise.StreamRecord
		for i := 0; i < len(data); i += n {
			appendFile(t, path, string(data[i:min(i+n, len(data))]))
			recs, restarted, err := tail.Next(context.Background())
			if err != nil || restarted {
				t.Fatalf("at %d: %v, restarted %v", i, err, restarted)
			}
			all = append(all, recs...)
		}
		whole, _, err := supervise.ReadWorkerLog(context.Background(), dir, "w0")
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(whole, all, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("tail (-whole +tail):\n%s", diff)
		}
	})
}
