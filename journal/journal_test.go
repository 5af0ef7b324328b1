package journal_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/journal"
)

// rec decodes a JSON text that the test knows to be valid.
func rec(t testing.TB, text string) canonjson.Value {
	t.Helper()
	v, err := canonjson.Decode([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func canon(t testing.TB, v canonjson.Value) string {
	t.Helper()
	b, err := canonjson.Canonical(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func writeFile(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "spawn-journal.jsonl")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// readAll renders what a reader yields, one string per item:
// "seq canonical" for a record, "seq corrupt" for a corrupt line.
func readAll(t testing.TB, seq func(func(journal.Entry, error) bool)) []string {
	t.Helper()
	var out []string
	for e, err := range seq {
		var ce *journal.CorruptError
		switch {
		case errors.As(err, &ce):
			out = append(out, fmt.Sprintf("%d corrupt", ce.Seq))
		case err != nil:
			t.Fatalf("read: %v", err)
		default:
			out = append(out, fmt.Sprintf("%d %s", e.Seq, canon(t, e.Value)))
		}
	}
	return out
}

func mustOpen(t *testing.T, path string, opts journal.Options) *journal.Journal {
	t.Helper()
	j, err := journal.Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	return j
}

// Runtime spec §15 item 61 and §3.6 (checklist RES-03, RES-04): a torn
// trailing line is ignored by readers and truncated when the journal is
// reopened for appending — exactly that line, with the bytes reported —
// while every complete record survives.
func TestOpenRepairsTornTail(t *testing.T) {
	const a, b = `{"kind":"spawned","id":"w1"}` + "\n", `{"kind":"settled","id":"w1"}` + "\n"
	tests := []struct {
		name, file, kept string
		lines            int64
		read             []string // what readers yield, before and after Open
	}{
		{name: "empty file", file: "", kept: ""},
		{name: "only a newline", file: "\n", kept: ""},
		{name: "half a first line", file: `{"kind":"spa`, kept: ""},
		{name: "half a line after records", file: a + b + `{"kind":"spa`, kept: a + b, lines: 2,
			read: []string{`1 {"id":"w1","kind":"spawned"}`, `2 {"id":"w1","kind":"settled"}`}},
		{name: "a valid record without its newline", file: a + `{"kind":"x"}`, kept: a, lines: 1,
			read: []string{`1 {"id":"w1","kind":"spawned"}`}},
		{name: "final line of invalid JSON", file: a + "{\"kind\":}\n", kept: a, lines: 1,
			read: []string{`1 {"id":"w1","kind":"spawned"}`}},
		{name: "final line of zeros from a lost page", file: a + "\x00\x00\x00\x00", kept: a, lines: 1,
			read: []string{`1 {"id":"w1","kind":"spawned"}`}},
		{name: "invalid final line and a fragment after it", file: a + "{\n" + "{\"kin", kept: a, lines: 1,
			read: []string{`1 {"id":"w1","kind":"spawned"}`}},
		{name: "final value without canonical form", file: a + `{"n":1e999}` + "\n", kept: a, lines: 1,
			read: []string{`1 {"id":"w1","kind":"spawned"}`}},
		{name: "empty final line", file: a + "\n", kept: a, lines: 1,
			read: []string{`1 {"id":"w1","kind":"spawned"}`}},
		{name: "two bad final lines are corruption, kept", file: a + "{\n}\n", kept: a + "{\n}\n", lines: 3,
			read: []string{`1 {"id":"w1","kind":"spawned"}`, "2 corrupt", "3 corrupt"}},
		{name: "two empty lines are kept", file: "\n\n", kept: "\n\n", lines: 2, read: []string{"1 corrupt", "2 corrupt"}},
		{name: "intact journal", file: a + b, kept: a + b, lines: 2,
			read: []string{`1 {"id":"w1","kind":"spawned"}`, `2 {"id":"w1","kind":"settled"}`}},
		{name: "non-canonical spelling is still a record", file: `{ "b": 1, "a": 2 }` + "\r\n", kept: `{ "b": 1, "a": 2 }` + "\r\n", lines: 1,
			read: []string{`1 {"a":2,"b":1}`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeFile(t, tt.file)
			ctx := context.Background()
			before := readAll(t, journal.Read(ctx, path, 1, journal.Options{}))
			j := mustOpen(t, path, journal.Options{})
			want := journal.Recovery{TornBytes: int64(len(tt.file) - len(tt.kept)), Lines: tt.lines}
			if got := j.Recovery(); got != want {
				t.Errorf("Recovery() = %+v, want %+v", got, want)
			}
			if got := readFile(t, path); got != tt.kept {
				t.Errorf("file after Open = %q, want %q", got, tt.kept)
			}
			after := readAll(t, j.Read(ctx, 1))
			if strings.Join(before, "|") != strings.Join(tt.read, "|") || strings.Join(after, "|") != strings.Join(tt.read, "|") {
				t.Errorf("read before Open %q, after %q, want %q", before, after, tt.read)
			}
			seq, err := j.Append(ctx, rec(t, `{"kind":"next"}`))
			if err != nil || seq != tt.lines+1 {
				t.Errorf("Append after repair = %d, %v; want %d", seq, err, tt.lines+1)
			}
			if err := j.Close(); err != nil {
				t.Fatal(err)
			}
			// Repair is idempotent: a second Open finds nothing torn.
			j2 := mustOpen(t, path, journal.Options{})
			if got := j2.Recovery(); got.TornBytes != 0 || got.Lines != tt.lines+1 {
				t.Errorf("second Open: Recovery() = %+v", got)
			}
		})
	}
}

// Runtime spec §3.6: "a partial trailing line or corrupt line never
// poisons later valid lines" (and §15 item 71). A corrupt middle line is
// reported with its sequence number, the records after it keep theirs, and
// the writer keeps the line rather than dropping it.
func TestCorruptMiddleLines(t *testing.T) {
	const a, b = `{"a":1}` + "\n", `{"b":2}` + "\n"
	long := `{"pad":"` + strings.Repeat("x", 100) + `"}` + "\n"
	tests := []struct {
		name, file string
		read       []string
		cause      error // the first corrupt line's cause, if a sentinel
	}{
		{name: "invalid JSON", file: a + "{oops\n" + b, read: []string{`1 {"a":1}`, "2 corrupt", `3 {"b":2}`}},
		{name: "duplicate member names", file: a + `{"a":1,"a":2}` + "\n" + b, read: []string{`1 {"a":1}`, "2 corrupt", `3 {"b":2}`}},
		{name: "lone surrogate", file: `{"s":"\ud800"}` + "\n" + b, read: []string{"1 corrupt", `2 {"b":2}`}},
		{name: "empty line", file: a + "\n" + b, read: []string{`1 {"a":1}`, "2 corrupt", `3 {"b":2}`}},
		{name: "trailing data", file: a + `{"a":1} {}` + "\n" + b, read: []string{`1 {"a":1}`, "2 corrupt", `3 {"b":2}`}},
		{name: "line over the limit", file: a + long + b, read: []string{`1 {"a":1}`, "2 corrupt", `3 {"b":2}`}, cause: journal.ErrLineTooLong},
		{name: "several in a row", file: "x\n" + "y\n" + b, read: []string{"1 corrupt", "2 corrupt", `3 {"b":2}`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeFile(t, tt.file)
			opts := journal.Options{MaxRecordBytes: 64}
			ctx := context.Background()
			if got := readAll(t, journal.Read(ctx, path, 0, opts)); strings.Join(got, "|") != strings.Join(tt.read, "|") {
				t.Errorf("Read = %q, want %q", got, tt.read)
			}
			for _, err := range journal.Read(ctx, path, 0, opts) {
				var ce *journal.CorruptError
				if errors.As(err, &ce) {
					if ce.Err == nil || tt.cause != nil && !errors.Is(err, tt.cause) {
						t.Errorf("corrupt line cause = %v, want %v", ce.Err, tt.cause)
					}
					break
				}
			}
			j := mustOpen(t, path, opts)
			if got := j.Recovery().TornBytes; got != 0 {
				t.Errorf("Open truncated %d bytes of a journal whose tail is intact", got)
			}
			if got := readFile(t, path); got != tt.file {
				t.Errorf("Open changed the file: %q", got)
			}
			seq, err := j.Append(ctx, rec(t, `{"c":3}`))
			if err != nil || seq != int64(len(tt.read))+1 {
				t.Errorf("Append = %d, %v; want %d", seq, err, len(tt.read)+1)
			}
		})
	}
}

// The reader gathers at most MaxRecordBytes of a line: a line of many
// megabytes is reported without being held in memory.
func TestReadSkipsHugeLineWithBoundedMemory(t *testing.T) {
	huge := strings.Repeat("x", 32<<20)
	path := writeFile(t, `{"a":1}`+"\n"+huge+"\n"+`{"b":2}`+"\n")
	var before, after runtimeMem
	before.read()
	got := readAll(t, journal.Read(context.Background(), path, 1, journal.Options{MaxRecordBytes: 1024}))
	after.read()
	if want := []string{`1 {"a":1}`, "2 corrupt", `3 {"b":2}`}; strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("Read = %q, want %q", got, want)
	}
	if grew := after.totalAlloc - before.totalAlloc; grew > 4<<20 {
		t.Errorf("reading allocated %d bytes for a 32 MiB line with a 1 KiB limit", grew)
	}
}

type runtimeMem struct{ totalAlloc uint64 }

func (m *runtimeMem) read() {
	var s runtime.MemStats
	runtime.ReadMemStats(&s)
	m.totalAlloc = s.TotalAlloc
}

func TestReadFrom(t *testing.T) {
	path := writeFile(t, `{"a":1}`+"\n"+"bad\n"+`{"a":3}`+"\n"+`{"a":4}`+"\n")
	tests := []struct {
		from int64
		want []string
	}{
		{0, []string{`1 {"a":1}`, "2 corrupt", `3 {"a":3}`, `4 {"a":4}`}},
		{1, []string{`1 {"a":1}`, "2 corrupt", `3 {"a":3}`, `4 {"a":4}`}},
		{2, []string{"2 corrupt", `3 {"a":3}`, `4 {"a":4}`}},
		{3, []string{`3 {"a":3}`, `4 {"a":4}`}},
		{4, []string{`4 {"a":4}`}},
		{5, nil},
	}
	for _, tt := range tests {
		got := readAll(t, journal.Read(context.Background(), path, tt.from, journal.Options{}))
		if strings.Join(got, "|") != strings.Join(tt.want, "|") {
			t.Errorf("Read from %d = %q, want %q", tt.from, got, tt.want)
		}
	}
}

func TestReadErrors(t *testing.T) {
	dir := t.TempDir()
	canceled, cancel := context.WithCancelCause(context.Background())
	cause := errors.New("run stopped")
	cancel(cause)
	tests := []struct {
		name string
		ctx  context.Context
		path string
		opts journal.Options
		want error
	}{
		{"missing file", context.Background(), filepath.Join(dir, "absent.jsonl"), journal.Options{}, fs.ErrNotExist},
		{"canceled context", canceled, writeFile(t, `{"a":1}`+"\n"), journal.Options{}, cause},
		{"negative limit", context.Background(), writeFile(t, ""), journal.Options{MaxRecordBytes: -1}, journal.ErrInvalidOptions},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := 0
			for e, err := range journal.Read(tt.ctx, tt.path, 1, tt.opts) {
				n++
				if !errors.Is(err, tt.want) || e.Seq != 0 {
					t.Errorf("Read yielded %+v, %v; want error %v", e, err, tt.want)
				}
			}
			if n != 1 {
				t.Errorf("Read yielded %d items, want the one error", n)
			}
		})
	}
}

// Records are written as canonical JSON lines and numbered by line.
func TestAppendWritesCanonicalLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "coordination-log.jsonl")
	j := mustOpen(t, path, journal.Options{})
	ctx := context.Background()
	tests := []struct {
		records []string
		first   int64
	}{
		{[]string{`{"kind":"question","id":"q1","text":"é\u2028"}`}, 1},
		{[]string{`{"z":[1.0,2e0], "a":null}`, `[true]`, `"x"`}, 2},
		{nil, 0},
		{[]string{`{"kind":"finding"}`}, 5},
	}
	for _, tt := range tests {
		var vs []canonjson.Value
		for _, r := range tt.records {
			vs = append(vs, rec(t, r))
		}
		if first, err := j.Append(ctx, vs...); err != nil || first != tt.first {
			t.Errorf("Append(%q) = %d, %v; want %d", tt.records, first, err, tt.first)
		}
	}
	want := `{"id":"q1","kind":"question","text":"é` + "\u2028" + `"}` + "\n" +
		`{"a":null,"z":[1,2]}` + "\n" + "[true]\n" + `"x"` + "\n" + `{"kind":"finding"}` + "\n"
	if got := readFile(t, path); got != want {
		t.Errorf("file = %q, want %q", got, want)
	}
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if perm := info.Mode().Perm(); perm != 0o600 {
		t.Errorf("journal mode %v, want 0600", perm)
	}
}

