package journal_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/journal"
)

// fuzzLimit is small so that fuzzed lines are often too long.
const fuzzLimit = 32

var fuzzSeeds = []string{
	"", "\n", "\n\n", `{"a":1}` + "\n", `{"a":1}`, `{"a":1}` + "\n{", `{"a":1}` + "\n{\n",
	`{"a":1}` + "\nx\ny\n", `{"s":"\ud800"}` + "\n", `[1e999]` + "\n" + `{"a":1}` + "\n",
	`{"pad":"0123456789012345678901234567890123456789"}` + "\n" + `{"a":1}` + "\n",
	"\x00\x00\x00", `{"a":1}` + "\r\n" + `"x"` + "\n", "\xff\n" + `{}` + "\n",
}

// model is what a reader must yield for a file, computed line by line
// from the package's documented rules rather than its scanner.
func model(data []byte) []string {
	lines := bytes.Split(data, []byte{'\n'})
	lines = lines[:len(lines)-1] // the bytes after the last '\n' are a torn fragment
	good := func(line []byte) (string, bool) {
		if len(line) > fuzzLimit {
			return "", false
		}
		v, err := canonjson.Decode(line)
		if err != nil {
			return "", false
		}
		c, err := canonjson.Canonical(v)
		return string(c), err == nil
	}
	var out []string
	for i, line := range lines {
		seq := i + 1
		if c, ok := good(line); ok {
			out = append(out, fmt.Sprintf("%d %s", seq, c))
			continue
		}
		if seq == len(lines) {
			if seq == 1 {
				continue // a torn tail: the only line
			}
			if _, prevOK := good(lines[i-1]); prevOK {
				continue // a torn tail: the last line, after a record
			}
		}
		out = append(out, fmt.Sprintf("%d corrupt", seq))
	}
	return out
}

// readStrict is readAll that also checks every record has a canonical
// form and every error is a *CorruptError.
func readStrict(t *testing.T, seq func(func(journal.Entry, error) bool)) []string {
	t.Helper()
	var out []string
	last := int64(0)
	for e, err := range seq {
		var ce *journal.CorruptError
		switch {
		case errors.As(err, &ce):
			if ce.Seq <= last || ce.Err == nil || ce.Length < 0 {
				t.Fatalf("bad corrupt report %+v after seq %d", ce, last)
			}
			last = ce.Seq
			out = append(out, fmt.Sprintf("%d corrupt", ce.Seq))
		case err != nil:
			t.Fatalf("read: %v", err)
		default:
			c, err := canonjson.Canonical(e.Value)
			if err != nil || e.Seq <= last {
				t.Fatalf("yielded seq %d (after %d) without canonical form: %v", e.Seq, last, err)
			}
			last = e.Seq
			out = append(out, fmt.Sprintf("%d %s", e.Seq, c))
		}
	}
	return out
}

// FuzzRead: arbitrary file bytes never make the reader panic or yield a
// record without canonical form, and it yields exactly what the rules say
// (runtime spec §3.6: a torn or corrupt line never poisons later ones).
func FuzzRead(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s), int64(0))
	}
	f.Fuzz(func(t *testing.T, data []byte, from int64) {
		path := filepath.Join(t.TempDir(), "j.jsonl")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		opts := journal.Options{MaxRecordBytes: fuzzLimit}
		got := readStrict(t, journal.Read(context.Background(), path, 1, opts))
		if want := model(data); !slices.Equal(got, want) {
			t.Fatalf("Read(%q) = %q, want %q", data, got, want)
		}
		// Reading from a later sequence number yields a suffix.
		from = from%8 + 1
		var suffix []string
		for _, s := range got {
			var seq int64
			fmt.Sscan(s, &seq)
			if seq >= from {
				suffix = append(suffix, s)
			}
		}
		if part := readStrict(t, journal.Read(context.Background(), path, from, opts)); !slices.Equal(part, suffix) {
			t.Fatalf("Read from %d = %q, want %q", from, part, suffix)
		}
	})
}

// FuzzOpen: after Open, whatever the file held, it is a prefix of what it
// held that ends at a line boundary; the bytes dropped are reported;
// readers yield the same before and after; a second Open repairs nothing;
// and the next record is numbered after every line kept.
func FuzzOpen(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "j.jsonl")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		opts := journal.Options{MaxRecordBytes: fuzzLimit}
		ctx := context.Background()
		before := readStrict(t, journal.Read(ctx, path, 1, opts))
		j, err := journal.Open(path, opts)
		if err != nil {
			t.Fatal(err)
		}
		after, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		rec := j.Recovery()
		if !bytes.HasPrefix(data, after) || int64(len(data)-len(after)) != rec.TornBytes {
			t.Fatalf("Open(%q) left %q, reporting %d bytes dropped", data, after, rec.TornBytes)
		}
		if len(after) > 0 && after[len(after)-1] != '\n' || int64(bytes.Count(after, []byte{'\n'})) != rec.Lines {
			t.Fatalf("Open(%q) left %q (%+v): not whole lines", data, after, rec)
		}
		if got := readStrict(t, j.Read(ctx, 1)); !slices.Equal(got, before) {
			t.Fatalf("Open(%q): read before %q, after %q", data, before, got)
		}
		seq, err := j.Append(ctx, canonjson.ObjectValue(nil))
		if err != nil || seq != rec.Lines+1 {
			t.Fatalf("Append = %d, %v; want %d", seq, err, rec.Lines+1)
		}
		if err := j.Close(); err != nil {
			t.Fatal(err)
		}
		j2, err := journal.Open(path, opts)
		if err != nil {
			t.Fatal(err)
		}
		defer j2.Close()
		if got := j2.Recovery(); got.TornBytes != 0 || got.Lines != rec.Lines+1 {
			t.Fatalf("second Open(%q): %+v", data, got)
		}
		if got := readStrict(t, j2.Read(ctx, 1)); !slices.Equal(got, append(before, fmt.Sprintf("%d {}", seq))) {
			t.Fatalf("after Append: %q, want %q then the new record", got, before)
		}
	})
}
