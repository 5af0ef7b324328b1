package cli_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/internal/cli"
)

// A line of input longer than the per-turn bound ends the session with
// an error that names the bound and how to continue, after the turns
// before it were answered.
func TestChatRefusesAnOverlongLine(t *testing.T) {
	db := filepath.Join(t.TempDir(), "runs.db")
	in := "hello\n" + strings.Repeat("x", 1<<20+1) + "\n"
	out, errOut, code := run(t, in, "chat", "--db", db, noteWriter)
	if code != cli.ExitFailed {
		t.Fatalf("exit %d, want %d\n%s%s", code, cli.ExitFailed, out, errOut)
	}
	if out != "Done: hello\n\n" {
		t.Errorf("stdout %q, want the first answer alone", out)
	}
	for _, want := range []string{"longer than 1048576 bytes", "agentrt chat --session"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
}
