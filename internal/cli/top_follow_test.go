package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/supervise"
)

// followLines are a supervise run's journal lines: a run-started record
// (put after the first spawns by the "late start" step, so the fold must
// fold them again once it learns the root), spawns, settlements and a
// finish.
func followLine(i int) string {
	switch {
	case i%3 == 0:
		return fmt.Sprintf(`{"kind":"spawned","label":"w%d","node":"sup-1:s%d","reserved":{"tokens":100},"task":"task %d"}`, i%4, i, i) + "\n"
	case i%3 == 1:
		return fmt.Sprintf(`{"kind":"settled","node":"sup-1:s%d","spent":{"iterations":1,"microUsd":5,"tokens":10},"state":"done","verdict":{"passed":true}}`, i-1) + "\n"
	default:
		return fmt.Sprintf(`{"kind":"spawned","label":"n%d","node":"sup-1:s%d:s%d","parent":"sup-1:s%d","task":"nested %d"}`, i%4, i-2, i, i-2, i) + "\n"
	}
}

func appendJournal(t testing.TB, dir, s string) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(dir, "spawn-journal.jsonl"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
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

// checkFollowIsAFreshRead fails t unless src's next look at run dir dir
// is what a fresh read of it shows (step names the moment).
func checkFollowIsAFreshRead(t *testing.T, ctx context.Context, src *topSource, dir, step string) {
	t.Helper()
	got := src.load(ctx)
	want, err := readSuperviseRun(ctx, dir)
	if err != nil {
		t.Fatalf("%s: a fresh read: %v", step, err)
	}
	if len(got.Errors) != 0 || len(got.Runs) != 1 {
		t.Fatalf("%s: the follow read %d runs, errors %v", step, len(got.Runs), got.Errors)
	}
	if diff := cmp.Diff(want, got.Runs[0], cmp.AllowUnexported(topRun{}, topWorker{}, tokenSum{}, topTotals{}, topUSD{})); diff != "" {
		t.Fatalf("%s: the follow differs from a fresh read (-fresh +follow):\n%s", step, diff)
	}
}

// A run dir followed across looks shows, at every look, what a fresh
// read of the whole journal shows: appended records, a torn line
// completed later, a run-started record after the spawns it names the
// root of, a journal replaced by another run's, a run dir removed (an
// error naming it missing, the others still read) and created again.
func TestTopFollowMatchesAFreshRead(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	src := &topSource{dirs: []string{dir}}
	check := func(step string) { t.Helper(); checkFollowIsAFreshRead(t, ctx, src, dir, step) }
	appendJournal(t, dir, followLine(0)+followLine(1)+followLine(2))
	check("spawns before any run-started record")
	appendJournal(t, dir, `{"kind":"run-started","runId":"sup-1","startedAtMs":1772366400000,"task":"the run"}`+"\n")
	check("a late run-started record")
	for i := 3; i < 700; i++ {
		appendJournal(t, dir, followLine(i))
		if i%97 == 0 {
			check(fmt.Sprintf("record %d", i))
		}
	}
	torn := followLine(700)
	appendJournal(t, dir, torn[:25])
	check("a torn line")
	appendJournal(t, dir, torn[25:]+"not json\n"+`{"kind":"finished","outcome":"winner","reason":"done"}`+"\n")
	check("the torn line completed, a corrupt line, the finish")

	tmp := filepath.Join(t.TempDir(), "j")
	if err := os.WriteFile(tmp, []byte(`{"kind":"run-started","runId":"sup-2","task":"another run"}`+"\n"+followLine(0)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, "spawn-journal.jsonl")); err != nil {
		t.Fatal(err)
	}
	check("the journal replaced by another run's")
	if got := src.load(ctx).Runs[0].ID; got != "sup-2" {
		t.Fatalf("the replaced journal's run is %q, want sup-2", got)
	}

	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if snap := src.load(ctx); len(snap.Runs) != 0 || len(snap.Errors) != 1 {
		t.Fatalf("a removed run dir: %d runs, errors %v; want one error", len(snap.Runs), snap.Errors)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	appendJournal(t, dir, `{"kind":"run-started","runId":"sup-3","task":"a third run"}`+"\n")
	check("the run dir created again")
}

// BenchmarkTopLook measures one look at a run whose journal holds 5,000
// records and gained one since the last look: "fresh" reads the whole
// journal (what every look did before), "follow" reads what is new.
func BenchmarkTopLook(b *testing.B) {
	ctx := context.Background()
	dir := b.TempDir()
	appendJournal(b, dir, `{"kind":"run-started","runId":"sup-1","task":"the run"}`+"\n")
	for i := 0; i < 5000; i++ {
		appendJournal(b, dir, followLine(i))
	}
	b.Run("fresh", func(b *testing.B) {
		for b.Loop() {
			appendJournal(b, dir, followLine(1))
			if _, err := readSuperviseRun(ctx, dir); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("follow", func(b *testing.B) {
		src := &topSource{dirs: []string{dir}}
		src.load(ctx)
		for b.Loop() {
			appendJournal(b, dir, followLine(1))
			if snap := src.load(ctx); len(snap.Errors) != 0 {
				b.Fatal(snap.Errors)
			}
		}
	})
}

// workerLogLine is a turn-ended line of worker sup-1:s0's log.
func workerLogLine(i int) string {
	return fmt.Sprintf(`{"atMs":%d,"inputTokens":3,"kind":"turn-ended","node":"sup-1:s0","outputTokens":4,"terminal":"completed"}`, 1772366400000+i) + "\n"
}

func appendWorkerLog(t testing.TB, dir, s string) {
	t.Helper()
	path := supervise.WorkerLogPath(dir, "w0")
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	appendFile(t, path, s)
}

// appendFile appends s to the file at path, creating it.
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

// followedWorkerLogDir is a run dir of one worker, w0, whose log holds n
// turn-ended lines.
func followedWorkerLogDir(t testing.TB, n int) string {
	t.Helper()
	dir := t.TempDir()
	appendJournal(t, dir, `{"kind":"run-started","runId":"sup-1","task":"the run"}`+"\n"+
		`{"kind":"spawned","label":"w0","node":"sup-1:s0","task":"work"}`+"\n")
	var b strings.Builder
	for i := range n {
		b.WriteString(workerLogLine(i))
	}
	appendWorkerLog(t, dir, b.String())
	return dir
}

// A followed run's look reads what its worker logs gained since the last
// look, not each log again from its start: with 10^5 lines in a worker's
// log and one appended, a look allocates under 1 MiB (a whole read
// decodes every line, some 60 MB), and the worker's totals still count
// every line.
func TestTopFollowReadsOnlyWhatWorkerLogsGained(t *testing.T) {
	ctx := context.Background()
	const n = 100_000
	dir := followedWorkerLogDir(t, n)
	src := &topSource{dirs: []string{dir}}
	if snap := src.load(ctx); len(snap.Errors) != 0 || len(snap.Runs) != 1 {
		t.Fatalf("first look: %d runs, errors %v", len(snap.Runs), snap.Errors)
	}
	appendWorkerLog(t, dir, workerLogLine(n))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	snap := src.load(ctx)
	runtime.ReadMemStats(&after)
	if len(snap.Errors) != 0 || len(snap.Runs) != 1 || len(snap.Runs[0].Workers) != 1 {
		t.Fatalf("second look: %d runs, errors %v", len(snap.Runs), snap.Errors)
	}
	w := snap.Runs[0].Workers[0]
	if !w.tokIn.known || w.tokIn.n != 3*(n+1) || w.tokOut.n != 4*(n+1) {
		t.Fatalf("worker tokens in %+v out %+v, want %d and %d", w.tokIn, w.tokOut, 3*(n+1), 4*(n+1))
	}
	if len(w.Log) != topLogTail {
		t.Fatalf("worker log tail holds %d lines, want %d", len(w.Log), topLogTail)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 1<<20 {
		t.Fatalf("a look after one appended worker log line allocated %d bytes, want under %d", got, 1<<20)
	}
}

// A run dir whose worker logs grow between looks shows, at every look,
// what a fresh read of the journal and every log shows: lines appended,
// a torn line completed later, a corrupt line, a log replaced by a
// shorter one and a log removed.
func TestTopFollowWorkerLogsMatchAFreshRead(t *testing.T) {
	ctx := context.Background()
	dir := followedWorkerLogDir(t, 10)
	appendJournal(t, dir, `{"kind":"spawned","label":"w1","node":"sup-1:s1","task":"more work"}`+"\n")
	src := &topSource{dirs: []string{dir}}
	check := func(step string) { t.Helper(); checkFollowIsAFreshRead(t, ctx, src, dir, step) }
	check("a log read whole")
	w1 := supervise.WorkerLogPath(dir, "w1")
	appendTo := func(path, s string) { t.Helper(); appendFile(t, path, s) }
	appendTo(w1, `{"atMs":1772366400000,"kind":"spawned","node":"sup-1:s1"}`+"\n")
	check("a second log started")
	for i := 10; i < 500; i++ {
		appendWorkerLog(t, dir, workerLogLine(i))
		if i%3 == 0 {
			appendTo(w1, `{"atMs":1772366400001,"kind":"turn-ended","node":"sup-1:s1"}`+"\n")
		}
		if i%61 == 0 {
			check(fmt.Sprintf("line %d", i))
		}
	}
	torn := workerLogLine(500)
	appendWorkerLog(t, dir, torn[:30])
	check("a torn line")
	appendWorkerLog(t, dir, torn[30:]+"not json\n"+`[1,2]`+"\n"+workerLogLine(501))
	appendTo(w1, `{"atMs":1772366409000,"kind":"settled","node":"sup-1:s1","state":"done"}`+"\n")
	check("the torn line completed, corrupt lines, a settlement")

	tmp := filepath.Join(t.TempDir(), "log")
	if err := os.WriteFile(tmp, []byte(workerLogLine(0)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, supervise.WorkerLogPath(dir, "w0")); err != nil {
		t.Fatal(err)
	}
	check("a log replaced by a shorter one")
	if err := os.Remove(w1); err != nil {
		t.Fatal(err)
	}
	check("a log removed")
	appendTo(w1, `{"atMs":1772366400000,"kind":"spawned","node":"sup-1:s1"}`+"\n")
	check("a removed log written again")
}

// BenchmarkTopLookWorkerLog measures one look at a followed run whose
// worker log holds 10^3, 10^4 or 10^5 lines and gained one since the
// last look: its cost follows what was appended, not the log's length.
func BenchmarkTopLookWorkerLog(b *testing.B) {
	ctx := context.Background()
	for _, n := range []int{1_000, 10_000, 100_000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			dir := followedWorkerLogDir(b, n)
			src := &topSource{dirs: []string{dir}}
			src.load(ctx)
			b.ReportAllocs()
			for b.Loop() {
				appendWorkerLog(b, dir, workerLogLine(n))
				if snap := src.load(ctx); len(snap.Errors) != 0 {
					b.Fatal(snap.Errors)
				}
			}
		})
	}
}
