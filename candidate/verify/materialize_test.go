package verify_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/candidate"
	"github.com/agentrt/agentrt/candidate/verify"
	"github.com/agentrt/agentrt/candidate/wsarchive"
	"github.com/agentrt/agentrt/internal/receipttest"
)

// candidateFiles are the A4 candidate workspace after its patch.
func candidateFiles() []wsarchive.File {
	return []wsarchive.File{
		{Path: "README.md", Mode: 0o644, Data: []byte("hello\nworld\n")},
		{Path: "src/agent.js", Mode: 0o755, Data: []byte("#!/usr/bin/env node\nconsole.log(\"v2\")\n")},
	}
}

// taskFiles are the task workspace of the fixture task.
func taskFiles() []wsarchive.File {
	return []wsarchive.File{
		{Path: "package.json", Mode: 0o644, Data: []byte("{\"name\":\"task\"}\n")},
		{Path: "scripts/check.sh", Mode: 0o755, Data: []byte("#!/bin/sh\nexit 0\n")},
		{Path: "src/ticket.ts", Mode: 0o644, Data: []byte("export const ticket = 17\n")},
	}
}

// matFixture is a task (from the receipttest chain, with a real task
// workspace stored behind s3 locators in the chain's artifact
// directory), its suite, and a context builder.
type matFixture struct {
	t     testing.TB
	chain *receipttest.Chain
	task  *candidate.BenchmarkTask
	suite *candidate.BenchmarkSuite
	base  string
}

func newMatFixture(t testing.TB) *matFixture {
	t.Helper()
	c := receipttest.New(t)
	task := c.Task
	w := &task.Workspace
	w.Material = wsarchive.Manifest(taskFiles())
	manifest, err := candidate.MaterialBytes(&w.Material)
	if err != nil {
		t.Fatal(err)
	}
	c.Captured(&w.Manifest, manifest)
	w.Digest = w.Manifest.SHA256
	archive, err := wsarchive.Encode(taskFiles(), nil)
	if err != nil {
		t.Fatal(err)
	}
	c.Captured(&w.Archive, archive)
	task.Digest = c.SelfDigest(task)
	f := &matFixture{t: t, chain: c, task: task, base: t.TempDir()}
	f.suite = &candidate.BenchmarkSuite{Kind: candidate.KindBenchmarkSuiteValue, DigestAlgorithm: candidate.DigestAlgorithm,
		TaskDigests: []string{task.Digest}, Reps: 1, Seeds: []int64{7}}
	f.suite.Digest = c.SelfDigest(f.suite)
	return f
}

// context is a materialization context for the bundle digest: fresh
// roots under the fixture's temporary directory, a gateway-only grant
// (the task allows model calls) and a selected linux/amd64 manifest.
func (f *matFixture) context(bundleDigest string, active bool) *verify.MaterializationContext {
	f.t.Helper()
	cell := candidate.RunCell{Kind: candidate.KindRunCellValue, ExperimentDigest: "sha256:" + strings.Repeat("e", 64), Arm: "candidate",
		BundleDigest: bundleDigest, SuiteDigest: f.suite.Digest, TaskDigest: f.task.Digest, Seed: 7, Attempt: 1}
	cell.Digest = f.chain.SelfDigest(&cell)
	prep := "prep-1"
	m := &verify.MaterializationContext{
		Kind: verify.MaterializationContextKind, Task: f.task, Suite: f.suite, RunCell: cell,
		ExecutionID: "exec-1", PreparationID: &prep,
		TaskRoot: filepath.Join(f.base, "task"), ProfileRoot: filepath.Join(f.base, "profile"),
		Model: verify.ModelGrant{GrantDigest: "sha256:" + strings.Repeat("9", 64),
			Network: candidate.ModelNetwork{Mode: "gateway-only", Domains: []string{"api.openai.com"}}},
		Container: &verify.ContainerSelection{ManifestDigest: "sha256:" + strings.Repeat("7", 64), Platform: candidate.Platform{OS: "linux", Architecture: "amd64"}},
	}
	if active {
		root := filepath.Join(f.base, "candidate")
		m.CandidateRoot = &root
	}
	return m
}

