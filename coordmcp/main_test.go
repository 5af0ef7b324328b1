package coordmcp_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/agentrt/agentrt/store/sqlite"
)

var tempRoot string

func mkdirTemp() (string, error) { return os.MkdirTemp(tempRoot, "bin-") }

func TestMain(m *testing.M) {
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
