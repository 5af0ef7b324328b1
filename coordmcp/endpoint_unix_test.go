//go:build unix

package coordmcp_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentrt/agentrt/coordmcp"
)

// An endpoint file the relay would trust sends the harness's calls
// (tasks, results) to the URL it names. Only the file the supervising
// process publishes is trusted: a regular file, not a symbolic link,
// owned by this user and readable by nobody else (0600). Each other
// one is refused with an *EndpointError saying why, before anything is
// dialled; the run dir itself may be reached through a symbolic link.
func TestReadEndpointTrustsOnlyOwnPrivateFile(t *testing.T) {
	doc := endpointDoc("http://127.0.0.1:4000/mcp", goodToken)
	tests := []struct {
		name  string
		setup func(t *testing.T, dir string) string // returns the run dir to read
		ok    bool
	}{
		{"own 0600 file", func(t *testing.T, dir string) string {
			write(t, filepath.Join(dir, coordmcp.EndpointFile), doc, 0o600)
			return dir
		}, true},
		{"run dir through a symlink", func(t *testing.T, dir string) string {
			write(t, filepath.Join(dir, coordmcp.EndpointFile), doc, 0o600)
			link := filepath.Join(t.TempDir(), "run")
			if err := os.Symlink(dir, link); err != nil {
				t.Fatal(err)
			}
			return link
		}, true},
		{"readable by others", func(t *testing.T, dir string) string {
			write(t, filepath.Join(dir, coordmcp.EndpointFile), doc, 0o644)
			return dir
		}, false},
		{"writable by the group", func(t *testing.T, dir string) string {
			write(t, filepath.Join(dir, coordmcp.EndpointFile), doc, 0o620)
			return dir
		}, false},
		{"a symlink to a file", func(t *testing.T, dir string) string {
			target := filepath.Join(t.TempDir(), "planted.json")
			write(t, target, doc, 0o600)
			if err := os.Symlink(target, filepath.Join(dir, coordmcp.EndpointFile)); err != nil {
				t.Fatal(err)
			}
			return dir
		}, false},
		{"a directory", func(t *testing.T, dir string) string {
			if err := os.Mkdir(filepath.Join(dir, coordmcp.EndpointFile), 0o700); err != nil {
				t.Fatal(err)
			}
			return dir
		}, false},
		{"another user's file", func(t *testing.T, dir string) string {
			path := filepath.Join(dir, coordmcp.EndpointFile)
			write(t, path, doc, 0o600)
			if os.Geteuid() != 0 {
				t.Skip("needs root to give a file to another user")
			}
			if err := os.Chown(path, 65534, 65534); err != nil {
				t.Fatal(err)
			}
			return dir
		}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := tc.setup(t, t.TempDir())
			ep, err := coordmcp.ReadEndpoint(dir)
			if tc.ok {
				if err != nil || ep.Token != goodToken {
					t.Errorf("ReadEndpoint: %v, want the endpoint", err)
				}
				return
			}
			var ee *coordmcp.EndpointError
			if !errors.As(err, &ee) || ee.Reason == "" {
				t.Errorf("ReadEndpoint: %v (%+v), want an *EndpointError refusing the file", err, ep)
			}
		})
	}
}

func write(t *testing.T, path, doc string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(doc), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}
