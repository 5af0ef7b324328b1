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

// A cancellation's reason, operator or source past MaxControlText is
// refused (ErrInvalidControl) and nothing is written: JSON-escaped, a
// longer text could make the request a file over MaxControlFileBytes,
// which no supervisor reads, leaving the run impossible to cancel (every
// later CancelRun failed on it). At the bound it is written and read
// back. Behaviours 49, 50; §3.6 "Cancellation".
func TestCancellationTextIsBounded(t *testing.T) {
	ctx := context.Background()
	over := strings.Repeat("<", supervise.MaxControlText+1)
	for name, o := range map[string]supervise.RunCancelOptions{
		"reason": {Reason: over}, "operator": {Operator: over}, "source": {Source: over},
	} {
		dir := t.TempDir()
		if _, err := supervise.CancelRun(ctx, dir, "c1", o); !errors.Is(err, supervise.ErrInvalidControl) || !strings.Contains(err.Error(), name) {
			t.Errorf("CancelRun with an oversized %s = %v, want ErrInvalidControl naming it", name, err)
		}
		if _, err := os.Stat(filepath.Join(dir, supervise.RunCancelRequestFile)); err == nil {
			t.Errorf("CancelRun with an oversized %s wrote the request", name)
		}
	}
	for name, o := range map[string]supervise.CancelOptions{"reason": {Reason: over}, "source": {Source: over}} {
		dir := t.TempDir()
		if _, err := supervise.CancelWorker(ctx, dir, "w", "c1", o); !errors.Is(err, supervise.ErrInvalidControl) || !strings.Contains(err.Error(), name) {
			t.Errorf("CancelWorker with an oversized %s = %v, want ErrInvalidControl naming it", name, err)
		}
		if _, err := os.Stat(filepath.Join(dir, supervise.CancelRequestsFile)); err == nil {
			t.Errorf("CancelWorker with an oversized %s wrote the request", name)
		}
	}
	at := strings.Repeat("<", supervise.MaxControlText)
	dir := t.TempDir()
	if _, err := supervise.CancelRun(ctx, dir, "c1", supervise.RunCancelOptions{Reason: at, Operator: at, Source: at}); err != nil {
		t.Fatalf("CancelRun at the bound: %v", err)
	}
	// Written again under the same id: the first request is read back,
	// so it is a file within the readers' bound.
	if _, err := supervise.CancelRun(ctx, dir, "c1", supervise.RunCancelOptions{Reason: at, Operator: at, Source: at}); err != nil {
		t.Errorf("CancelRun at the bound, again: %v", err)
	}
}