// A record that is too large or has no canonical form refuses the whole
// batch, with a typed error naming the record; nothing is written.
func TestAppendRefusesBatch(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.jsonl")
	j := mustOpen(t, path, journal.Options{MaxRecordBytes: 16})
	ctx := context.Background()
	small := rec(t, `{"a":1}`)
	tests := []struct {
		name    string
		records []canonjson.Value
		check   func(error) bool
	}{
		{"record over the limit", []canonjson.Value{small, rec(t, `{"a":"0123456789ab"}`)}, func(err error) bool {
			var e *journal.TooLargeError
			return errors.As(err, &e) && e.Index == 1 && e.Size == 20 && e.Limit == 16
		}},
		{"lone surrogate", []canonjson.Value{rec(t, `{"s":"\udc00"}`), small}, func(err error) bool {
			var e *journal.RecordError
			var ce *canonjson.CanonicalError
			return errors.As(err, &e) && e.Index == 0 && errors.As(err, &ce)
		}},
		{"absent value", []canonjson.Value{small, {}}, func(err error) bool {
			var e *journal.RecordError
			return errors.As(err, &e) && e.Index == 1
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := j.Append(ctx, tt.records...); !tt.check(err) {
				t.Errorf("Append error = %v (%T)", err, err)
			}
			if got := readFile(t, path); got != "" {
				t.Errorf("a refused batch wrote %q", got)
			}
		})
	}
	if seq, err := j.Append(ctx, small); err != nil || seq != 1 {
		t.Errorf("Append after refusals = %d, %v; want 1", seq, err)
	}
}

