package conversation_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/journal"
	"github.com/agentrt/agentrt/journal/conversation"
	"github.com/agentrt/agentrt/journal/conversation/conversationtest"
)

func readText(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func appendText(t *testing.T, path, text string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(text); err != nil {
		t.Fatal(err)
	}
}

// Behaviour 61 (spec §15; RES-04): a torn trailing line is ignored on
// load and truncated before the next append, whether the crash left a
// fragment without '\n' or a complete line that is not a record.
func TestFileTornTailIgnoredAndTruncatedBehaviour61(t *testing.T) {
	for _, torn := range []string{`{"kind":"turn","runId":"r","tu`, "{\"kind\":\"tu\n", "\x00\x00\x00\x00"} {
		t.Run("", func(t *testing.T) {
			ctx := context.Background()
			path := filepath.Join(t.TempDir(), "c.jsonl")
			f := openFile(t, path, conversation.Limits{})
			mustBegin(t, f, "r")
			t0, t1 := conversationtest.MakeTurn("r", 0, "a"), conversationtest.MakeTurn("r", 1, "b")
			if err := f.AppendTurn(ctx, "r", t0); err != nil {
				t.Fatal(err)
			}
			f.Close()
			good := readText(t, path)
			appendText(t, path, torn)

			var logged bytes.Buffer
			f, err := conversation.OpenFile(ctx, path, conversation.FileOptions{Logger: slog.New(slog.NewTextHandler(&logged, nil))})
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if got := f.Recovery().TornBytes; got != int64(len(torn)) || !strings.Contains(logged.String(), fmt.Sprintf("bytes=%d", len(torn))) {
				t.Fatalf("TornBytes = %d, logged %q; want %d", got, logged.String(), len(torn))
			}
			e, err := f.LoadRun(ctx, "r")
			if err != nil || e.NextIndex() != 1 {
				t.Fatalf("LoadRun = %+v, %v; want the one committed turn", e, err)
			}
			if err := f.AppendTurn(ctx, "r", t1); err != nil {
				t.Fatal(err)
			}
			after := readText(t, path)
			added, ok := strings.CutPrefix(after, good)
			if ok {
				_, err := canonjson.Decode([]byte(strings.TrimSuffix(added, "\n")))
				ok = err == nil && strings.Count(added, "\n") == 1 && strings.HasSuffix(added, "\n")
			}
			if !ok {
				t.Fatalf("file after the next append:\n%s\nwant the good lines and one new record", after)
			}
		})
	}
}

// Records written by another writer in another member order (the
// reference serializes with JSON.stringify) load, and a retry of a turn
// recorded that way is recognised as the same turn.
func TestFileReadsReferenceRecords(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.jsonl")
	lines := []string{
		`{"kind":"begin","runId":"run_abc","startedAt":"2026-12-01T12:00:00.000Z"}`,
		`{"kind":"turn","runId":"run_abc","turn":{"index":0,"speaker":"Researcher","turnId":"run_abc.t0.researcher","sessionId":"s1","text":"hi","usage":{"tokensIn":3,"costUsd":0.5},"attempts":1,"startedAt":"2026-12-01T12:00:00.000Z","endedAt":"2026-12-01T12:00:00.500Z"}}`,
		`{"kind":"halt","runId":"other","halted":{"kind":"abort"},"endedAt":"2026-12-01T12:00:00.000Z"}`,
	}
	// The halt of a run never begun makes the file corrupt; leave it out
	// first, then check that it is refused.
	if err := os.WriteFile(path, []byte(strings.Join(lines[:2], "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f := openFile(t, path, conversation.Limits{})
	e, err := f.LoadRun(context.Background(), "run_abc")
	if err != nil {
		t.Fatal(err)
	}
	want := conversationtest.MakeTurn("run_abc", 0, "Researcher")
	want.SessionID, want.Text = "s1", "hi"
	in, cost := int64(3), 0.5
	want.Usage = &conversation.Usage{TokensIn: &in, CostUSD: &cost}
	if diff := cmp.Diff([]conversation.Turn{want}, e.Turns); diff != "" {
		t.Fatalf("turns (-want +got):\n%s", diff)
	}
	if err := f.AppendTurn(context.Background(), "run_abc", want); err != nil {
		t.Fatalf("retrying the recorded turn: %v", err)
	}
	f.Close()
	appendText(t, path, lines[2]+"\n"+lines[0]+"\n")
	_, err = conversation.OpenFile(context.Background(), path, conversation.FileOptions{})
	var ce *conversation.CorruptError
	if !errors.As(err, &ce) || ce.Where != "line 3" || !errors.Is(err, conversation.ErrUnknownRun) {
		t.Fatalf("OpenFile with a halt before its begin = %v, want a *CorruptError at line 3", err)
	}
}

// A file that lost or contradicts an acknowledged record is refused with
// the line that shows it, never silently resumed from.
func TestFileCorruptionIsRefused(t *testing.T) {
	begin := `{"kind":"begin","runId":"r","startedAt":"2026-12-01T12:00:00.000Z"}`
	turn := func(i, text string) string {
		return `{"kind":"turn","runId":"r","turn":{"attempts":1,"endedAt":"2026-12-01T12:00:01.000Z","index":` + i + `,"speaker":"a","startedAt":"2026-12-01T12:00:00.000Z","text":"` + text + `","turnId":"r.t` + i + `.a"}}`
	}
	cases := []struct {
		name  string
		lines []string
		where string
		cause error
	}{
		{"turn before begin", []string{turn("0", "x"), begin}, "line 1", conversation.ErrUnknownRun},
		{"gap", []string{begin, turn("1", "x"), begin}, "line 2", conversation.ErrOutOfOrder},
		{"another turn at an index", []string{begin, turn("0", "x"), turn("0", "y"), begin}, "line 3", conversation.ErrConflict},
		{"another start", []string{begin, strings.Replace(begin, "12:00", "13:00", 1), begin}, "line 2", conversation.ErrConflict},
		{"bad line in the middle", []string{begin, "not json", begin}, "line 2", nil},
		{"unknown kind", []string{begin, `{"kind":"note","runId":"r"}`, begin}, "line 2", nil},
		{"unknown member", []string{begin, strings.Replace(begin, `"kind"`, `"extra":1,"kind"`, 1), begin}, "line 2", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "c.jsonl")
			if err := os.WriteFile(path, []byte(strings.Join(c.lines, "\n")+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := conversation.OpenFile(context.Background(), path, conversation.FileOptions{})
			var ce *conversation.CorruptError
			if !errors.As(err, &ce) || ce.Where != c.where || ce.Source != path {
				t.Fatalf("OpenFile = %v, want a *CorruptError at %s", err, c.where)
			}
			if c.cause != nil && !errors.Is(err, c.cause) {
				t.Fatalf("OpenFile = %v, want cause %v", err, c.cause)
			}
		})
	}
}

func TestFileIsLockedAgainstASecondWriter(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.jsonl")
	openFile(t, path, conversation.Limits{})
	_, err := conversation.OpenFile(context.Background(), path, conversation.FileOptions{})
	var le *journal.LockedError
	if !errors.As(err, &le) || le.PID != os.Getpid() && le.PID != 0 {
		t.Fatalf("second OpenFile = %v, want a *journal.LockedError", err)
	}
}

// Each record is one canonical line, fsynced through package journal, so
// a reader of the raw file (the reference's, or journal.Read) sees it.
func TestFileRecordsAreCanonicalLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "c.jsonl")
	f, err := conversation.OpenFile(context.Background(), path, conversation.FileOptions{CreateDir: true})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	mustBegin(t, f, "r")
	if err := f.RecordHalt(context.Background(), "r", conversation.Halt{Kind: conversation.HaltMaxTurns, Turns: 0}, conversationtest.T0); err != nil {
		t.Fatal(err)
	}
	want := `{"kind":"begin","runId":"r","startedAt":"2026-12-01T12:00:00.000Z"}` + "\n" +
		`{"endedAt":"2026-12-01T12:00:00.000Z","halted":{"kind":"max_turns","turns":0},"kind":"halt","runId":"r"}` + "\n"
	if got := readText(t, path); got != want {
		t.Fatalf("file:\n%s\nwant:\n%s", got, want)
	}
}

func mustBegin(t *testing.T, j conversation.Journal, runID string) {
	t.Helper()
	if err := j.BeginRun(context.Background(), runID, conversationtest.T0); err != nil {
		t.Fatal(err)
	}
}
