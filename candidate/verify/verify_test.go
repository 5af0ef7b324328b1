package verify_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/candidate"
	"github.com/agentrt/agentrt/candidate/netsafe"
	"github.com/agentrt/agentrt/candidate/verify"
	"github.com/agentrt/agentrt/canonjson"
)

// run verifies data and requires the verdict and the set of issue codes.
func run(t *testing.T, data []byte, opts verify.Options, wantCodes ...string) *verify.Record {
	t.Helper()
	rec, err := verify.Verify(context.Background(), data, opts)
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	var codes []string
	for _, is := range rec.Issues {
		if !slices.Contains(codes, is.Code) {
			codes = append(codes, is.Code)
		}
	}
	slices.Sort(codes)
	slices.Sort(wantCodes)
	if !slices.Equal(codes, wantCodes) {
		t.Fatalf("issue codes %v, want %v; issues %+v", codes, wantCodes, rec.Issues)
	}
	want := verify.Verified
	if len(wantCodes) > 0 {
		want = verify.Rejected
	}
	if rec.Verdict != want {
		t.Fatalf("verdict %s, want %s", rec.Verdict, want)
	}
	// The record is self-digested with candidate's rule.
	d, err := candidate.SelfDigest(rec)
	if err != nil || d != rec.Digest || rec.Kind != verify.RecordKind || rec.DigestAlgorithm != verify.DigestAlgorithm {
		t.Fatalf("record digest %s (recomputed %s, %v), kind %s", rec.Digest, d, err, rec.Kind)
	}
	if len(rec.NotPerformed) == 0 {
		t.Fatal("the record must list the steps not performed")
	}
	return rec
}

// gitFixture is the A4 repository, the A4 patch and the tree it yields.
type gitFixture struct {
	repo  *repoFixture
	patch []byte
	tree  string
	opts  verify.Options
}

func newGitFixture(t *testing.T) *gitFixture {
	t.Helper()
	r := newRepo(t, githubOrigin)
	patch, tree := r.diff(func() {
		r.Write(map[string]string{"README.md": "hello\nworld\n", "src/agent.js": "x:#!/usr/bin/env node\nconsole.log(\"v2\")\n"})
	})
	if digestOf(patch) != patchSHA256A4 || len(patch) != 309 || tree != candTreeA4 {
		t.Fatalf("A4 patch %s (%d B), tree %s; want the §23.1 anchors", digestOf(patch), len(patch), tree)
	}
	return &gitFixture{repo: r, patch: patch, tree: tree, opts: verify.Options{Repositories: map[string]string{"example/agent": r.dir}}}
}

// TestDisabledBothDialects: V01 (A2, ts16) and S01 (A3, seed) verify and
// carry the §23.1 anchor digests; auto picks the dialect from lineage.
func TestDisabledBothDialects(t *testing.T) {
	rec := run(t, seal(t, a2()), verify.Options{})
	if rec.BundleDigest != digestA2 || rec.Dialect != candidate.DialectTS16 || rec.CodeKind != "disabled" || rec.MaterializedTree != nil {
		t.Fatalf("A2 record %+v", rec)
	}
	a3 := a2()
	a3["code"] = obj{"kind": "disabled", "reason": "control"}
	a3["lineage"] = obj{"source": "human"}
	rec = run(t, seal(t, a3), verify.Options{})
	if rec.BundleDigest != digestA3 || rec.Dialect != candidate.DialectSeed {
		t.Fatalf("A3 record %+v", rec)
	}
	// S05-like: A2 forced into the seed dialect lacks lineage.
	run(t, seal(t, a2()), verify.Options{Dialect: candidate.DialectSeed}, verify.CodeSchemaInvalid)
}

