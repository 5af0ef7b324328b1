package cli_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/sqlite"
)

// Issue 15: chat --session on a turn whose earlier answer is still live
// — its run running under a lease another process renews — must not
// answer it a second time (the model paid twice, one answer thrown away
// when the journal refuses it); an earlier answer whose process died is
// waited out for its lease and then answered again.
func TestChatSessionWaitsOutALiveAttempt(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out a lease")
	}
	t.Parallel()
	for _, tc := range []struct {
		name string
		// holder takes attempt a2 of the turn, as another process would.
		holder   func(t *testing.T, s store.Store, runID string)
		wantCode int
		wantErr  string
		// wantRuns are the turn's runs with their status after --session.
		wantRuns map[string]store.Status
	}{
		{
			name: "renewed by a live process",
			holder: func(t *testing.T, s store.Store, runID string) {
				ctx, cancel := context.WithCancel(context.Background())
				rr, err := kernel.StartRuntimeRun(ctx, kernel.RuntimeRunOptions{WorkspaceID: "w", TaskID: "chat", RunID: runID, Store: s, LeaseTTL: time.Second})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() {
					if err := rr.Complete(kernel.RuntimeCompletion{Status: store.StatusFailed}); err != nil {
						t.Error(err)
					}
					cancel()
				})
			},
			wantCode: 1,
			wantErr:  "is live in another process",
			wantRuns: map[string]store.Status{"a1": store.StatusFailed, "a2": store.StatusRunning},
		},
		{
			name: "left by a dead process",
			holder: func(t *testing.T, s store.Store, runID string) {
				_, err := s.CreateRun(context.Background(), store.Run{ID: runID, Kind: "chat", Status: store.StatusRunning,
					Owner: "dead", LeaseUntil: time.Now().Add(1500 * time.Millisecond)})
				if err != nil {
					t.Fatal(err)
				}
			},
			wantCode: 0,
			wantRuns: map[string]store.Status{"a1": store.StatusFailed, "a2": store.StatusInterrupted, "a3": store.StatusCompleted},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			db := filepath.Join(t.TempDir(), "runs.db")
			fail := writeFile(t, "fail.json", `{"turns":[{"repeat":true,"steps":[{"text":"no"}],"end":"failed","error":"down"}]}`)
			out, errOut, code := run(t, "one\n", "chat", "--json", "--db", db, "--script", fail, noteWriter)
			if code != 1 {
				t.Fatalf("failing answer: exit %d\n%s%s", code, out, errOut)
			}
			id := member(decode(t, strings.TrimSpace(out)), "session").Str()
			turn := id + ".t1.assistant."
			ctx := context.Background()
			s, err := sqlite.Open(ctx, db, sqlite.Options{MustExist: true})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			tc.holder(t, s, turn+"a2")

			out, errOut, code = run(t, "", "chat", "--json", "--db", db, "--lease", "1s", "--script", writeFile(t, "echo.json", echo), "--session", id, noteWriter)
			if code != tc.wantCode || !strings.Contains(errOut, tc.wantErr) {
				t.Errorf("--session: exit %d, want %d saying %q\n%s%s", code, tc.wantCode, tc.wantErr, out, errOut)
			}
			got := map[string]store.Status{}
			for _, a := range []string{"a1", "a2", "a3"} {
				if r, err := s.GetRun(ctx, turn+a); err == nil {
					got[a] = r.Status
				}
			}
			if diff := cmp.Diff(tc.wantRuns, got); diff != "" {
				t.Errorf("the turn's runs (-want +got):\n%s", diff)
			}
		})
	}
}
