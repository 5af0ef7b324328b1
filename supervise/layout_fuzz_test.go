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