// TestGitPatchVerified: V02, A4 with the repository fixture present.
func TestGitPatchVerified(t *testing.T) {
	g := newGitFixture(t)
	before := g.repo.Git("-C", g.repo.dir, "count-objects", "-v")
	rec := run(t, seal(t, a4(t, g.patch, g.tree)), g.opts)
	if rec.BundleDigest != digestA4 || rec.MaterializedTree == nil || *rec.MaterializedTree != candTreeA4 {
		t.Fatalf("A4 record digest %s, tree %v", rec.BundleDigest, rec.MaterializedTree)
	}
	if rec.Repository == nil || rec.Repository.BaseCommit != baseCommitA4 || rec.Repository.BaseTree != baseTreeA4 {
		t.Fatalf("repository %+v", rec.Repository)
	}
	if rec.Entrypoint == nil || rec.Entrypoint.Path != "src/agent.js" || rec.Entrypoint.ByteLength != 38 {
		t.Fatalf("entrypoint %+v", rec.Entrypoint)
	}
	if len(rec.Workspaces) != 1 || rec.Workspaces[0].ArchiveContent != verify.ArchiveUnverified || rec.Workspaces[0].Files != 2 {
		t.Fatalf("workspaces %+v", rec.Workspaces)
	}
	var paths []string
	for _, a := range rec.Artifacts {
		paths = append(paths, a.Path)
	}
	if want := []string{"/code/patch/artifact", "/execution/workspace/manifest", "/execution/workspace/archive"}; !slices.Equal(paths, want) {
		t.Fatalf("artifacts %v, want %v", paths, want)
	}
	if len(rec.Resources) != 1 || rec.Resources[0].Path != "/profile/resources/files/0/resource" {
		t.Fatalf("resources %+v", rec.Resources)
	}
	if after := g.repo.Git("-C", g.repo.dir, "count-objects", "-v"); after != before {
		t.Fatalf("verification changed the object store:\n%s\n%s", before, after)
	}
	// The seed-dialect twin verifies too.
	seed := a4(t, g.patch, g.tree)
	seed["lineage"] = obj{"source": "human"}
	if rec := run(t, seal(t, seed), g.opts); rec.Dialect != candidate.DialectSeed {
		t.Fatalf("dialect %s", rec.Dialect)
	}
}

// TestNoOpVerified: V03, A5: materializedTree = baseTree.
func TestNoOpVerified(t *testing.T) {
	g := newGitFixture(t)
	b := a4(t, g.patch, g.tree)
	b["code"] = obj{"kind": "no-op", "reason": "proposer-no-change", "baseCommit": baseCommitA4, "baseTree": baseTreeA4,
		"repository": obj{"kind": "github", "owner": "example", "repo": "agent"}}
	rec := run(t, seal(t, b), g.opts)
	if rec.BundleDigest != digestA5 || rec.MaterializedTree == nil || *rec.MaterializedTree != baseTreeA4 {
		t.Fatalf("A5 record digest %s, tree %v", rec.BundleDigest, rec.MaterializedTree)
	}
}

// TestRejections: §23.2 cases that reject a sealed, schema-valid bundle.
func TestRejections(t *testing.T) {
	g := newGitFixture(t)
	code := func(b obj) obj { return b["code"].(obj) }
	cases := []struct {
		name   string
		mutate func(b obj) []byte
		want   string
	}{
		{"V04 tampered digest", func(b obj) []byte {
			data := seal(t, b)
			d := b["digest"].(string)
			last := "0"
			if strings.HasSuffix(d, "0") {
				last = "1"
			}
			return []byte(strings.Replace(string(data), d, d[:len(d)-1]+last, 1))
		}, verify.CodeDigestMismatch},
		{"V15 wrong patch hash", func(b obj) []byte {
			code(b)["patch"].(obj)["artifact"].(obj)["sha256"] = "sha256:" + strings.Repeat("0", 64)
			return seal(t, b)
		}, verify.CodeArtifactHash},
		{"V16 wrong inline resource hash", func(b obj) []byte {
			b["profile"].(obj)["resources"].(obj)["files"].([]any)[0].(obj)["resource"].(obj)["sha256"] = "sha256:" + strings.Repeat("b", 64)
			return seal(t, b)
		}, verify.CodeResourceHash},
		{"G1 patch does not apply", func(b obj) []byte {
			p := strings.Replace(string(g.patch), " hello\n", " hullo\n", 1)
			code(b)["patch"].(obj)["artifact"] = embedded([]byte(p))
			return seal(t, b)
		}, "patch-does-not-apply"},
		{"G2 candidate tree mismatch", func(b obj) []byte {
			code(b)["candidateTree"] = strings.Repeat("a", 40)
			return seal(t, b)
		}, verify.CodeCandidateTreeMismatch},
		{"G3 base tree mismatch", func(b obj) []byte {
			code(b)["baseTree"] = strings.Repeat("c", 40)
			return seal(t, b)
		}, "base-tree-mismatch"},
		{"G4 base commit missing", func(b obj) []byte {
			code(b)["baseCommit"] = strings.Repeat("d", 40)
			return seal(t, b)
		}, "base-commit-missing"},
		{"V37b non-canonical manifest", func(b obj) []byte {
			ws := b["execution"].(obj)["workspace"].(obj)
			m := []byte(`{"kind":"agent-candidate-workspace-manifest","files":` + string(marshalJSON(t, ws["material"].(map[string]any)["files"])) + `}`)
			ws["manifest"] = embedded(m)
			ws["digest"] = digestOf(m)
			return seal(t, b)
		}, verify.CodeWorkspaceManifestMismatch},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			run(t, tc.mutate(a4(t, g.patch, g.tree)), g.opts, tc.want)
		})
	}
}