// AppendOf and EnqueueOf write a Go record as the line Append writes
// for its ToValue, and refuse a batch as Append does: a record with no
// JSON form or no canonical form is a *RecordError naming it, one over
// the limit a *TooLargeError, and nothing of the batch is written.
func TestAppendOfWritesWhatAppendWrites(t *testing.T) {
	type line struct {
		Kind string            `json:"kind"`
		Text string            `json:"text,omitzero"`
		Nums map[string]int64  `json:"nums,omitzero"`
		Doc  canonjson.Value   `json:"doc,omitzero"`
		Ptr  *int64            `json:"ptr,omitzero"`
		Tags map[string]string `json:"tags,omitzero"`
	}
	dir := t.TempDir()
	ctx := context.Background()
	viaValue := mustOpen(t, filepath.Join(dir, "value.jsonl"), journal.Options{MaxRecordBytes: 200})
	viaGo := mustOpen(t, filepath.Join(dir, "go.jsonl"), journal.Options{MaxRecordBytes: 200})
	n := int64(-3)
	batches := [][]line{
		{{Kind: "spawned", Text: "é\u2028\"", Nums: map[string]int64{"\uffff": 1, "😀": 2}}},
		{{Kind: "settled", Doc: rec(t, `{"z":1,"a":[true,null]}`), Ptr: &n}, {Kind: "x"}},
	}
	for i, b := range batches {
		var vs []canonjson.Value
		var xs []any
		for k := range b {
			v, err := canonjson.ToValue(b[k])
			if err != nil {
				t.Fatal(err)
			}
			vs, xs = append(vs, v), append(xs, &b[k])
		}
		want, err := viaValue.Append(ctx, vs...)
		if err != nil {
			t.Fatal(err)
		}
		var got int64
		if i == 0 {
			got, err = viaGo.AppendOf(ctx, xs...)
		} else {
			var p *journal.Pending
			if p, err = viaGo.EnqueueOf(xs...); err == nil {
				got, err = p.Wait(ctx)
			}
		}
		if err != nil || got != want {
			t.Fatalf("batch %d: first seq %d, %v; Append gave %d", i, got, err, want)
		}
	}
	for _, tt := range []struct {
		name  string
		recs  []any
		check func(error) bool
	}{
		{"lone surrogate", []any{line{Kind: "a"}, line{Kind: "\xed\xb0\x80"}}, func(err error) bool {
			var e *journal.RecordError
			var ce *canonjson.CanonicalError
			return errors.As(err, &e) && e.Index == 1 && errors.As(err, &ce)
		}},
		{"no JSON form", []any{map[int]int{1: 1}}, func(err error) bool {
			var e *journal.RecordError
			var me *canonjson.MarshalError
			return errors.As(err, &e) && e.Index == 0 && errors.As(err, &me)
		}},
		{"absent", []any{line{Kind: "a"}, (*line)(nil)}, func(err error) bool {
			var e *journal.RecordError
			return errors.As(err, &e) && e.Index == 1
		}},
		{"over the limit", []any{line{Kind: strings.Repeat("k", 200)}}, func(err error) bool {
			var e *journal.TooLargeError
			return errors.As(err, &e) && e.Index == 0 && e.Limit == 200
		}},
	} {
		if _, err := viaGo.AppendOf(ctx, tt.recs...); !tt.check(err) {
			t.Errorf("%s: AppendOf error = %v (%T)", tt.name, err, err)
		}
		if _, err := viaGo.EnqueueOf(tt.recs...); !tt.check(err) {
			t.Errorf("%s: EnqueueOf error = %v (%T)", tt.name, err, err)
		}
	}
	if got, want := readFile(t, viaGo.Path()), readFile(t, viaValue.Path()); got != want || got == "" {
		t.Errorf("AppendOf wrote\n%s\nAppend wrote\n%s", got, want)
	}
}

