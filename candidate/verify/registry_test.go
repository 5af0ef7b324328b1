package verify_test

import (
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentrt/agentrt/candidate/netsafe"
	"github.com/agentrt/agentrt/candidate/verify"
)

// TestRegistryStep11: step 11 through a real HTTP registry that asks for
// an anonymous bearer token (as Docker Hub does): the index and the
// platform's manifest are fetched by digest and checked. Without the
// operator's permit the loopback registry is refused by the address
// rules (resolver-blocked), never contacted.
func TestRegistryStep11(t *testing.T) {
	g := newGitFixture(t)
	manifest := `{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:` + strings.Repeat("2", 64) + `","size":2},"layers":[]}`
	md := digestOf([]byte(manifest))
	index := `{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"` + md + `","size":` + strconv.Itoa(len(manifest)) + `,"platform":{"os":"linux","architecture":"amd64"}}]}`
	id := digestOf([]byte(index))
	blobs := map[string]string{id: index, md: manifest}
	var requests, tokens atomic.Int32
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		if r.URL.Path == "/token" {
			if r.URL.Query().Get("scope") != "repository:library/node:pull" {
				http.Error(w, "bad scope", http.StatusBadRequest)
				return
			}
			tokens.Add(1)
			w.Write([]byte(`{"token":"anonymous-pull"}`))
			return
		}
		if r.Header.Get("Authorization") != "Bearer anonymous-pull" {
			w.Header().Set("WWW-Authenticate", `Bearer realm="`+srv.URL+`/token",service="registry.test",scope="repository:library/node:pull"`)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		digest, ok := strings.CutPrefix(r.URL.Path, "/v2/library/node/manifests/")
		body, found := blobs[digest]
		if !ok || !found || !strings.Contains(r.Header.Get("Accept"), "application/vnd.oci.image.index.v1+json") {
			http.NotFound(w, r)
			return
		}
		w.Write([]byte(body))
	}))
	defer srv.Close()
	permitted := netsafe.NewClient(netsafe.Options{Permit: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}})

	b := a4(t, g.patch, g.tree)
	b["execution"].(obj)["environment"].(obj)["container"].(obj)["indexDigest"] = id
	opts := g.opts
	opts.OCI = &verify.Registry{Client: permitted, BaseURL: srv.URL}
	rec := run(t, seal(t, b), opts)
	if c := rec.Container; c == nil || c.IndexDigest != id || c.ManifestDigest != md {
		t.Fatalf("container %+v", rec.Container)
	}
	if tokens.Load() == 0 {
		t.Error("the token flow was not exercised")
	}

	// A digest the registry does not have.
	b["execution"].(obj)["environment"].(obj)["container"].(obj)["indexDigest"] = "sha256:" + strings.Repeat("5", 64)
	run(t, seal(t, b), opts, verify.CodeContainerUnavailable)

	// The strict client refuses the loopback registry before connecting.
	before := requests.Load()
	b["execution"].(obj)["environment"].(obj)["container"].(obj)["indexDigest"] = id
	opts.OCI = &verify.Registry{BaseURL: srv.URL}
	run(t, seal(t, b), opts, verify.CodeResolverBlocked)
	if requests.Load() != before {
		t.Fatal("a blocked registry was contacted")
	}
}