// TestUnsafeTree: G6, a patch adding a symlink applies but its tree is
// unsafe.
func TestUnsafeTree(t *testing.T) {
	g := newGitFixture(t)
	patch, tree := g.repo.diff(func() {
		if err := os.Symlink("/etc/passwd", filepath.Join(g.repo.dir, "link")); err != nil {
			t.Fatal(err)
		}
	})
	if tree != "7b2e851d7e0d82919550f813f87fb375cdab3204" {
		t.Fatalf("G6 tree %s", tree)
	}
	run(t, seal(t, a4(t, patch, tree)), g.opts, "unsafe-tree")
}

// TestRepositoryMismatch: G5, the mapped clone's origin is another
// repository.
func TestRepositoryMismatch(t *testing.T) {
	g := newGitFixture(t)
	other := newRepo(t, "https://github.com/other/agent.git")
	run(t, seal(t, a4(t, g.patch, g.tree)), verify.Options{Repositories: map[string]string{"example/agent": other.dir}}, "repository-mismatch")
}

// TestGitHubResource: V45b verifies a github resource blob; V45d
// rejects a path that is a tree or missing.
func TestGitHubResource(t *testing.T) {
	g := newGitFixture(t)
	res := func(path string) []byte {
		b := a4(t, g.patch, g.tree)
		b["profile"].(obj)["resources"].(obj)["skills"] = []any{obj{"kind": "github", "repository": obj{"kind": "github", "owner": "example", "repo": "agent"},
			"path": path, "commit": baseCommitA4, "sha256": digestOf([]byte("hello\n")), "byteLength": 6}}
		return seal(t, b)
	}
	rec := run(t, res("README.md"), g.opts)
	if len(rec.Resources) != 2 || rec.Resources[1].Kind != "github" || rec.Resources[1].Path != "/profile/resources/skills/0" {
		t.Fatalf("resources %+v", rec.Resources)
	}
	run(t, res("src"), g.opts, "resource-path")
	run(t, res("missing.md"), g.opts, "resource-path")
}

// TestOperational: a repository the map lacks is an operational error,
// not a rejection.
func TestOperational(t *testing.T) {
	g := newGitFixture(t)
	_, err := verify.Verify(context.Background(), seal(t, a4(t, g.patch, g.tree)), verify.Options{})
	if !errors.Is(err, verify.ErrRepositoryNotMapped) {
		t.Fatalf("err = %v", err)
	}
}

// TestParseAndSchema: step 1 and 3 verdicts.
func TestParseAndSchema(t *testing.T) {
	good := seal(t, a2())
	run(t, append([]byte("\xef\xbb\xbf"), good...), verify.Options{}, verify.CodeParseError)
	run(t, []byte(`{"kind":"a","kind":"b"}`), verify.Options{}, verify.CodeParseError) // V51
	run(t, []byte(`[1]`), verify.Options{}, verify.CodeParseError)
	run(t, []byte("{\"a\":\"\xff\"}"), verify.Options{}, verify.CodeParseError)
	run(t, good, verify.Options{MaxBytes: 10}, verify.CodeParseError)
	b := a2()
	b["ignoredByOldConsumer"] = true // V06
	rec := run(t, seal(t, b), verify.Options{}, verify.CodeSchemaInvalid)
	if rec.Issues[0].Path != "" || rec.BundleDigest == "" {
		t.Fatalf("issues %+v, bundle digest %q", rec.Issues, rec.BundleDigest)
	}
}

