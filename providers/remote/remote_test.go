package remote_test

import (
	"strings"
	"testing"

	"github.com/agentrt/agentrt/providers/remote"
)

// The end-to-end tests live in sidecar (the server) and internal/cli (a
// real serve process); a layer-2 test may not import them.

func TestNewRefusesBadBaseURLs(t *testing.T) {
	for _, u := range []string{"", "127.0.0.1:8080", "ftp://h", "http://user:pw@127.0.0.1:1", "http://127.0.0.1:1/?q=1", "http://"} {
		_, err := remote.New(remote.Options{BaseURL: u})
		if err == nil {
			t.Errorf("New(%q) accepted it", u)
			continue
		}
		if strings.Contains(err.Error(), "pw") {
			t.Errorf("New(%q): the error %q carries the password", u, err)
		}
	}
	if _, err := remote.New(remote.Options{BaseURL: "http://127.0.0.1:8080/"}); err != nil {
		t.Fatalf("a loopback base URL: %v", err)
	}
}