func TestAppendCanceled(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.jsonl")
	j := mustOpen(t, path, journal.Options{})
	cause := errors.New("caller gave up")

	t.Run("before Append", func(t *testing.T) {
		ctx, cancel := context.WithCancelCause(context.Background())
		cancel(cause)
		if _, err := j.Append(ctx, rec(t, `{"a":1}`)); !errors.Is(err, cause) {
			t.Errorf("Append = %v, want the cause", err)
		}
	})
	t.Run("while waiting for a commit", func(t *testing.T) {
		release := j.HoldCommits()
		ctx, cancel := context.WithCancelCause(context.Background())
		done := make(chan error)
		go func() {
			_, err := j.Append(ctx, rec(t, `{"a":2}`))
			done <- err
		}()
		waitFor(t, func() bool { return j.Queued() == 1 })
		cancel(cause)
		if err := <-done; !errors.Is(err, cause) {
			t.Errorf("Append = %v, want the cause", err)
		}
		release()
		if j.Queued() != 0 {
			t.Error("a withdrawn batch stayed queued")
		}
	})
	if got := readFile(t, path); got != "" {
		t.Errorf("canceled appends wrote %q", got)
	}
	if seq, err := j.Append(context.Background(), rec(t, `{"a":3}`)); err != nil || seq != 1 {
		t.Errorf("Append = %d, %v; want 1", seq, err)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached in 5s")
		}
		time.Sleep(time.Millisecond)
	}
}

