package verify

import "testing"

// TestSplitImage: image references to registry host and repository, as
// container tooling reads them (Docker Hub without a host; library/ for
// one-part names; tags and digests ignored).
func TestSplitImage(t *testing.T) {
	for _, tc := range []struct{ image, host, repo string }{
		{"node:22", "registry-1.docker.io", "library/node"},
		{"node", "registry-1.docker.io", "library/node"},
		{"tangle/agent:1.0", "registry-1.docker.io", "tangle/agent"},
		{"ghcr.io/tangle-network/agent:sha-abc", "ghcr.io", "tangle-network/agent"},
		{"localhost:5000/agent@sha256:" + "ab", "localhost:5000", "agent"},
		{"localhost/agent", "localhost", "agent"},
		{"registry.example/a/b/c:tag", "registry.example", "a/b/c"},
	} {
		host, repo, err := splitImage(tc.image)
		if err != nil || host != tc.host || repo != tc.repo {
			t.Errorf("splitImage(%q) = %q, %q, %v; want %q, %q", tc.image, host, repo, err, tc.host, tc.repo)
		}
	}
	for _, bad := range []string{"", ":tag", "ghcr.io/", "a//b"} {
		if _, _, err := splitImage(bad); err == nil {
			t.Errorf("splitImage(%q) accepted", bad)
		}
	}
}

// TestChallengeParams: the Bearer challenge's parameters, quoted or not.
func TestChallengeParams(t *testing.T) {
	got := challengeParams(`realm="https://auth.docker.io/token",service="registry.docker.io",scope="repository:library/node:pull", error=insufficient_scope`)
	want := map[string]string{"realm": "https://auth.docker.io/token", "service": "registry.docker.io", "scope": "repository:library/node:pull", "error": "insufficient_scope"}
	if len(got) != len(want) {
		t.Fatalf("got %v", got)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
}
