package cli_test

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// buildTimeout bounds the one build of the agentrt command; a loaded
// machine compiles slowly, so it is generous.
const buildTimeout = 8 * time.Minute

// binDir is the directory the shared build of agentrt goes to; TestMain
// creates it before any test runs and removes it after the last.
var binDir string

// builtAgentrt builds the agentrt command (cmd/agentrt, with its main's
// signal handling) once for the whole test binary: every test that runs
// the real command shares the build instead of paying for its own.
var builtAgentrt = sync.OnceValues(func() (string, error) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("building agentrt needs the go command: %w", err)
	}
	exe := filepath.Join(binDir, "agentrt")
	ctx, cancel := context.WithTimeout(context.Background(), buildTimeout)
	defer cancel()
	if out, err := exec.CommandContext(ctx, gobin, "build", "-o", exe, "github.com/agentrt/agentrt/cmd/agentrt").CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/agentrt: %w\n%s", err, out)
	}
	return exe, nil
})

// buildAgentrt returns the path of the agentrt command built for this
// test binary, building it on first use; a failed build fails t.
func buildAgentrt(t *testing.T) string {
	t.Helper()
	exe, err := builtAgentrt()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}