// memorySeed returns A2 with an isolated memory seed at loc over data.
func memorySeed(loc obj, data []byte) obj {
	b := a2()
	b["memory"] = obj{"mode": "isolated", "scope": "task", "seed": obj{"locator": loc, "sha256": digestOf(data), "byteLength": len(data)}}
	return b
}

var s3Loc = obj{"kind": "s3", "bucket": "candidate-artifacts", "key": "seeds/memory.json", "region": "us-east-1"}

// TestArtifactDir: V33 with a local content-addressed directory; V33g a
// store returning 11 bytes for byteLength 10; a missing object.
func TestArtifactDir(t *testing.T) {
	seedBytes := []byte(`{"k":"v"}!`) // 10 bytes
	dir := t.TempDir()
	name := strings.TrimPrefix(digestOf(seedBytes), "sha256:")
	data := seal(t, memorySeed(s3Loc, seedBytes))
	run(t, data, verify.Options{Artifacts: verify.Dir(dir)}, verify.CodeArtifactUnavailable)
	run(t, data, verify.Options{}, verify.CodeArtifactUnavailable)
	if err := os.WriteFile(filepath.Join(dir, name), seedBytes, 0o644); err != nil {
		t.Fatal(err)
	}
	rec := run(t, data, verify.Options{Artifacts: verify.Dir(dir)})
	if len(rec.Artifacts) != 1 || rec.Artifacts[0].Source != "s3" || rec.Artifacts[0].Path != "/memory/seed" {
		t.Fatalf("artifacts %+v", rec.Artifacts)
	}
	if err := os.WriteFile(filepath.Join(dir, name), append(seedBytes, '!'), 0o644); err != nil {
		t.Fatal(err)
	}
	run(t, data, verify.Options{Artifacts: verify.Dir(dir)}, verify.CodeArtifactLength)
	if err := os.WriteFile(filepath.Join(dir, name), []byte(`{"k":"w"}!`), 0o644); err != nil {
		t.Fatal(err)
	}
	run(t, data, verify.Options{Artifacts: verify.Dir(dir)}, verify.CodeArtifactHash)
}

// TestResolver: V33 over a netsafe resolver. The S3 endpoint is a local
// server, so the default client refuses it (V33f, resolver-blocked);
// permitting loopback (an operator's choice) lets the same bytes verify,
// and a server sending 11 bytes for 10 is artifact-length (V33g).
func TestResolver(t *testing.T) {
	seedBytes := []byte(`{"k":"v"}!`)
	body := seedBytes
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/candidate-artifacts/seeds/memory.json" {
			http.NotFound(w, r)
			return
		}
		w.Write(body)
	}))
	defer srv.Close()
	data := seal(t, memorySeed(s3Loc, seedBytes))
	blocked := &verify.Resolver{S3Endpoint: srv.URL}
	run(t, data, verify.Options{Artifacts: blocked}, verify.CodeResolverBlocked)
	permit := &verify.Resolver{S3Endpoint: srv.URL, Client: netsafe.NewClient(netsafe.Options{Permit: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}})}
	run(t, data, verify.Options{Artifacts: permit})
	body = append(slices.Clone(seedBytes), '!')
	run(t, data, verify.Options{Artifacts: permit}, verify.CodeArtifactLength)
	other := memorySeed(obj{"kind": "s3", "bucket": "candidate-artifacts", "key": "seeds/absent.json"}, seedBytes)
	run(t, seal(t, other), verify.Options{Artifacts: permit}, verify.CodeArtifactUnavailable)
}