// Batches queued while a commit is in progress are written together and
// covered by one fsync; each caller gets its own contiguous sequence
// numbers.
func TestGroupCommit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.jsonl")
	j := mustOpen(t, path, journal.Options{})
	ctx := context.Background()
	const callers = 8
	release := j.HoldCommits()
	var wg sync.WaitGroup
	firsts := make([]int64, callers)
	for i := range callers {
		wg.Go(func() {
			first, err := j.Append(ctx, rec(t, fmt.Sprintf(`{"caller":%d,"part":0}`, i)), rec(t, fmt.Sprintf(`{"caller":%d,"part":1}`, i)))
			if err != nil {
				t.Error(err)
			}
			firsts[i] = first
		})
	}
	waitFor(t, func() bool { return j.Queued() == callers })
	release()
	wg.Wait()
	if got := j.Commits(); got != 1 {
		t.Errorf("%d fsyncs for %d queued batches, want 1", got, callers)
	}
	got := map[int64]string{}
	for e, err := range j.Read(ctx, 1) {
		if err != nil {
			t.Fatal(err)
		}
		got[e.Seq] = canon(t, e.Value)
	}
	for i, first := range firsts {
		for part := range 2 {
			if want := fmt.Sprintf(`{"caller":%d,"part":%d}`, i, part); got[first+int64(part)] != want {
				t.Errorf("seq %d = %s, want %s", first+int64(part), got[first+int64(part)], want)
			}
		}
	}
	if len(got) != 2*callers {
		t.Errorf("%d records, want %d", len(got), 2*callers)
	}
}

