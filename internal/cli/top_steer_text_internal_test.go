package cli

import (
	"context"
	"os"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
)

// Issue 13: a steer message typed into top that is not UTF-8 (a
// terminal in another encoding) is refused on enter, saying so; no
// request is written into the run dir.
func TestTopSteerTextNotUTF8IsRefused(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	src := &topSource{dirs: []string{dir}, newOperationID: func() string { return "top-op" }}
	var m tea.Model = newTopModel(ctx, src)
	m, _ = m.Update(topSnapshotMsg(topSnapshot{Runs: []topRun{{ID: "live", Kind: "supervise", Status: "running", Live: true, dir: dir}}}))
	m, _ = press(m, "s")
	if !m.(topModel).steering {
		t.Fatalf("s did not open the steer line:\n%s", m.(topModel).frame())
	}
	m, _ = m.Update(tea.KeyPressMsg{Code: 'x', Text: "stop\xff"})
	m, cmd := press(m, "enter")
	if cmd != nil {
		t.Errorf("enter on a message that is not UTF-8 started a request")
		m = settle(t, m, cmd)
	}
	if n := m.(topModel).notice; !strings.HasPrefix(n, "steer refused:") || !strings.Contains(n, "UTF-8") {
		t.Errorf("notice %q, want the steer refused as not UTF-8, saying what to do", n)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("the refused steer wrote %s in the run dir", ents[0].Name())
	}
}