// TestPrivateCAS: V34p, a seed-dialect private-cas memory seed is
// unavailable without a store and verifies from a configured directory;
// ts16 rejects the locator in the schema.
func TestPrivateCAS(t *testing.T) {
	seedBytes := []byte("seed")
	b := memorySeed(obj{"kind": "private-cas", "namespace": "eval", "digest": digestOf(seedBytes)}, seedBytes)
	run(t, seal(t, b), verify.Options{}, verify.CodeSchemaInvalid)
	b["code"] = obj{"kind": "disabled", "reason": "control"}
	b["lineage"] = obj{"source": "human"}
	data := seal(t, b)
	run(t, data, verify.Options{Artifacts: &verify.Resolver{}}, verify.CodeArtifactUnavailable)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, strings.TrimPrefix(digestOf(seedBytes), "sha256:")), seedBytes, 0o644); err != nil {
		t.Fatal(err)
	}
	rec := run(t, data, verify.Options{Artifacts: &verify.Resolver{PrivateCAS: verify.Dir(dir)}})
	if rec.Artifacts[0].Source != "private-cas" {
		t.Fatalf("artifacts %+v", rec.Artifacts)
	}
	run(t, data, verify.Options{Artifacts: verify.Chain{verify.Dir(t.TempDir()), verify.Dir(dir)}})
}

// TestRecordIsCanonicalJSON: the record round-trips through canonjson.
func TestRecordIsCanonicalJSON(t *testing.T) {
	rec := run(t, seal(t, a2()), verify.Options{})
	v, err := canonjson.ToValue(rec)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := canonjson.Canonical(v); err != nil {
		t.Fatal(err)
	}
}

// TestGitPatchShapes: G7, a binary patch verifies when candidateTree
// matches the §23.2 anchor; G8, a patch deleting every file yields the
// empty tree (unsafe-tree).
func TestGitPatchShapes(t *testing.T) {
	g := newGitFixture(t)
	patch, tree := g.repo.diff(func() { g.repo.Write(map[string]string{"bin.dat": "binary\x00\x01\x02"}) })
	if tree != "18c849433daef331760cf511d76982d28572f2f2" || !strings.Contains(string(patch), "GIT binary patch") {
		t.Fatalf("G7 tree %s, patch %q", tree, patch)
	}
	rec := run(t, seal(t, a4(t, patch, tree)), g.opts)
	if *rec.MaterializedTree != tree {
		t.Fatalf("G7 materialized %s", *rec.MaterializedTree)
	}
	patch, tree = g.repo.diff(func() { g.repo.Git("-C", g.repo.Dir, "rm", "-q", "-r", ".") })
	run(t, seal(t, a4(t, patch, tree)), g.opts, "unsafe-tree")
}

// TestResourceCommit: a github resource pinned to a commit the
// repository lacks, or to a tree id, is resource-commit.
func TestResourceCommit(t *testing.T) {
	g := newGitFixture(t)
	for _, commit := range []string{strings.Repeat("e", 40), baseTreeA4} {
		b := a4(t, g.patch, g.tree)
		b["profile"].(obj)["resources"].(obj)["tools"] = []any{obj{"kind": "github", "repository": obj{"kind": "github", "owner": "example", "repo": "agent"},
			"path": "README.md", "commit": commit, "sha256": digestOf([]byte("hello\n")), "byteLength": 6}}
		run(t, seal(t, b), g.opts, "resource-commit")
	}
}

// TestIPFSResolver: an ipfs memory seed read through a permitted local
// gateway verifies and is recorded with source ipfs.
func TestIPFSResolver(t *testing.T) {
	seedBytes := []byte("ipfs seed")
	cid := "b" + strings.Repeat("a", 58)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/ipfs/"+cid+"/seed.json" {
			http.NotFound(w, r)
			return
		}
		w.Write(seedBytes)
	}))
	defer srv.Close()
	client := netsafe.NewClient(netsafe.Options{Permit: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}})
	data := seal(t, memorySeed(obj{"kind": "ipfs", "cid": cid, "path": "seed.json"}, seedBytes))
	rec := run(t, data, verify.Options{Artifacts: &verify.Resolver{IPFSGateway: srv.URL, Client: client}})
	if rec.Artifacts[0].Source != "ipfs" {
		t.Fatalf("artifacts %+v", rec.Artifacts)
	}
	run(t, data, verify.Options{Artifacts: &verify.Resolver{IPFSGateway: srv.URL}}, verify.CodeResolverBlocked)
}

