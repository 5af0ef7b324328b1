package supervise

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// FuzzReadControlAcks: whatever a run dir's acknowledgement files hold
// (a steer's ack, a worker cancellation, the run cancellation), reading
// them gives a record or an error, never a panic; a worker cancellation
// read from its file is the operation asked for.
func FuzzReadControlAcks(f *testing.F) {
	for _, s := range []string{
		`{"operationId":"op-1","worker":"w","effect":"cancelled","requestedAt":1,"workerId":"run1:s1","terminated":["run1:s1"]}`,
		`{"operationId":"op-1","requestDigest":"sha256:00","worker":"w","effect":"delivered","requestedAt":1,"observedAt":2}`,
		`{"operationId":"op-2","effect":"not_live"}`, `{"terminated":null}`, `[]`, `null`, ``, `{"operationId":`, "\xff",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		for _, p := range []string{filepath.Join(CancellationsDir, "op-1.json"), RunCancellationFile, filepath.Join(SteerAcksDir, opHash("op-1")+".json")} {
			path := filepath.Join(dir, p)
			if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, data, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		ctx := context.Background()
		if rec, err := ReadWorkerCancellation(ctx, dir, "op-1"); err == nil && rec.OperationID != "op-1" && rec.OperationID != "" {
			t.Fatalf("the cancellation of op-1 read as %+v", rec)
		}
		_, _ = ReadRunCancellation(ctx, dir)
		_, _ = ReadSteerAck(ctx, dir, "op-1")
	})
}
