package verify_test

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/candidate"
	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/internal/gittest"
)

// Anchors of spec candidate §23.1 (A2, A4, A5).
const (
	digestA2      = "sha256:d6e849af4a7c5f850466543a825b04461ba62aeeec3546c2f6f808763b7dc88c"
	digestA3      = "sha256:e28ad2816796851548366cac5fb120824be7ec470666e1f483cfd30e65713209"
	digestA4      = "sha256:de5991f1050c2cbe8669a96b8d9ff32b072cc5122fd948956fd2f90fc1d55e64"
	digestA5      = "sha256:88b43680d5684383c13fab014e820d6fd5c461dc2260408dd0d3ee7b758e8b11"
	baseCommitA4  = "6e3c606c1f3c3620787e392ee3cc116293b2ecfe"
	baseTreeA4    = "2c3193a6d838d34285e1781a5e82903dd6f99eee"
	candTreeA4    = "9f2c73d75227fb5f5ccc4394834661c7e0936f5f"
	githubOrigin  = "https://github.com/example/agent.git"
	patchSHA256A4 = "sha256:cd921b79f26b81756efdfa74d105cf4706e563031eed63c6f698e349cd01dfc7"
)

// repoFixture is the A4 repository (§23.1), made with the system git.
type repoFixture struct {
	*gittest.Repo
	t   testing.TB
	dir string
}

func newRepo(t testing.TB, origin string) *repoFixture {
	t.Helper()
	r := gittest.New(t, origin, gittest.Identity{Name: "T", Email: "t@example.invalid", Date: "2000-01-01T00:00:00Z"})
	f := &repoFixture{Repo: r, t: t, dir: r.Dir}
	f.Write(map[string]string{"README.md": "hello\n", "src/agent.js": "x:#!/usr/bin/env node\nconsole.log(\"v1\")\n"})
	f.Git("-C", f.dir, "add", "-A")
	f.Git("-C", f.dir, "commit", "-q", "-m", "base")
	if got := f.Git("-C", f.dir, "rev-parse", "HEAD"); got != baseCommitA4 {
		t.Fatalf("fixture base commit %s, want the A4 anchor %s", got, baseCommitA4)
	}
	return f
}

// diff returns `git diff --binary` of the work tree against HEAD and the
// tree it stages, then restores the work tree: the patch and the tree a
// producer would put in a candidate.
func (f *repoFixture) diff(change func()) (patch []byte, tree string) {
	f.t.Helper()
	change()
	f.Git("-C", f.dir, "add", "-A")
	patch = f.Output("-C", f.dir, "diff", "--cached", "--binary")
	tree = f.Git("-C", f.dir, "write-tree")
	f.Git("-C", f.dir, "reset", "-q", "--hard", "HEAD")
	return patch, tree
}

func digestOf(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}

type obj = map[string]any

func embedded(b []byte) obj {
	return obj{"encoding": "base64", "content": base64.StdEncoding.EncodeToString(b), "sha256": digestOf(b), "byteLength": len(b)}
}

// a2 is the disabled control bundle A2 (ts16), unsealed.
func a2() obj {
	return obj{
		"kind": "agent-candidate-bundle", "digestAlgorithm": "rfc8785-sha256",
		"code": obj{"kind": "disabled"},
		"execution": obj{
			"cwd": obj{"path": ".", "workspace": "task"}, "environment": obj{"kind": "evaluator-task-container"},
			"harness": "codex", "harnessVersion": "0.1.0", "instructionDelivery": obj{"kind": "stdin-utf8"},
			"isolation": obj{"candidateSecrets": "disabled", "network": "disabled", "remoteIntegrations": "disabled"},
			"launch":    obj{"args": []any{obj{"kind": "public", "value": "exec"}}, "executable": "/usr/local/bin/codex", "kind": "container-command"},
		},
		"memory":  obj{"mode": "disabled"},
		"profile": obj{"harness": "codex", "model": obj{"default": "openai/gpt-5.4"}},
	}
}

// a4 is the git-patch bundle A4 (ts16) over patch, unsealed.
func a4(t testing.TB, patch []byte, candTree string) obj {
	t.Helper()
	material := candidate.WorkspaceManifestMaterial{Kind: candidate.KindWorkspaceManifestValue, Files: []candidate.ManifestFile{
		{Path: "README.md", Mode: 420, SHA256: digestOf([]byte("hello\nworld\n")), ByteLength: 12},
		{Path: "src/agent.js", Mode: 493, SHA256: digestOf([]byte("#!/usr/bin/env node\nconsole.log(\"v2\")\n")), ByteLength: 38},
	}}
	manifest, err := candidate.MaterialBytes(&material)
	if err != nil {
		t.Fatal(err)
	}
	var mat any
	if err := json.Unmarshal(manifest, &mat); err != nil {
		t.Fatal(err)
	}
	b := a2()
	b["code"] = obj{
		"kind": "git-patch", "baseCommit": baseCommitA4, "baseTree": baseTreeA4, "candidateTree": candTree,
		"patch":      obj{"format": "git-diff-binary", "artifact": embedded(patch)},
		"repository": obj{"kind": "github", "owner": "example", "repo": "agent"},
	}
	e := b["execution"].(obj)
	e["cwd"] = obj{"path": ".", "workspace": "candidate"}
	e["env"] = obj{"NODE_ENV": obj{"kind": "public", "value": "production"}}
	e["environment"] = obj{"kind": "pinned-container", "container": obj{"image": "node:22", "indexDigest": "sha256:" + strings.Repeat("6", 64)}}
	e["instructionDelivery"] = obj{"kind": "argv-append"}
	e["launch"] = obj{"args": []any{obj{"kind": "public", "value": "--mode=benchmark"}}, "entrypoint": "src/agent.js", "kind": "candidate-entrypoint"}
	e["workspace"] = obj{
		"kind": "agent-candidate-workspace-snapshot", "digest": digestOf(manifest), "material": mat,
		"manifest": embedded(manifest), "archive": embedded([]byte("placeholder-archive-bytes")),
	}
	b["profile"] = obj{
		"harness": "codex", "model": obj{"default": "openai/gpt-5.4", "reasoningEffort": "high"}, "name": "repository-agent",
		"prompt": obj{"systemPrompt": "Solve the repository task."},
		"resources": obj{"failOnError": true, "files": []any{obj{"path": ".agent/policy.json", "resource": obj{
			"byteLength": 2, "content": "{}", "kind": "inline", "name": "policy", "sha256": digestOf([]byte("{}"))}}}},
	}
	return b
}

// seal sets b's digest to its self-digest and returns its JSON bytes.
func seal(t testing.TB, b obj) []byte {
	t.Helper()
	delete(b, "digest")
	v, err := canonjson.Decode(marshal(t, b))
	if err != nil {
		t.Fatal(err)
	}
	d, err := candidate.SelfDigestValue(v)
	if err != nil {
		t.Fatal(err)
	}
	b["digest"] = d
	return marshal(t, b)
}

func marshal(t testing.TB, b obj) []byte {
	t.Helper()
	return marshalJSON(t, b)
}

func marshalJSON(t testing.TB, v any) []byte {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return data
}
