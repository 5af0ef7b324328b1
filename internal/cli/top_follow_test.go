package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
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

// A run dir followed across looks shows, at every look, what a fresh
// read of the whole journal shows: appended records, a torn line
// completed later, a run-started record after the spawns it names the
// root of, a journal replaced by another run's, a run dir removed (an
// error naming it missing, the others still read) and created again.
func TestTopFollowMatchesAFreshRead(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	src := &topSource{dirs: []string{dir}}
	check := func(step string) {
		t.Helper()
		got := src.load(ctx)
		want, err := readSuperviseRun(ctx, dir)
		if err != nil {
			t.Fatalf("%s: a fresh read: %v", step, err)
		}
		if len(got.Errors) != 0 || len(got.Runs) != 1 {
			t.Fatalf("%s: the follow read %d runs, errors %v", step, len(got.Runs), got.Errors)
		}
		if diff := cmp.Diff(want, got.Runs[0], cmp.AllowUnexported(topRun{}, topWorker{}, tokenSum{})); diff != "" {
			t.Fatalf("%s: the follow differs from a fresh read (-fresh +follow):\n%s", step, diff)
		}
	}
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