// TestKnowledgeArtifacts: V46, a knowledge block whose snapshot is the A4
// workspace: integrity verifies, the artifacts come in §22 order, the
// repeated manifest is served from the (sha256, byteLength) cache, a
// missing retrievalConfig ref is artifact-unavailable, and the support
// policy refuses knowledge (unsupported-surface).
func TestKnowledgeArtifacts(t *testing.T) {
	g := newGitFixture(t)
	config := []byte(`{"topK":4}`)
	knowledge := func(b obj) obj {
		h := "sha256:" + strings.Repeat("1", 64)
		b["knowledge"] = obj{
			"candidate": obj{"kind": "knowledge-improvement-candidate", "runId": "run-1", "candidateId": "cand-1", "goalHash": h, "baseHash": h,
				"candidateHash": h, "evidenceHash": h, "promotionPlanHash": h},
			"snapshot":        b["execution"].(obj)["workspace"],
			"retrievalConfig": obj{"locator": s3Loc, "sha256": digestOf(config), "byteLength": len(config)},
			"evaluation":      embedded([]byte("evaluation report")),
		}
		return b
	}
	data := seal(t, knowledge(a4(t, g.patch, g.tree)))
	run(t, data, g.opts, verify.CodeArtifactUnavailable)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, strings.TrimPrefix(digestOf(config), "sha256:")), config, 0o644); err != nil {
		t.Fatal(err)
	}
	opts := g.opts
	opts.Artifacts = verify.Dir(dir)
	rec := run(t, data, opts)
	var paths []string
	for _, a := range rec.Artifacts {
		paths = append(paths, a.Path)
	}
	want := []string{"/code/patch/artifact", "/execution/workspace/manifest", "/execution/workspace/archive",
		"/knowledge/snapshot/manifest", "/knowledge/snapshot/archive", "/knowledge/retrievalConfig", "/knowledge/evaluation"}
	if !slices.Equal(paths, want) || len(rec.Workspaces) != 2 {
		t.Fatalf("artifacts %v, workspaces %+v", paths, rec.Workspaces)
	}
	// V46 with --execute-support: the reference runtime does not execute
	// knowledge; integrity still verified every artifact.
	policy := verify.ReferenceSupport()
	opts.Support = &policy
	rec = run(t, data, opts, verify.CodeUnsupportedSurface)
	if len(rec.Issues) != 1 || rec.Issues[0].Path != "/knowledge" || len(rec.Artifacts) != len(want) {
		t.Fatalf("issues %+v, %d artifacts", rec.Issues, len(rec.Artifacts))
	}
}

// TestResolverUnreachable: a resolver that cannot connect is an
// operational error (exit 2), not a rejection.
func TestResolverUnreachable(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	endpoint := srv.URL
	srv.Close() // nothing listens there any more
	client := netsafe.NewClient(netsafe.Options{Permit: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}})
	rec, err := verify.Verify(context.Background(), seal(t, memorySeed(s3Loc, []byte("seed"))),
		verify.Options{Artifacts: &verify.Resolver{S3Endpoint: endpoint, Client: client}})
	if err == nil || rec != nil {
		t.Fatalf("Verify = %+v, %v; want an operational error", rec, err)
	}
}

// Options.Progress hears each step as it begins, in order, and only the
// steps that run: the optional ones when asked for, none after a bundle
// that does not decode.
func TestProgress(t *testing.T) {
	var steps []string
	opts := verify.Options{Progress: func(n int, name string) { steps = append(steps, fmt.Sprint(n, " ", name)) }}
	run(t, seal(t, a2()), opts)
	want := []string{"1 read and decode", "2 dialect", "3 schema", "4 digest", "6 artifacts", "7 workspace snapshots",
		"8 resources", "9 code", "10 entrypoint evidence"}
	if !slices.Equal(steps, want) {
		t.Errorf("steps %q, want %q", steps, want)
	}
	steps = nil
	policy := verify.ReferenceSupport()
	opts.Support = &policy
	run(t, seal(t, a2()), opts)
	if !slices.Contains(steps, "5 support policy") {
		t.Errorf("with a support policy, steps %q lack step 5", steps)
	}
	steps = nil
	run(t, []byte("{"), opts, verify.CodeParseError)
	if !slices.Equal(steps, []string{"1 read and decode"}) {
		t.Errorf("a bundle that does not decode: steps %q", steps)
	}
}
