package cli_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/sqlite"
)

// `agentrt runs cancel` on a run another package owns (here a live
// delegation) is refused: exit 1, effect unknown in --json, a message
// saying how such runs are cancelled, and the record left untouched.
func TestRunsCancelRefusesForeignKind(t *testing.T) {
	ctx := context.Background()
	db := filepath.Join(t.TempDir(), "runs.db")
	s, err := sqlite.Open(ctx, db, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	before, err := s.CreateRun(ctx, store.Run{ID: "dlg-1", Kind: "delegation", Status: store.StatusRunning, Owner: "elsewhere", LeaseUntil: time.Now().Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	out, errOut, code := run(t, "", "runs", "cancel", "--json", "--db", db, "dlg-1")
	if code != 1 {
		t.Fatalf("exit %d, want 1: %s%s", code, out, errOut)
	}
	if res := decode(t, out); member(res, "effect").Str() != "unknown" {
		t.Errorf("--json reported %s, want effect unknown", out)
	}
	if !strings.Contains(errOut, "delegation run") || !strings.Contains(errOut, "through its queue") {
		t.Errorf("the error does not say how to cancel a delegation: %s", errOut)
	}
	s, err = sqlite.Open(ctx, db, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	after, err := s.GetRun(ctx, "dlg-1")
	if err != nil || after.Revision != before.Revision {
		t.Errorf("the refused cancel changed the run: revision %d → %d, %v", before.Revision, after.Revision, err)
	}
}