// Enqueue fixes a batch's place at once and Wait shares the fsync: batches
// queued in order under a caller's lock land in that order, one commit
// makes them all durable, a Wait whose context ended leaves the batch
// queued (a later commit writes it), and Close fails what nobody
// committed. (Issue 13: "fsync batched".)
func TestEnqueueKeepsOrderAndSharesFsync(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.jsonl")
	j := mustOpen(t, path, journal.Options{})
	ctx := context.Background()
	const n = 6
	release := j.HoldCommits()
	pending := make([]*journal.Pending, n)
	for i := range n {
		p, err := j.Enqueue(rec(t, fmt.Sprintf(`{"i":%d}`, i)))
		if err != nil {
			t.Fatal(err)
		}
		pending[i] = p
	}
	if got := j.Queued(); got != n {
		t.Fatalf("%d batches queued, want %d", got, n)
	}
	// A waiter that gives up does not withdraw its batch.
	gone, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := pending[2].Wait(gone); !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait with an ended context = %v, want context.Canceled", err)
	}
	release()
	// Waiting in reverse order: the last waiter commits the whole group.
	for i := n - 1; i >= 0; i-- {
		first, err := pending[i].Wait(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if first != int64(i+1) {
			t.Errorf("batch %d landed at seq %d, want %d", i, first, i+1)
		}
	}
	if got := j.Commits(); got != 1 {
		t.Errorf("%d fsyncs for %d queued batches, want 1", got, n)
	}
	var want []string
	for i := range n {
		want = append(want, fmt.Sprintf(`%d {"i":%d}`, i+1, i))
	}
	if diff := cmp.Diff(want, readAll(t, j.Read(ctx, 1))); diff != "" {
		t.Errorf("journal (-want +got):\n%s", diff)
	}
	if p, err := j.Enqueue(); err != nil || p == nil {
		t.Fatalf("Enqueue() = %v, %v", p, err)
	} else if first, err := p.Wait(ctx); first != 0 || err != nil {
		t.Errorf("empty Pending.Wait = %d, %v", first, err)
	}
	// A batch nobody waits for is failed by Close, not lost silently.
	release = j.HoldCommits()
	orphan, err := j.Enqueue(rec(t, `{"orphan":true}`))
	if err != nil {
		t.Fatal(err)
	}
	release()
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := orphan.Wait(ctx); !errors.Is(err, journal.ErrClosed) {
		t.Errorf("orphan batch after Close: %v, want ErrClosed", err)
	}
	if _, err := j.Enqueue(rec(t, `{"late":true}`)); !errors.Is(err, journal.ErrClosed) {
		t.Errorf("Enqueue after Close: %v, want ErrClosed", err)
	}
}

