package cli_test

import (
	"github.com/agentrt/agentrt/supervise"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A worker reference made of path elements ("..", "../../escape", "a/b")
// is only text in a steer or cancel request: the requests live in the
// run directory under names of their own, and nothing is written
// outside it.
func TestOperatorWorkerPathElementsStayInRunDir(t *testing.T) {
	parent := t.TempDir()
	runDir := filepath.Join(parent, "run")
	if err := os.Mkdir(runDir, 0o755); err != nil {
		t.Fatal(err)
	}
	// A run dir no supervisor holds: the lock file a killed one leaves.
	if err := os.WriteFile(filepath.Join(runDir, supervise.LockFile), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"..", "../../escape", "a/b", `..\..\escape`} {
		for _, args := range [][]string{
			{"steer", runDir, w, "Stop.", "--wait", "1ms"},
			{"cancel", runDir, w, "--wait", "1ms"},
		} {
			// Nobody acknowledges: exit 1, the request written.
			if out, errOut, code := run(t, "", args...); code != 1 {
				t.Errorf("%q: exit %d, want 1 (no acknowledgement)\nstdout: %s\nstderr: %s", args, code, out, errOut)
			}
		}
	}
	err := filepath.WalkDir(parent, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if path != parent && path != runDir && !strings.HasPrefix(path, runDir+string(filepath.Separator)) {
			t.Errorf("written outside the run dir: %s", path)
		}
		if !d.IsDir() && strings.Contains(d.Name(), "escape") {
			t.Errorf("a worker reference named a file: %s", path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(runDir); len(ents) == 0 {
		t.Error("no request was written in the run dir")
	}
}
