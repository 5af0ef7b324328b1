package supervise_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/supervise"
)

// A run's cancellation request file torn or damaged by something else
// than CancelRun (which writes it whole) was never acted on: the
// supervisor skips a file it cannot read. It must not block the run's
// cancellation for good. CancelRun sets the damaged file aside (kept
// for inspection), publishes its own request, and the run is cancelled
// (behaviour 50). Before, every CancelRun failed with "unexpected end of
// JSON input" and the run could not be cancelled at all.
func TestCancelRunSetsADamagedRequestAsideBehaviour50(t *testing.T) {
	ctx := context.Background()
	exec := newInboxExecutor()
	run := startLiveRun(t, exec, 0, "long")
	path := filepath.Join(run.dir, supervise.RunCancelRequestFile)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	torn := []byte(`{"operationId":"op-ea`)
	if err := os.WriteFile(path, torn, 0o600); err != nil {
		t.Fatal(err)
	}
	req, err := supervise.CancelRun(ctx, run.dir, "op-run", supervise.RunCancelOptions{Source: "operator", Reason: "enough"})
	if err != nil {
		t.Fatalf("CancelRun over a damaged request file: %v", err)
	}
	if req.OperationID != "op-run" {
		t.Errorf("request %+v, want op-run's", req)
	}
	res := run.wait(t)
	if res.Status != supervise.StatusNoWinner || res.Reason != supervise.ReasonCancelled || res.Cancellation == nil || res.Cancellation.OperationID != "op-run" {
		t.Errorf("result %s %s %+v, want no-winner cancelled by op-run", res.Status, res.Reason, res.Cancellation)
	}
	aside, _ := filepath.Glob(path + ".damaged-*")
	if len(aside) != 1 {
		t.Fatalf("damaged files set aside: %v, want one", aside)
	}
	if got, err := os.ReadFile(aside[0]); err != nil || string(got) != string(torn) {
		t.Errorf("the damaged file set aside holds %q (%v), want the torn bytes", got, err)
	}
}

// A damaged acknowledgement is reported as a *ControlFileError naming
// the file, not as a bare JSON error.
func TestReadRunCancellationNamesADamagedFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, supervise.RunCancellationFile)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(`{"operationId":`), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := supervise.ReadRunCancellation(context.Background(), dir)
	var damaged *supervise.ControlFileError
	if !errors.As(err, &damaged) || damaged.Path != path || !strings.Contains(err.Error(), path) {
		t.Fatalf("err %v, want a *ControlFileError naming %s", err, path)
	}
}
