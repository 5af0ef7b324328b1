package coordmcp_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentrt/agentrt/store/sqlite"
)

var tempRoot string

func mkdirTemp() (string, error) { return os.MkdirTemp(tempRoot, "bin-") }

func TestMain(m *testing.M) {
	if mode := os.Getenv(fakeModeEnv); mode != "" {
		fakeOpencode(mode)
	}
	if dir := os.Getenv(killChildEnv); dir != "" {
		if err := superviseUntilKilled(dir); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(3) // the parent kills the child before its run can end
	}
	dir, err := os.MkdirTemp("", "coordmcp-test-")
	if err != nil {
		panic(err)
	}
	tempRoot = dir
	// The agentrt relay the tests start inherits this temporary home, so
	// nothing it opens by default lands in the developer's ~/.agentrt.
	if err := os.Setenv(sqlite.HomeEnv, filepath.Join(dir, "home")); err != nil {
		panic(err)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
