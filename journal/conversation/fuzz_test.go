package conversation

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/canonjson"
)

var recordSeeds = []string{
	`{"kind":"begin","runId":"r","startedAt":"2026-12-01T12:00:00.000Z"}`,
	`{"kind":"turn","runId":"r","turn":{"attempts":2,"endedAt":"2026-12-01T12:00:01.000Z","index":0,"sessionId":"s","speaker":"a","startedAt":"2026-12-01T12:00:00.000Z","text":"hi","turnId":"r.t0.a","usage":{"costUsd":0.5,"latencyMs":3,"model":"m","tokensIn":1,"tokensOut":2}}}`,
	`{"kind":"halt","runId":"r","halted":{"kind":"max_credits","spentCents":250,"capCents":200},"endedAt":"2026-12-01T12:00:00.000Z"}`,
	`{"kind":"halt","runId":"r","halted":{"kind":"participant_error","participant":"p","message":"m"},"endedAt":"2026-12-01T12:00:00.000Z"}`,
	`{"kind":"halt","runId":"r","halted":{"kind":"abort","reason":"x"},"endedAt":"2026-12-01T12:00:00.000Z"}`,
	`{"kind":"begin","runId":"r","startedAt":"2026-02-30T12:00:00.000Z"}`,
	`{"kind":"turn","runId":"r","turn":{"text":"\ud800"}}`,
	`{"kind":"begin","runId":"\u0000","startedAt":"2026-12-01T12:00:00.000Z","turn":{}}`,
	`{"kind":"turn","runId":"r","turn":{"attempts":1e400,"index":-0}}`,
	`[]`, `"begin"`, `{}`,
}

var cmpRecord = cmp.AllowUnexported(record{})

// FuzzDecodeRecord: a file record decodes strictly or is refused with an
// *InvalidError, never a panic; what decodes re-encodes canonically to a
// record that decodes to the same value (runtime spec §4 record shapes).
func FuzzDecodeRecord(f *testing.F) {
	for _, s := range recordSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := canonjson.Decode(data)
		if err != nil {
			return
		}
		r, err := decodeRecord(v)
		if err != nil {
			var ie *InvalidError
			if !errors.As(err, &ie) {
				t.Fatalf("decodeRecord(%s) = %v, not an *InvalidError", data, err)
			}
			return
		}
		enc, err := encodeRecord(r)
		if err != nil {
			t.Fatalf("decoded %s but cannot encode %+v: %v", data, r, err)
		}
		again, err := decodeRecord(enc)
		if err != nil {
			t.Fatalf("re-encoded %s does not decode: %v", canonjson.Marshal(enc), err)
		}
		if diff := cmp.Diff(r, again, cmpRecord); diff != "" {
			t.Fatalf("round trip of %s (-first +second):\n%s", data, diff)
		}
	})
}

// FuzzDecodePayload: an SQL turn or halt payload decodes strictly or is
// refused with an *InvalidError, and what decodes round-trips.
func FuzzDecodePayload(f *testing.F) {
	f.Add([]byte(`{"attempts":1,"endedAt":"2026-12-01T12:00:01.000Z","index":3,"speaker":"a","startedAt":"2026-12-01T12:00:00.000Z","text":"x","turnId":"r.t3.a","usage":{}}`))
	f.Add([]byte(`{"kind":"max_turns","turns":4}`))
	f.Add([]byte(`{"kind":"predicate","reason":""}`))
	f.Add([]byte(`{"kind":"predicate"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var ie *InvalidError
		if tr, err := decodeTurn(data); err != nil {
			if !errors.As(err, &ie) {
				t.Fatalf("decodeTurn(%s) = %v", data, err)
			}
		} else {
			_, enc, err := encodeTurn(tr)
			if err != nil {
				t.Fatalf("decoded turn %s does not encode: %v", data, err)
			}
			again, err := decodeTurn(enc)
			if err != nil || !cmp.Equal(tr, again) {
				t.Fatalf("turn round trip of %s: %+v, %v", data, again, err)
			}
		}
		if h, err := decodeHalt(data); err != nil {
			if !errors.As(err, &ie) {
				t.Fatalf("decodeHalt(%s) = %v", data, err)
			}
		} else {
			enc, err := encodeHalt(h)
			if err != nil {
				t.Fatalf("decoded halt %s does not encode: %v", data, err)
			}
			if again, err := decodeHalt(enc); err != nil || again != h {
				t.Fatalf("halt round trip of %s: %+v, %v", data, again, err)
			}
		}
	})
}

// FuzzOpenFile: whatever a journal file holds, OpenFile refuses it with a
// *CorruptError or opens it; an opened file loads every run it holds, takes
// an append, and opens again to the same runs (spec §4: a torn tail is
// skipped and truncated, never a panic or a lost record).
func FuzzOpenFile(f *testing.F) {
	f.Add([]byte(recordSeeds[0] + "\n" + recordSeeds[1] + "\n" + recordSeeds[2] + "\n"))
	f.Add([]byte(recordSeeds[0] + "\n" + recordSeeds[1] + "\n{\"kind\""))
	f.Add([]byte(recordSeeds[1] + "\n" + recordSeeds[0] + "\n"))
	f.Add([]byte(recordSeeds[0] + "\n" + recordSeeds[0] + "\n" + recordSeeds[2] + "\n" + recordSeeds[2] + "\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		ctx := t.Context()
		path := filepath.Join(t.TempDir(), "c.jsonl")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		opts := FileOptions{Limits: Limits{MaxTurnBytes: 400}, Logger: slog.New(slog.DiscardHandler)}
		j, err := OpenFile(ctx, path, opts)
		if err != nil {
			var ce *CorruptError
			if !errors.As(err, &ce) {
				t.Fatalf("OpenFile(%q) = %v, not a *CorruptError", data, err)
			}
			return
		}
		loaded := map[string]*Entry{}
		for runID := range j.runs {
			e, err := j.LoadRun(ctx, runID)
			if err != nil && !isTooLarge(err) {
				t.Fatalf("LoadRun(%q) of %q: %v", runID, data, err)
			}
			loaded[runID] = e
		}
		if err := j.BeginRun(ctx, "fuzz-new", time.Unix(0, 0)); err != nil {
			t.Fatalf("BeginRun after opening %q: %v", data, err)
		}
		j.Close()
		j, err = OpenFile(ctx, path, opts)
		if err != nil {
			t.Fatalf("reopening %q: %v", data, err)
		}
		defer j.Close()
		for runID, want := range loaded {
			got, err := j.LoadRun(ctx, runID)
			if err != nil && !isTooLarge(err) || !cmp.Equal(want, got) {
				t.Fatalf("run %q after reopening %q: %+v, %v; want %+v", runID, data, got, err, want)
			}
		}
	})
}

func isTooLarge(err error) bool {
	var tl *TooLargeError
	return errors.As(err, &tl)
}
