package coordmcp_test

import (
	"os"
	"testing"
)

var tempRoot string

func mkdirTemp() (string, error) { return os.MkdirTemp(tempRoot, "bin-") }

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "coordmcp-test-")
	if err != nil {
		panic(err)
	}
	tempRoot = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
