package cli

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/supervise"
)

// The live view (TUI) tells what --once tells of a run that reads as
// running (no finished record): stopped, with its unsettled workers
// down and how to resume it, when its supervise.lock names a process of
// this host that is gone; running, said not checked, when the holder is
// on another host; as it reads when the run dir has no supervise.lock
// (its journal in a store: the store's lease speaks for it).
func TestTopTellsTheRunsSupervisor(t *testing.T) {
	host, err := os.Hostname()
	if err != nil || host == "" {
		t.Skipf("no host name: %v", err)
	}
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	lock := func(h string) string {
		b, err := json.Marshal(supervise.LockHolder{PID: dead.Process.Pid, Host: h, StartedAt: time.Now().UTC(), RunID: "sup-1"})
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	pid := strconv.Itoa(dead.Process.Pid)
	type view struct {
		Status     string
		Live       bool
		LexerState string
		Frame      []string
	}
	tests := []struct {
		name string
		lock *string
		want view
	}{
		{"holder gone", new(lock(host)), view{Status: "stopped", LexerState: "down", Frame: []string{
			"sup-1                    stopped", "! stopped: supervisor pid " + pid + " is gone", "! resume with: agentrt supervise … --resume --run-dir "}}},
		{"holder on another host", new(lock("elsewhere")), view{Status: "running", Live: true, LexerState: "running", Frame: []string{
			"sup-1                    running", "! supervisor pid " + pid + " on host elsewhere, not checked"}}},
		{"no supervise.lock", nil, view{Status: "running", Live: true, LexerState: "running", Frame: []string{"sup-1                    running"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := tornRunDir(t)
			if tt.lock != nil {
				if err := os.WriteFile(filepath.Join(dir, supervise.LockFile), []byte(*tt.lock), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			ctx := context.Background()
			src := &topSource{dirs: []string{dir}}
			var tm tea.Model = newTopModel(ctx, src)
			tm, _ = tm.Update(topSnapshotMsg(src.load(ctx)))
			m := tm.(topModel)
			r := m.snap.Runs[0]
			got := view{Status: r.Status, Live: r.Live, LexerState: r.Workers[0].State}
			frame := m.View().Content
			for _, f := range tt.want.Frame {
				if strings.Contains(frame, f) {
					got.Frame = append(got.Frame, f)
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("top's view (-want +got):\n%s\n%s", diff, frame)
			}
			if tt.lock == nil && strings.Contains(frame, "supervisor") {
				t.Errorf("a run dir without supervise.lock was said checked:\n%s", frame)
			}
		})
	}
}
