package supervise_test

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentrt/agentrt/supervise"
)

// FuzzReadRunState: whatever state.json holds, ReadRunState returns a
// state that passes its own checks or a *StateError, never panics.
func FuzzReadRunState(f *testing.F) {
	f.Add([]byte(`{"live":0,"revision":3,"runId":"r1","schemaVersion":1,"spawned":1,"status":"running","updatedAtMs":5}`))
	f.Add([]byte(`{"budget":{"tokens":10},"live":1,"revision":1,"runId":"r","schemaVersion":1,"settled":{"done":2},"spawned":3,"spent":{"resources":{"gpu":1}},"status":"winner","updatedAtMs":1}`))
	f.Add([]byte(`{"live":0,"revision":3,"runId":"r1","schemaVer`))
	f.Add([]byte(`{"schemaVersion":1,"schemaVersion":1}`))
	f.Add([]byte{0xff, '{'})
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, supervise.StateFile), data, 0o600); err != nil {
			t.Fatal(err)
		}
		st, err := supervise.ReadRunState(context.Background(), dir)
		if err != nil {
			var se *supervise.StateError
			if !errors.As(err, &se) {
				t.Fatalf("err %v (%T), want *StateError", err, err)
			}
			return
		}
		if st.SchemaVersion != supervise.RunStateSchemaVersion || st.RunID == "" || st.Live > st.Spawned || st.Live < 0 {
			t.Fatalf("accepted an inconsistent state %+v", st)
		}
	})
}

// FuzzReadProgress: whatever progress.ndjson holds, ReadProgress returns
// at most one record per complete line, ids unique, and never panics.
func FuzzReadProgress(f *testing.F) {
	f.Add([]byte(`{"atMs":1,"id":"spawn:r:s1","kind":"spawn","node":"r:s1"}` + "\n" + `{"atMs":2,"id":"spawn:r:s1","kind":"spawn","node":"r:s1"}` + "\n"))
	f.Add([]byte(`{"atMs":1,"id":"finish:r","kind":"finish","outcome":"winner"}` + "\n" + `not json` + "\n" + `{"id":`))
	f.Add([]byte{0xff, '\n', '{'})
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, supervise.ProgressFile), data, 0o600); err != nil {
			t.Fatal(err)
		}
		recs, skipped, err := supervise.ReadProgress(context.Background(), dir)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			t.Fatal(err)
		}
		if lines := bytes.Count(data, []byte("\n")); len(recs)+skipped > lines {
			t.Fatalf("%d records and %d skipped from %d complete lines", len(recs), skipped, lines)
		}
		seen := map[string]bool{}
		for _, r := range recs {
			if seen[r.ID] {
				t.Fatalf("id %q twice", r.ID)
			}
			seen[r.ID] = true
		}
	})
}

// FuzzReadStreamLogs: whatever a worker log, the root stream or the
// coordination log holds, their tolerant readers return at most one
// record per complete line and never panic (§3.6 "Readers are
// tolerant").
func FuzzReadStreamLogs(f *testing.F) {
	f.Add([]byte(`{"atMs":1,"kind":"spawned","label":"a","node":"r:s1","profile":"writer","text":"task"}` + "\n" + `{"atMs":2,"kind":"event","node":"r:s1","text":"hi"}` + "\n"))
	f.Add([]byte(`{"atMs":1,"inputTokens":3,"kind":"turn-ended","outputTokens":null}` + "\n" + `garbage` + "\n" + `{"kind":"sett`))
	f.Add([]byte(`{"finding":{"lens":"l","outcome":"settled","sourceWorkerId":"r:s1"},"kind":"finding"}` + "\n"))
	f.Add([]byte{0xff, '\n', '{', '\n'})
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		if err := os.MkdirAll(filepath.Join(dir, supervise.WorkersDir), 0o700); err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{supervise.WorkerLogPath(dir, "a"), filepath.Join(dir, supervise.RootStreamFile), filepath.Join(dir, supervise.CoordinationLogFile)} {
			if err := os.WriteFile(p, data, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		lines := bytes.Count(data, []byte("\n"))
		ctx := context.Background()
		w, ws, err := supervise.ReadWorkerLog(ctx, dir, "a")
		if err != nil || len(w)+ws > lines {
			t.Fatalf("worker log: %d records, %d skipped of %d lines, %v", len(w), ws, lines, err)
		}
		r, rs, err := supervise.ReadRootStream(ctx, dir)
		if err != nil || len(r)+rs > lines || len(r) != len(w) {
			t.Fatalf("root stream: %d records, %d skipped of %d lines, %v", len(r), rs, lines, err)
		}
		c, cs, err := supervise.ReadCoordinationLog(ctx, dir)
		if err != nil || len(c)+cs > lines {
			t.Fatalf("coordination log: %d records, %d skipped of %d lines, %v", len(c), cs, lines, err)
		}
	})
}