// Many goroutines appending at once: every acknowledged record is present
// under its sequence number, with no gaps.
func TestConcurrentAppends(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.jsonl")
	j := mustOpen(t, path, journal.Options{})
	ctx := context.Background()
	const goroutines, each = 8, 40
	var mu sync.Mutex
	acked := map[int64]string{}
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range each {
				text := fmt.Sprintf(`{"g":%d,"i":%d}`, g, i)
				seq, err := j.Append(ctx, rec(t, text))
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				acked[seq] = text
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	n := int64(0)
	for e, err := range journal.Read(ctx, path, 1, journal.Options{}) {
		if err != nil {
			t.Fatal(err)
		}
		n++
		if e.Seq != n || canon(t, e.Value) != acked[e.Seq] {
			t.Errorf("entry %d: seq %d %s, acknowledged %s", n, e.Seq, canon(t, e.Value), acked[e.Seq])
		}
	}
	if n != goroutines*each {
		t.Errorf("%d records, want %d", n, goroutines*each)
	}
	t.Logf("%d appends, %d fsyncs", goroutines*each, j.Commits())
}

// After a failed write the journal is poisoned: the failure and every later
// Append report the same *WriteError.
func TestWriteErrorPoisons(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.jsonl")
	j, err := journal.Open(path, journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := j.Append(ctx, rec(t, `{"a":1}`)); err != nil {
		t.Fatal(err)
	}
	j.BreakFile()
	for i := range 3 {
		var we *journal.WriteError
		if _, err := j.Append(ctx, rec(t, `{"a":2}`)); !errors.As(err, &we) || we.Op != "write" || !errors.Is(err, os.ErrClosed) {
			t.Errorf("Append %d after a failed write = %v, want the *WriteError", i, err)
		}
	}
	j.Close()
	j2 := mustOpen(t, path, journal.Options{})
	if got := readAll(t, j2.Read(ctx, 1)); strings.Join(got, "|") != `1 {"a":1}` {
		t.Errorf("after reopen: %q", got)
	}
}

func TestClose(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.jsonl")
	j, err := journal.Open(path, journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	if err := j.Close(); err != nil {
		t.Errorf("second Close = %v, want nil", err)
	}
	if _, err := j.Append(context.Background(), rec(t, `{}`)); !errors.Is(err, journal.ErrClosed) {
		t.Errorf("Append after Close = %v", err)
	}
	for _, err := range j.Read(context.Background(), 1) {
		if !errors.Is(err, journal.ErrClosed) {
			t.Errorf("Read after Close = %v", err)
		}
	}
}

// Close fails batches still waiting for a commit with ErrClosed.
func TestCloseFailsQueuedBatches(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.jsonl")
	j, err := journal.Open(path, journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	release := j.HoldCommits()
	done := make(chan error)
	go func() {
		_, err := j.Append(context.Background(), rec(t, `{"a":1}`))
		done <- err
	}()
	waitFor(t, func() bool { return j.Queued() == 1 })
	closed := make(chan error)
	go func() { closed <- j.Close() }()
	waitFor(t, j.Closing)
	release()
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, journal.ErrClosed) {
		t.Errorf("queued Append = %v, want ErrClosed", err)
	}
	if got := readFile(t, path); got != "" {
		t.Errorf("file = %q", got)
	}
}

func TestOpenOptions(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name string
		path string
		opts journal.Options
		want error
	}{
		{"missing parent directory", filepath.Join(dir, "run", "spawn-journal.jsonl"), journal.Options{}, fs.ErrNotExist},
		{"parent created on request", filepath.Join(dir, "run2", "sub", "spawn-journal.jsonl"), journal.Options{CreateDir: true}, nil},
		{"negative record limit", filepath.Join(dir, "j.jsonl"), journal.Options{MaxRecordBytes: -1}, journal.ErrInvalidOptions},
		{"a directory", dir, journal.Options{}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j, err := journal.Open(tt.path, tt.opts)
			if tt.path == dir {
				if err == nil {
					j.Close()
					t.Fatal("Open of a directory succeeded")
				}
				return
			}
			if !errors.Is(err, tt.want) {
				t.Fatalf("Open = %v, want %v", err, tt.want)
			}
			if err != nil {
				return
			}
			defer j.Close()
			info, err := os.Stat(filepath.Dir(tt.path))
			if err != nil {
				t.Fatal(err)
			}
			if perm := info.Mode().Perm(); perm != 0o700 {
				t.Errorf("created directory mode %v, want 0700", perm)
			}
		})
	}
}

// Two writers never share a journal: a second Open is refused with a
// *LockedError naming the holder until the first is closed.
func TestLockInProcess(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.jsonl")
	j, err := journal.Open(path, journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = journal.Open(path, journal.Options{})
	var le *journal.LockedError
	if !errors.As(err, &le) || le.Path != path {
		t.Fatalf("second Open = %v, want *LockedError", err)
	}
	checkHolder(t, le, os.Getpid())
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	j2, err := journal.Open(path, journal.Options{})
	if err != nil {
		t.Fatalf("Open after Close = %v", err)
	}
	j2.Close()
}

// Open finds the last lines wherever its read buffer splits the file.
func TestRepairAcrossBufferBoundaries(t *testing.T) {
	const b = `{"b":1}` + "\n"
	tails := []struct {
		tail  string
		torn  int64
		lines int64
	}{
		{"{x\n", 3, 2},
		{"{x\n{y\n", 0, 4},
		{"{x", 2, 2},
		{"\n{x", 3, 2},
		{"", 0, 2},
	}
	for size := 1<<16 - 24; size <= 1<<16+8; size++ {
		a := `{"p":"` + strings.Repeat("x", size-len(`{"p":""}`+"\n")) + `"}` + "\n"
		for _, tt := range tails {
			path := writeFile(t, a+b+tt.tail)
			j, err := journal.Open(path, journal.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if got := j.Recovery(); got.TornBytes != tt.torn || got.Lines != tt.lines {
				t.Errorf("first line %d bytes, tail %q: Recovery() = %+v, want %d torn, %d lines", size, tt.tail, got, tt.torn, tt.lines)
			}
			j.Close()
		}
	}
}

// NoSync keeps everything but the flush: the file is locked, records are
// written as canonical lines, a torn tail is repaired on the next Open
// and readers see the same records as for a synced journal.
func TestNoSyncWritesLocksAndRepairs(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "worker.ndjson")
	ctx := context.Background()
	j, err := journal.Open(path, journal.Options{NoSync: true, CreateDir: true})
	if err != nil {
		t.Fatal(err)
	}
	if first, err := j.Append(ctx, rec(t, `{"kind":"spawned"}`), rec(t, `{"kind":"event"}`)); err != nil || first != 1 {
		t.Fatalf("Append = %d, %v; want 1", first, err)
	}
	if _, err := journal.Open(path, journal.Options{NoSync: true}); !errors.As(err, new(*journal.LockedError)) {
		t.Fatalf("second Open = %v, want a *LockedError", err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(`{"kind":"sett`); err != nil {
		t.Fatal(err)
	}
	f.Close()
	j = mustOpen(t, path, journal.Options{NoSync: true})
	if got := j.Recovery(); got.TornBytes != int64(len(`{"kind":"sett`)) || got.Lines != 2 {
		t.Errorf("Recovery = %+v, want the 13 torn bytes cut and 2 lines", got)
	}
	if first, err := j.Append(ctx, rec(t, `{"kind":"settled"}`)); err != nil || first != 3 {
		t.Fatalf("Append after repair = %d, %v; want 3", first, err)
	}
	want := []string{`1 {"kind":"spawned"}`, `2 {"kind":"event"}`, `3 {"kind":"settled"}`}
	if diff := cmp.Diff(want, readAll(t, journal.Read(ctx, path, 1, journal.Options{}))); diff != "" {
		t.Errorf("records (-want +got):\n%s", diff)
	}
}

// Size counts the bytes Open kept (a torn tail repaired away is not
// counted) and each committed batch, newline included; a refused batch
// adds nothing. It is what a writer bounding its file by size reads
// instead of encoding its records a second time.
func TestSizeCountsCommittedBytes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.jsonl")
	if err := os.WriteFile(path, []byte(`{"a":1}`+"\n"+`{"b":`), 0o600); err != nil {
		t.Fatal(err)
	}
	j := mustOpen(t, path, journal.Options{MaxRecordBytes: 16, NoSync: true})
	ctx := context.Background()
	steps := []struct {
		name    string
		records []canonjson.Value
		want    int64
	}{
		{"after the repair", nil, 8},
		{"one record", []canonjson.Value{rec(t, `{"c":2}`)}, 16},
		{"a batch of two", []canonjson.Value{rec(t, `[1]`), rec(t, `"x"`)}, 24},
		{"a refused batch", []canonjson.Value{rec(t, `{"d":"0123456789abcdef"}`)}, 24},
	}
	for _, s := range steps {
		if len(s.records) > 0 {
			_, _ = j.Append(ctx, s.records...)
		}
		if got := j.Size(); got != s.want {
			t.Errorf("%s: Size() = %d, want %d", s.name, got, s.want)
		}
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Size() != s.want {
			t.Errorf("%s: the file holds %d bytes, want %d", s.name, fi.Size(), s.want)
		}
	}
}

// A batch already durable has an outcome its Wait knows: Wait returns
// it whatever ctx is, not the ended context's error half the time (the
// wait's select had both its batch's done and ctx's end ready).
func TestPendingWaitOnADurableBatchReturnsItsOutcome(t *testing.T) {
	j := mustOpen(t, filepath.Join(t.TempDir(), "j.jsonl"), journal.Options{NoSync: true})
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	for i := range 300 {
		p, err := j.Enqueue(rec(t, fmt.Sprintf(`{"i":%d}`, i)))
		if err != nil {
			t.Fatal(err)
		}
		first, err := p.Wait(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if again, err := p.Wait(gone); again != first || err != nil {
			t.Fatalf("run %d: Wait on the durable batch with an ended context = %d, %v; want %d, nil", i, again, err, first)
		}
	}
}
