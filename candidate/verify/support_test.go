package verify_test

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/candidate"
	"github.com/agentrt/agentrt/candidate/verify"
)

// TestSupportPolicy: §22 step 5 refuses what the executor cannot honour
// (unsupported-surface) while integrity verification completes.
func TestSupportPolicy(t *testing.T) {
	g := newGitFixture(t)
	reference := verify.ReferenceSupport()
	noMCP := verify.ReferenceSupport()
	noMCP.Name = "no-mcp"
	noMCP.ProfileMembers = []string{"harness", "model", "name", "prompt", "resources"}
	for _, tc := range []struct {
		name   string
		change func(b obj)
		policy verify.SupportPolicy
		paths  []string
	}{
		{"A4 under the reference policy", func(obj) {}, reference, nil},
		{"tools", func(b obj) { b["profile"].(obj)["tools"] = obj{"Bash": true} }, reference, []string{"/profile/tools"}},
		{"permissions and modes", func(b obj) {
			p := b["profile"].(obj)
			p["permissions"] = obj{"Bash": "deny"}
			p["modes"] = obj{"review": obj{"prompt": "Review only."}}
		}, reference, []string{"/profile/modes", "/profile/permissions"}},
		{"an MCP server the policy does not start", func(b obj) {
			b["profile"].(obj)["mcp"] = obj{"files": obj{"command": "mcp-files"}}
		}, noMCP, []string{"/profile/mcp"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := a4(t, g.patch, g.tree)
			tc.change(b)
			opts := g.opts
			opts.Support = &tc.policy
			var codes []string
			if tc.paths != nil {
				codes = []string{verify.CodeUnsupportedSurface}
			}
			rec := run(t, seal(t, b), opts, codes...)
			var paths []string
			for _, is := range rec.Issues {
				paths = append(paths, is.Path)
			}
			if diff := cmp.Diff(tc.paths, paths); diff != "" {
				t.Errorf("unsupported paths (-want +got):\n%s", diff)
			}
			// Integrity still completed: the code was applied and checked.
			if rec.MaterializedTree == nil || *rec.MaterializedTree != candTreeA4 || rec.SupportPolicy != tc.policy.Name {
				t.Errorf("tree %v, policy %q", rec.MaterializedTree, rec.SupportPolicy)
			}
			for _, np := range rec.NotPerformed {
				if np == verify.NotPerformedSupport {
					t.Errorf("step 5 listed as not performed")
				}
			}
		})
	}
}

// TestSecretsReported: a credential-looking string is reported by JSON
// pointer and rule, never its text, and does not change the verdict
// (§20.1: a verifier MAY report hits).
func TestSecretsReported(t *testing.T) {
	b := a2()
	key := "sk-ant-api03-" + strings.Repeat("Q", 24)
	b["profile"].(obj)["prompt"] = obj{"systemPrompt": "Use the key " + key + " for the API."}
	rec := run(t, seal(t, b), verify.Options{})
	want := []candidate.SecretFinding{{Path: "/profile/prompt/systemPrompt", Rule: "anthropic-key"}}
	if diff := cmp.Diff(want, rec.Secrets); diff != "" {
		t.Fatalf("secrets (-want +got):\n%s", diff)
	}
	if strings.Contains(string(marshalJSON(t, rec)), key) {
		t.Fatal("the record carries the secret")
	}
	if rec = run(t, seal(t, a2()), verify.Options{}); len(rec.Secrets) != 0 {
		t.Fatalf("A2 secrets %+v", rec.Secrets)
	}
}

// ociLayout writes blobs into an OCI image layout and returns their
// digests in order.
func ociLayout(t *testing.T, dir string, blobs ...string) []string {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, "blobs", "sha256"), 0o755); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, b := range blobs {
		sum := sha256.Sum256([]byte(b))
		h := hex.EncodeToString(sum[:])
		if err := os.WriteFile(filepath.Join(dir, "blobs", "sha256", h), []byte(b), 0o644); err != nil {
			t.Fatal(err)
		}
		out = append(out, "sha256:"+h)
	}
	return out
}

// TestContainerStep: §22 step 11 over an OCI image layout — the pinned
// index is read by digest and checked, the manifest for the platform
// selected and checked, and an evaluator-owned container deferred.
func TestContainerStep(t *testing.T) {
	g := newGitFixture(t)
	dir := t.TempDir()
	manifestAMD := `{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:` + strings.Repeat("1", 64) + `","size":2},"layers":[]}`
	manifestARM := strings.Replace(manifestAMD, `"size":2`, `"size":3`, 1)
	d := ociLayout(t, dir, manifestAMD, manifestARM)
	index := `{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[` +
		`{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"` + d[0] + `","size":` + strconv.Itoa(len(manifestAMD)) + `,"platform":{"os":"linux","architecture":"amd64"}},` +
		`{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"` + d[1] + `","size":` + strconv.Itoa(len(manifestARM)) + `,"platform":{"os":"linux","architecture":"arm64","variant":"v8"}}]}`
	indexDigest := ociLayout(t, dir, index)[0]
	manifestOnly := ociLayout(t, dir, manifestAMD)[0] // a manifest where an index belongs
	missing := "sha256:" + strings.Repeat("9", 64)
	v8 := "v8"
	for _, tc := range []struct {
		name     string
		index    string
		platform candidate.Platform
		code     string
		manifest string
	}{
		{"linux/amd64 by default", indexDigest, candidate.Platform{}, "", d[0]},
		{"linux/arm64/v8", indexDigest, candidate.Platform{OS: "linux", Architecture: "arm64", Variant: &v8}, "", d[1]},
		{"no manifest for the platform", indexDigest, candidate.Platform{OS: "linux", Architecture: "s390x"}, verify.CodeContainerPlatformMissing, ""},
		{"index not in the store", missing, candidate.Platform{}, verify.CodeContainerUnavailable, ""},
		{"a manifest, not an index", manifestOnly, candidate.Platform{}, verify.CodeContainerIndexInvalid, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := a4(t, g.patch, g.tree)
			b["execution"].(obj)["environment"].(obj)["container"].(obj)["indexDigest"] = tc.index
			opts := g.opts
			opts.OCI, opts.Platform = verify.OCILayout(dir), tc.platform
			var codes []string
			if tc.code != "" {
				codes = []string{tc.code}
			}
			rec := run(t, seal(t, b), opts, codes...)
			if tc.code != "" {
				return
			}
			c := rec.Container
			if c == nil || c.Source != "pinned-container" || c.Image != "node:22" || c.IndexDigest != tc.index || c.ManifestDigest != tc.manifest {
				t.Fatalf("container %+v", c)
			}
		})
	}
	// A blob whose bytes are not its digest's.
	tampered := t.TempDir()
	ociLayout(t, tampered)
	if err := os.WriteFile(filepath.Join(tampered, "blobs", "sha256", strings.TrimPrefix(indexDigest, "sha256:")), []byte(index+" "), 0o644); err != nil {
		t.Fatal(err)
	}
	b := a4(t, g.patch, g.tree)
	b["execution"].(obj)["environment"].(obj)["container"].(obj)["indexDigest"] = indexDigest
	opts := g.opts
	opts.OCI = verify.OCILayout(tampered)
	run(t, seal(t, b), opts, verify.CodeContainerDigestMismatch)
	// An evaluator-owned container is deferred to the task.
	rec := run(t, seal(t, a2()), verify.Options{OCI: verify.OCILayout(dir)})
	if rec.Container == nil || !rec.Container.DeferredToTask || rec.Container.Source != "evaluator-task-container" {
		t.Fatalf("container %+v", rec.Container)
	}
}