// opts are the verifier options with the chain's artifact directory.
func (f *matFixture) opts(g *gitFixture, m *verify.MaterializationContext) verify.Options {
	o := verify.Options{Artifacts: verify.Dir(f.chain.Dir), Materialize: m}
	if g != nil {
		o.Repositories = g.opts.Repositories
	}
	return o
}

// materializable is A4 with a real reference-layout workspace archive
// and without the prompt this materializer refuses.
func materializable(t *testing.T, g *gitFixture) obj {
	b := a4(t, g.patch, g.tree)
	archive, err := wsarchive.Encode(candidateFiles(), nil)
	if err != nil {
		t.Fatal(err)
	}
	b["execution"].(obj)["workspace"].(obj)["archive"] = embedded(archive)
	delete(b["profile"].(obj), "prompt")
	return b
}

// sealed seals b and returns its bytes, digest and parsed bundle.
func sealed(t *testing.T, b obj) ([]byte, *candidate.Bundle) {
	t.Helper()
	data := seal(t, b)
	parsed, err := candidate.ParseBundle(data, candidate.DialectAuto)
	if err != nil {
		t.Fatal(err)
	}
	return data, parsed
}

// requireTree requires root to hold exactly files (path, mode, bytes).
func requireTree(t *testing.T, root string, files []wsarchive.File) {
	t.Helper()
	var got []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		got = append(got, filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, f := range files {
		want = append(want, f.Path)
		info, err := os.Lstat(filepath.Join(root, f.Path))
		if err != nil {
			t.Fatal(err)
		}
		data, _ := os.ReadFile(filepath.Join(root, f.Path))
		if info.Mode() != f.Mode || string(data) != string(f.Data) {
			t.Errorf("%s: mode %v %q, want %v %q", f.Path, info.Mode(), data, f.Mode, f.Data)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("%s holds %v, want %v", root, got, want)
	}
}

// requireValidReceipt verifies the record's receipt with VerifyReceipt
// against the bundle and the task.
func requireValidReceipt(t *testing.T, f *matFixture, rec *verify.Record, b *candidate.Bundle) *candidate.MaterializationReceipt {
	t.Helper()
	r := rec.MaterializationReceipt
	if r == nil {
		t.Fatalf("no receipt; issues %+v", rec.Issues)
	}
	if slices.Contains(rec.NotPerformed, verify.NotPerformedMaterialization) {
		t.Fatalf("notPerformed %v", rec.NotPerformed)
	}
	if d := f.chain.SelfDigest(rec); d != rec.Digest {
		t.Fatalf("record digest %s, recomputed %s", rec.Digest, d)
	}
	rr, err := verify.VerifyReceipt(context.Background(), receipttest.Bytes(t, r),
		verify.ReceiptOptions{Artifacts: verify.Dir(f.chain.Dir), Bundle: b, Task: f.task})
	if err != nil {
		t.Fatal(err)
	}
	if rr.Verdict != verify.Valid || len(rr.Issues) != 0 {
		t.Fatalf("receipt verdict %s: %+v", rr.Verdict, rr.Issues)
	}
	if !slices.Equal(rr.Context, []string{"bundle", "task"}) {
		t.Fatalf("receipt checked against %v", rr.Context)
	}
	return r
}

// TestMaterializeGitPatch: §22 step 13 end to end for A4 (git-patch,
// candidate-entrypoint, argv-append, pinned container): the three roots
// hold exactly the candidate workspace, the profile file and the task
// workspace, and the receipt verifies as valid against the bundle and
// the task.
func TestMaterializeGitPatch(t *testing.T) {
	g := newGitFixture(t)
	f := newMatFixture(t)
	bundle := materializable(t, g)
	files := bundle["profile"].(obj)["resources"].(obj)["files"].([]any)
	bundle["profile"].(obj)["resources"].(obj)["files"] = append(files, obj{"path": ".agent/base-readme.md", "executable": true, "resource": obj{
		"kind": "github", "repository": obj{"kind": "github", "owner": "example", "repo": "agent"}, "path": "README.md",
		"commit": baseCommitA4, "sha256": digestOf([]byte("hello\n")), "byteLength": 6}})
	data, b := sealed(t, bundle)
	m := f.context(b.Digest, true)
	rec := run(t, data, f.opts(g, m))
	r := requireValidReceipt(t, f, rec, b)

	requireTree(t, *m.CandidateRoot, candidateFiles())
	requireTree(t, m.TaskRoot, taskFiles())
	requireTree(t, m.ProfileRoot, []wsarchive.File{
		{Path: ".agent/base-readme.md", Mode: 0o755, Data: []byte("hello\n")},
		{Path: ".agent/policy.json", Mode: 0o644, Data: []byte("{}")},
	})
	act := r.ProfileActivation
	if len(act.Files) != 2 || act.Files[0].Content != "hello\n" || act.ProfilePlan.Material.Files[0].ContentSHA256 != digestOf([]byte("hello\n")) {
		t.Errorf("activation %+v", act)
	}

	pm := r.ExecutionPlan.Material
	if r.MaterializedTree == nil || *r.MaterializedTree != candTreeA4 || r.CodeKind != candidate.CodeGitPatch {
		t.Errorf("tree %v, code %s", r.MaterializedTree, r.CodeKind)
	}
	if r.Entrypoint == nil || r.Entrypoint.Path != "src/agent.js" || r.Entrypoint.ByteLength != 38 {
		t.Errorf("entrypoint %+v", r.Entrypoint)
	}
	if pm.Launch.Executable != *m.CandidateRoot+"/src/agent.js" || len(pm.Launch.Args) != 1 || pm.Launch.Args[0].Value != "--mode=benchmark" {
		t.Errorf("launch %+v", pm.Launch)
	}
	if len(pm.Launch.Env) != 1 || pm.Launch.Env["NODE_ENV"].Value != "production" || pm.Launch.Cwd.Workspace != "candidate" {
		t.Errorf("env %+v cwd %+v", pm.Launch.Env, pm.Launch.Cwd)
	}
	if pm.Profile.TargetWorkspace != "candidate" || !slices.Equal(pm.Profile.MountPaths, []string{".agent/base-readme.md", ".agent/policy.json"}) {
		t.Errorf("profile %+v", pm.Profile)
	}
	if pm.Container.Source != "pinned-container" || pm.Container.Image != "node:22" || pm.Container.ManifestDigest != m.Container.ManifestDigest {
		t.Errorf("container %+v", pm.Container)
	}
	if len(pm.Model.Routes) != 1 || pm.Model.Routes[0].Kind != "primary" || *pm.Model.Routes[0].Requested != "openai/gpt-5.4" {
		t.Errorf("routes %+v", pm.Model.Routes)
	}
	if pm.Memory.Mode != "disabled" || pm.RunCell.Digest != m.RunCell.Digest || pm.Workspaces.TaskRoot != m.TaskRoot {
		t.Errorf("memory %+v, cell %s, workspaces %+v", pm.Memory, pm.RunCell.Digest, pm.Workspaces)
	}
}

// TestMaterializeDisabled: the disabled control arm A2 with task-scoped
// memory and utf8-file delivery under the task's evaluator container: no
// candidate root, the §21.5 namespace, an empty before-state, the fixed
// task path in the environment; the receipt verifies.
func TestMaterializeDisabled(t *testing.T) {
	f := newMatFixture(t)
	b := a2()
	b["memory"] = obj{"mode": "isolated", "scope": "task"}
	b["execution"].(obj)["instructionDelivery"] = obj{"kind": "utf8-file", "env": candidate.TaskPathEnv, "path": candidate.TaskPath}
	data, parsed := sealed(t, b)
	m := f.context(parsed.Digest, false)
	m.Container = nil
	rec := run(t, data, f.opts(nil, m))
	r := requireValidReceipt(t, f, rec, parsed)
	requireTree(t, m.TaskRoot, taskFiles())
	requireTree(t, m.ProfileRoot, nil)
	if _, err := os.Stat(filepath.Join(f.base, "candidate")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a disabled bundle got a candidate root: %v", err)
	}
	pm := r.ExecutionPlan.Material
	if r.MaterializedTree != nil || r.Entrypoint != nil || r.CandidateWorkspace != nil || pm.Workspaces.CandidateRoot != nil {
		t.Errorf("disabled receipt %+v", r)
	}
	if pm.Launch.Executable != "/usr/local/bin/codex" || pm.Launch.Env[candidate.TaskPathEnv].Value != candidate.TaskPath {
		t.Errorf("launch %+v", pm.Launch)
	}
	if !same(t, pm.Container, *f.task.EvaluatorTaskContainer) {
		t.Errorf("container %+v", pm.Container)
	}
	// The task file must lie outside every root.
	f.base = t.TempDir()
	inside := f.context(parsed.Digest, false)
	inside.Container, inside.TaskRoot = nil, "/tangle/input"
	matErr(t, data, f.opts(nil, inside), verify.MatRoots)

	mem := pm.Memory
	if mem.Mode != "isolated" || mem.EffectiveNamespace == nil || !strings.HasPrefix(*mem.EffectiveNamespace, "candidate/"+parsed.Digest[7:23]+"/") ||
		len(strings.Split(*mem.EffectiveNamespace, "/")) != 5 || len(mem.BeforeState.Material.Files) != 0 || mem.Reset.EmptyStateDigest != mem.BeforeState.Digest {
		t.Errorf("memory %+v", mem)
	}
}

func same(t testing.TB, a, b any) bool {
	t.Helper()
	return string(receipttest.Bytes(t, a)) == string(receipttest.Bytes(t, b))
}

// matErr runs Verify and requires a *MaterializationError with code.
func matErr(t *testing.T, data []byte, opts verify.Options, code string) {
	t.Helper()
	rec, err := verify.Verify(context.Background(), data, opts)
	var me *verify.MaterializationError
	if !errors.As(err, &me) || me.Code != code || !errors.Is(err, verify.ErrMaterialization) {
		t.Fatalf("error %v (record %+v), want a %s refusal", err, rec, code)
	}
}

// requireNothingWritten: a refusal leaves no root behind (or leaves an
// existing root as it was).
func requireNothingWritten(t *testing.T, m *verify.MaterializationContext) {
	t.Helper()
	roots := []string{m.TaskRoot, m.ProfileRoot}
	if m.CandidateRoot != nil {
		roots = append(roots, *m.CandidateRoot)
	}
	for _, r := range roots {
		entries, err := os.ReadDir(r)
		if err == nil && len(entries) > 0 && !strings.HasSuffix(r, "task") {
			t.Errorf("%s holds %d entries after a refusal", r, len(entries))
		}
	}
}

// TestMaterializeRefusals: the context, not the bundle, is refused.
func TestMaterializeRefusals(t *testing.T) {
	g := newGitFixture(t)
	f := newMatFixture(t)
	data, b := sealed(t, materializable(t, g))
	reseal := func(m *verify.MaterializationContext) { m.RunCell.Digest = f.chain.SelfDigest(&m.RunCell) }
	// retask changes a copy of the task and reseals it, its suite and the
	// cell: a consistent context around another task.
	retask := func(m *verify.MaterializationContext, change func(*candidate.BenchmarkTask)) {
		task := *f.task
		change(&task)
		task.Digest = f.chain.SelfDigest(&task)
		s := *f.suite
		s.TaskDigests = []string{task.Digest}
		s.Digest = f.chain.SelfDigest(&s)
		m.Task, m.Suite = &task, &s
		m.RunCell.TaskDigest, m.RunCell.SuiteDigest = task.Digest, s.Digest
		reseal(m)
	}
	cases := []struct {
		name   string
		mutate func(m *verify.MaterializationContext)
		code   string
	}{
		{"non-empty task root", func(m *verify.MaterializationContext) {
			if err := os.MkdirAll(m.TaskRoot, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(m.TaskRoot, "left-over"), []byte("x"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, verify.MatRoots},
		{"task root is a file", func(m *verify.MaterializationContext) {
			if err := os.WriteFile(m.TaskRoot, []byte("x"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, verify.MatRoots},
		{"candidate root inside the task root", func(m *verify.MaterializationContext) {
			nested := m.TaskRoot + "/candidate"
			m.CandidateRoot = &nested
		}, verify.MatRoots},
		{"profile root equals the candidate root", func(m *verify.MaterializationContext) { m.ProfileRoot = *m.CandidateRoot }, verify.MatRoots},
		{"relative root", func(m *verify.MaterializationContext) { m.TaskRoot = "task" }, verify.MatRoots},
		{"non-canonical root", func(m *verify.MaterializationContext) { m.TaskRoot = f.base + "/x/../task" }, verify.MatRoots},
		{"no candidate root for active code", func(m *verify.MaterializationContext) { m.CandidateRoot = nil }, verify.MatRoots},
		{"run cell binds another bundle", func(m *verify.MaterializationContext) {
			m.RunCell.BundleDigest = "sha256:" + strings.Repeat("a", 64)
			reseal(m)
		}, verify.MatBindingMismatch},
		{"run cell binds another task", func(m *verify.MaterializationContext) {
			m.RunCell.TaskDigest = "sha256:" + strings.Repeat("b", 64)
			reseal(m)
		}, verify.MatBindingMismatch},
		{"run cell with another seed", func(m *verify.MaterializationContext) {
			m.RunCell.Seed = 8
			reseal(m)
		}, verify.MatBindingMismatch},
		{"run cell not resealed", func(m *verify.MaterializationContext) { m.RunCell.Attempt = 2 }, verify.MatContextInvalid},
		{"suite does not contain the task", func(m *verify.MaterializationContext) {
			s := *f.suite
			s.TaskDigests = []string{"sha256:" + strings.Repeat("c", 64)}
			s.Digest = f.chain.SelfDigest(&s)
			m.Suite = &s
			m.RunCell.SuiteDigest = s.Digest
			reseal(m)
		}, verify.MatBindingMismatch},
		{"task not resealed", func(m *verify.MaterializationContext) {
			task := *f.task
			task.Instruction = "Do something else."
			m.Task = &task
		}, verify.MatContextInvalid},
		{"instruction argv cannot carry", func(m *verify.MaterializationContext) {
			retask(m, func(task *candidate.BenchmarkTask) { task.Instruction = "a\x00b" })
		}, verify.MatTaskMismatch},
		{"model network disabled for a task with model calls", func(m *verify.MaterializationContext) {
			m.Model.Network = candidate.ModelNetwork{Mode: "disabled"}
		}, verify.MatTaskMismatch},
		{"pinned container without a selection", func(m *verify.MaterializationContext) { m.Container = nil }, verify.MatContextInvalid},
		{"task workspace bytes unavailable", func(m *verify.MaterializationContext) {
			retask(m, func(task *candidate.BenchmarkTask) {
				task.Workspace.Archive.SHA256 = "sha256:" + strings.Repeat("d", 64)
			})
		}, verify.MatTaskMismatch},
		{"task workspace in another encoding", func(m *verify.MaterializationContext) {
			retask(m, func(task *candidate.BenchmarkTask) {
				f.chain.Captured(&task.Workspace.Archive, []byte("PK\x03\x04 a zip"))
			})
		}, verify.MatTaskMismatch},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f.base = t.TempDir()
			m := f.context(b.Digest, true)
			tc.mutate(m)
			matErr(t, data, f.opts(g, m), tc.code)
			requireNothingWritten(t, m)
		})
	}
	// A task whose model is not the candidate's.
	t.Run("candidate asks for another model", func(t *testing.T) {
		f.base = t.TempDir()
		other := materializable(t, g)
		other["profile"].(obj)["model"] = obj{"default": "openai/gpt-5.4", "reasoningEffort": "low"}
		data, b := sealed(t, other)
		matErr(t, data, f.opts(g, f.context(b.Digest, true)), verify.MatTaskMismatch)
	})
}

// TestMaterializeUnsupportedSurface: a verified bundle with a surface
// this materializer cannot reproduce is rejected with
// unsupported-surface at the surface's path, no receipt, nothing
// written.
func TestMaterializeUnsupportedSurface(t *testing.T) {
	g := newGitFixture(t)
	f := newMatFixture(t)
	cases := []struct {
		name   string
		mutate func(b obj)
		path   string
	}{
		{"system prompt", func(b obj) { b["profile"].(obj)["prompt"] = obj{"systemPrompt": "Solve the repository task."} }, "/profile/prompt"},
		{"token ceiling", func(b obj) {
			b["profile"].(obj)["model"].(obj)["maxReasoningTokens"] = 1000
		}, "/profile/model/maxReasoningTokens"},
		{"tools map", func(b obj) { b["profile"].(obj)["tools"] = obj{"bash": false} }, "/profile/tools"},
		{"mcp", func(b obj) { b["profile"].(obj)["mcp"] = obj{"docs": obj{"command": "docs-server"}} }, "/profile/mcp"},
		{"mount over a candidate workspace file", func(b obj) {
			b["profile"].(obj)["resources"].(obj)["files"].([]any)[0].(obj)["path"] = "src/agent.js/x"
		}, "/profile/resources/files"},
		{"another archive encoding", func(b obj) {
			b["execution"].(obj)["workspace"].(obj)["archive"] = embedded([]byte("PK\x03\x04 a zip archive, say"))
		}, "/execution/workspace/archive"},
		{"memory seed", func(b obj) {
			b["memory"] = obj{"mode": "isolated", "scope": "task", "seed": obj{"locator": obj{"kind": "s3", "bucket": "seeds", "key": "a.tar"},
				"sha256": digestOf([]byte("seed")), "byteLength": 4}}
			if err := os.WriteFile(filepath.Join(f.chain.Dir, digestOf([]byte("seed"))[7:]), []byte("seed"), 0o600); err != nil {
				t.Fatal(err)
			}
		}, "/memory/seed"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f.base = t.TempDir()
			b := materializable(t, g)
			tc.mutate(b)
			data, parsed := sealed(t, b)
			m := f.context(parsed.Digest, true)
			rec := run(t, data, f.opts(g, m), verify.CodeUnsupportedSurface)
			if rec.MaterializationReceipt != nil || rec.Issues[0].Path != tc.path || !slices.Contains(rec.NotPerformed, verify.NotPerformedMaterialization) {
				t.Errorf("record %+v", rec)
			}
			for _, r := range []string{m.TaskRoot, m.ProfileRoot, *m.CandidateRoot} {
				if _, err := os.Stat(r); !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("%s was created: %v", r, err)
				}
			}
		})
	}
}

// TestMaterializationContextDocument: the context round-trips through
// its JSON document; duplicate members, unknown members and another
// kind are refused.
func TestMaterializationContextDocument(t *testing.T) {
	f := newMatFixture(t)
	m := f.context("sha256:"+strings.Repeat("1", 64), true)
	data := receipttest.Bytes(t, m)
	got, err := verify.ParseMaterializationContext(data)
	if err != nil {
		t.Fatal(err)
	}
	if !same(t, got, m) {
		t.Fatalf("round trip:\n%s\n%s", receipttest.Bytes(t, got), data)
	}
	s := string(data)
	for name, bad := range map[string]string{
		"duplicate member": strings.Replace(s, `{"candidateRoot"`, `{"executionId":"x","candidateRoot"`, 1),
		"unknown member":   strings.Replace(s, `{"candidateRoot"`, `{"shell":"sh","candidateRoot"`, 1),
		"another kind":     strings.Replace(s, verify.MaterializationContextKind, "agentrt-other", 1),
		"no task":          strings.Replace(s, `"task":{`, `"tusk":{`, 1),
	} {
		if _, err := verify.ParseMaterializationContext([]byte(bad)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// FuzzParseMaterializationContext: any document the parser accepts
// re-encodes to one it accepts again, unchanged, and validates.
func FuzzParseMaterializationContext(f *testing.F) {
	fx := newMatFixture(f)
	m := fx.context("sha256:"+strings.Repeat("1", 64), true)
	f.Add(receipttest.Bytes(f, m))
	m.CandidateRoot, m.PreparationID, m.Container = nil, nil, nil
	m.Model.Network = candidate.ModelNetwork{Mode: "disabled"}
	f.Add(receipttest.Bytes(f, m))
	f.Add([]byte(`{"kind":"agentrt-candidate-materialization-context"}`))
	f.Add([]byte(`{"kind":"agentrt-candidate-materialization-context","kind":"x"}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := verify.ParseMaterializationContext(data)
		if err != nil {
			return
		}
		again, err := verify.ParseMaterializationContext(receipttest.Bytes(t, got))
		if err != nil {
			t.Fatalf("an accepted context does not re-parse: %v", err)
		}
		if !same(t, got, again) {
			t.Fatal("an accepted context changed on a round trip")
		}
	})
}

// TestMaterializeLargeEvidence: a task whose canonical bytes exceed the
// embedded-artifact limit is refused without a store and captured
// through one (an s3 ref the receipt's readers fetch) with it.
func TestMaterializeLargeEvidence(t *testing.T) {
	f := newMatFixture(t)
	f.task.Instruction = strings.Repeat("Resolve the customer request. ", 40000)
	f.task.Digest = f.chain.SelfDigest(f.task)
	f.suite.TaskDigests = []string{f.task.Digest}
	f.suite.Digest = f.chain.SelfDigest(f.suite)
	data, b := sealed(t, a2())
	m := f.context(b.Digest, false)
	m.Container = nil
	matErr(t, data, f.opts(nil, m), verify.MatTooLarge)

	f.base = t.TempDir()
	m = f.context(b.Digest, false)
	m.Container = nil
	m.Store = verify.DirStore{Dir: verify.Dir(f.chain.Dir), Bucket: "agent-candidate-artifacts"}
	rec := run(t, data, f.opts(nil, m))
	r := requireValidReceipt(t, f, rec, b)
	if a := r.Benchmark.Task.Material; a.Locator == nil || a.Content != nil || a.ByteLength <= verify.MaxEmbeddedBytes {
		t.Errorf("task material %+v", a)
	}
	if a := r.Benchmark.Suite.Material; a.Content == nil {
		t.Errorf("the small suite material was not embedded: %+v", a)
	}
}

// TestMaterializeUsesStep11: with step 11 performed (an OCI layout), the
// pinned container's manifest resolved from its index is the plan's
// selection; a context naming another manifest is refused.
func TestMaterializeUsesStep11(t *testing.T) {
	g := newGitFixture(t)
	layout := t.TempDir()
	manifest := `{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:` + strings.Repeat("3", 64) + `","size":2},"layers":[]}`
	md := ociLayout(t, layout, manifest)[0]
	index := `{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"` + md + `","size":` + strconv.Itoa(len(manifest)) + `,"platform":{"os":"linux","architecture":"amd64"}}]}`
	id := ociLayout(t, layout, index)[0]
	for _, tc := range []struct {
		name    string
		context func(m *verify.MaterializationContext)
		refused bool
	}{
		{"no selection in the context", func(m *verify.MaterializationContext) { m.Container = nil }, false},
		{"the same selection", func(m *verify.MaterializationContext) {
			m.Container = &verify.ContainerSelection{ManifestDigest: md, Platform: candidate.Platform{OS: "linux", Architecture: "amd64"}}
		}, false},
		{"another manifest", func(*verify.MaterializationContext) {}, true}, // the fixture's own selection
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newMatFixture(t)
			bundle := materializable(t, g)
			bundle["execution"].(obj)["environment"].(obj)["container"].(obj)["indexDigest"] = id
			data, b := sealed(t, bundle)
			m := f.context(b.Digest, true)
			tc.context(m)
			opts := f.opts(g, m)
			opts.OCI = verify.OCILayout(layout)
			rec, err := verify.Verify(context.Background(), data, opts)
			if tc.refused {
				var me *verify.MaterializationError
				if !errors.As(err, &me) {
					t.Fatalf("err %v, want a *MaterializationError", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			r := requireValidReceipt(t, f, rec, b)
			if c := r.ExecutionPlan.Material.Container; c.ManifestDigest != md || c.IndexDigest != id {
				t.Errorf("container %+v", c)
			}
		})
	}
}
