package conformance_test

import (
	"archive/zip"
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agentrt/agentrt/conformance"
)

// repoRoot is the module root, two levels up from this package's
// directory as go test runs it.
func repoRoot(t testing.TB) string {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// moduleZip builds a module zip holding modPath@version with a go.mod and
// one source file whose content is body.
func moduleZip(t testing.TB, modPath, version, body string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for name, content := range map[string]string{
		"go.mod": "module " + modPath + "\n\ngo 1.26.0\n",
		"a.go":   "package a\n\n// " + body + "\n",
	} {
		w, err := zw.Create(modPath + "@" + version + "/" + name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte(content)); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

const fixtureCommit = "0123456789abcdef0123456789abcdef01234567"

func readFile(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// fixtureOptions emit for the fixture capabilities, running the tiny test
// package in testdata/fixture.
func fixtureOptions(t testing.TB, archive []byte) conformance.EmitOptions {
	return conformance.EmitOptions{
		SourceRoot:   repoRoot(t),
		Capabilities: filepath.Join("testdata", "capabilities.json"),
		Archive:      archive,
		Version:      "v0.1.0",
		SourceCommit: fixtureCommit,
		CohortReport: readFile(t, filepath.Join("testdata", "cohort-report.json")),
		Sandbox:      conformance.SandboxVersions{PeerRange: "contract/v1", Verified: []string{"scripted"}},
	}
}

var (
	fixtureOnce     sync.Once
	fixtureArchive  []byte
	fixtureManifest []byte
	fixtureErr      error
)

// emitFixture emits the fixture manifest once per test binary.
func emitFixture(t *testing.T) (archive, manifest []byte) {
	t.Helper()
	fixtureOnce.Do(func() {
		fixtureArchive = moduleZip(t, "github.com/agentrt/agentrt", "v0.1.0", "release")
		var m *conformance.Manifest
		m, fixtureErr = conformance.Emit(context.Background(), fixtureOptions(t, fixtureArchive))
		if fixtureErr == nil {
			fixtureManifest, fixtureErr = m.Encode()
		}
	})
	if fixtureErr != nil {
		t.Fatal(fixtureErr)
	}
	return fixtureArchive, fixtureManifest
}

func decode(t *testing.T, b []byte) *conformance.Manifest {
	t.Helper()
	m, _, err := conformance.ParseManifest(b)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func encode(t *testing.T, m *conformance.Manifest) []byte {
	t.Helper()
	b, err := m.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// verifyOptions are every optional input of verification for the fixture.
func verifyOptions(t *testing.T, archive []byte) conformance.VerifyOptions {
	return conformance.VerifyOptions{
		Archive:      archive,
		CohortReport: readFile(t, filepath.Join("testdata", "cohort-report.json")),
		SourceRoot:   repoRoot(t),
	}
}

// wantProblem fails unless r has a problem of check whose text contains
// substr.
func wantProblem(t *testing.T, r *conformance.Report, check, substr string) {
	t.Helper()
	for _, p := range r.Problems {
		if p.Check == check && strings.Contains(p.Error(), substr) {
			return
		}
	}
	t.Fatalf("no %s problem containing %q; problems: %v", check, substr, r.Problems)
}

func wantOK(t *testing.T, r *conformance.Report) {
	t.Helper()
	if !r.OK() {
		t.Fatalf("verification failed: %v", r.Problems)
	}
}

// Behaviour 65 (CM-13, CM-14): status resolution per capability exactly
// as §8, from a real go test -json run of the fixture package.
func TestBehaviour65StatusRules(t *testing.T) {
	archive, manifest := emitFixture(t)
	m := decode(t, manifest)
	want := map[string]conformance.Status{
		"all-pass":     conformance.Supported,
		"one-fails":    conformance.Unsupported,
		"skipped":      conformance.Unproven,
		"renamed-case": conformance.Unproven,
		"wrong-file":   conformance.Unproven,
		"no-evidence":  conformance.Unproven,
	}
	if len(m.Capabilities) != len(want) {
		t.Fatalf("capabilities %v", m.Capabilities)
	}
	for k, s := range want {
		if got := m.Capabilities[k].Status; got != s {
			t.Errorf("%s: status %s, want %s (evidence %+v)", k, got, s, m.Capabilities[k].Evidence)
		}
	}
	cases := func(k string) map[string]conformance.CaseStatus {
		out := map[string]conformance.CaseStatus{}
		for _, e := range m.Capabilities[k].Evidence {
			for _, c := range e.Cases {
				out[c.Name] = c.Status
			}
		}
		return out
	}
	if c := cases("renamed-case"); c["TestRenamed"] != conformance.Missing || c["TestSteps/three"] != conformance.Missing || c["TestPasses"] != conformance.Passed {
		t.Errorf("renamed-case cases %v", c)
	}
	if c := cases("one-fails"); c["TestFails"] != conformance.Failed {
		t.Errorf("one-fails cases %v", c)
	}
	if c := cases("skipped"); c["TestSkips"] != conformance.Skipped {
		t.Errorf("skipped cases %v", c)
	}
	if c := cases("wrong-file"); c["TestElsewhere"] != conformance.Missing {
		t.Errorf("a case declared in another file was credited: %v", c)
	}
	if ev := m.Capabilities["no-evidence"].Evidence; ev == nil || len(ev) != 0 {
		t.Errorf("no-evidence evidence %v, want an empty array", ev)
	}
	// Unproven and unsupported capabilities verify (CM-17): only
	// --require fails closed.
	wantOK(t, conformance.Verify(manifest, verifyOptions(t, archive)))
	if !bytes.Contains(manifest, []byte(`"evidence":[]`)) {
		t.Errorf("the empty evidence array is not recorded")
	}
}

// Behaviour 63 (CM-20, CM-31): emitting twice from identical inputs yields
// byte-identical manifests, so identical digests; nothing time- or
// run-dependent is recorded.
func TestBehaviour63EmitTwiceIdenticalDigest(t *testing.T) {
	archive, first := emitFixture(t)
	m, err := conformance.Emit(context.Background(), fixtureOptions(t, archive))
	if err != nil {
		t.Fatal(err)
	}
	second := encode(t, m)
	if !bytes.Equal(first, second) {
		t.Fatalf("two emits differ:\n%s\n%s", first, second)
	}
	for _, banned := range []string{"Time", "time", "Elapsed", "duration", "runId"} {
		if bytes.Contains(first, []byte(banned)) {
			t.Errorf("manifest mentions %q", banned)
		}
	}
}

// Behaviour 64 (CM-27..CM-30): verification fails on each mutation and
// passes on the unmodified set. The four mutation tests live here.
func TestBehaviour64VerifyRejectsMutations(t *testing.T) {
	archive, manifest := emitFixture(t)
	t.Run("unmodified", func(t *testing.T) {
		r := conformance.Verify(manifest, verifyOptions(t, archive))
		wantOK(t, r)
		if r.Digest != decode(t, manifest).Digest || r.Counts[conformance.Supported] != 1 || r.Counts[conformance.Unsupported] != 1 || r.Counts[conformance.Unproven] != 4 {
			t.Fatalf("report %+v", r)
		}
	})
	t.Run("changed archive bytes", func(t *testing.T) {
		o := verifyOptions(t, archive)
		o.Archive = moduleZip(t, "github.com/agentrt/agentrt", "v0.1.0", "tampered")
		wantProblem(t, conformance.Verify(manifest, o), "archive", "archive hashes to")
	})
	t.Run("archive of another version", func(t *testing.T) {
		o := verifyOptions(t, archive)
		o.Archive = moduleZip(t, "github.com/agentrt/agentrt", "v0.2.0", "release")
		r := conformance.Verify(manifest, o)
		wantProblem(t, r, "archive", "archive holds github.com/agentrt/agentrt@v0.2.0")
	})
	t.Run("changed cohort report", func(t *testing.T) {
		o := verifyOptions(t, archive)
		o.CohortReport = bytes.Replace(o.CohortReport, []byte("v0.42.0"), []byte("v0.41.0"), 1)
		wantProblem(t, conformance.Verify(manifest, o), "cohort", "differs")
	})
	t.Run("changed cohort inside the manifest", func(t *testing.T) {
		mutated := bytes.Replace(manifest, []byte("v0.42.0"), []byte("v0.41.0"), 1)
		r := conformance.Verify(mutated, verifyOptions(t, archive))
		wantProblem(t, r, "cohort", "differs")
		wantProblem(t, r, "digest", "body hashes to")
	})
	t.Run("case status rewritten", func(t *testing.T) {
		// one-fails: TestFails rewritten from failed to passed.
		mutated := bytes.Replace(manifest, []byte(`{"name":"TestFails","status":"failed"}`), []byte(`{"name":"TestFails","status":"passed"}`), 1)
		if bytes.Equal(mutated, manifest) {
			t.Fatal("mutation did not apply")
		}
		r := conformance.Verify(mutated, verifyOptions(t, archive))
		wantProblem(t, r, "capability", "evidence hashes to")
		wantProblem(t, r, "digest", "body hashes to")
	})
	t.Run("changed evidence bytes", func(t *testing.T) {
		root := t.TempDir()
		dst := filepath.Join(root, "conformance", "testdata", "fixture", "fixture_test.go")
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		src := readFile(t, filepath.Join("testdata", "fixture", "fixture_test.go"))
		if err := os.WriteFile(dst, append(src, "// edited\n"...), 0o644); err != nil {
			t.Fatal(err)
		}
		o := verifyOptions(t, archive)
		o.SourceRoot = root
		wantProblem(t, conformance.Verify(manifest, o), "source", "its bytes hash to")
		// An evidence file that cannot be read is a problem too.
		o.SourceRoot = t.TempDir()
		wantProblem(t, conformance.Verify(manifest, o), "source", "unreadable")
	})
	t.Run("changed package identity", func(t *testing.T) {
		m := decode(t, manifest)
		m.Package.Version = "v0.1.1"
		if err := m.Seal(); err != nil {
			t.Fatal(err)
		}
		wantProblem(t, conformance.Verify(encode(t, m), verifyOptions(t, archive)), "archive", "manifest names github.com/agentrt/agentrt@v0.1.1")
	})
}

// Behaviour 66 (CM-18, CM-24): --require fails closed naming the actual
// status or absent; without it an unproven capability does not fail.
func TestBehaviour66Require(t *testing.T) {
	archive, manifest := emitFixture(t)
	for key, want := range map[string]string{
		"skipped":     "required capability skipped is unproven",
		"one-fails":   "required capability one-fails is unsupported",
		"not-a-thing": "required capability not-a-thing is absent",
	} {
		o := verifyOptions(t, archive)
		o.Require = []string{"all-pass", key}
		r := conformance.Verify(manifest, o)
		wantProblem(t, r, "require", want)
		if len(r.Problems) != 1 {
			t.Errorf("require %s: problems %v", key, r.Problems)
		}
	}
	o := verifyOptions(t, archive)
	o.Require = []string{"all-pass"}
	wantOK(t, conformance.Verify(manifest, o))
}

// Behaviour 67 (CM-14, CM-29): a supported status with a non-passing case
// fails verification even when every digest was recomputed.
func TestBehaviour67SupportedWithNonPassingCaseFailsEvenWhenResealed(t *testing.T) {
	archive, manifest := emitFixture(t)
	for _, key := range []string{"one-fails", "skipped", "renamed-case", "no-evidence"} {
		m := decode(t, manifest)
		c := m.Capabilities[key]
		c.Status = conformance.Supported
		m.Capabilities[key] = c
		if err := m.Seal(); err != nil {
			t.Fatal(err)
		}
		r := conformance.Verify(encode(t, m), verifyOptions(t, archive))
		wantProblem(t, r, "capability", "supported without every case passing")
		for _, p := range r.Problems {
			if p.Check == "digest" {
				t.Errorf("%s: resealed manifest still has a digest problem: %v", key, p)
			}
		}
	}
	// A status narrowed the other way is a recomputation mismatch too.
	m := decode(t, manifest)
	c := m.Capabilities["one-fails"]
	c.Status = conformance.Unproven
	m.Capabilities["one-fails"] = c
	if err := m.Seal(); err != nil {
		t.Fatal(err)
	}
	wantProblem(t, conformance.Verify(encode(t, m), verifyOptions(t, archive)), "capability", "its cases resolve to unsupported")
}

// --skip-tests is a dry run: every declared case is missing.
func TestEmitSkipTestsMarksEveryCaseMissing(t *testing.T) {
	o := fixtureOptions(t, moduleZip(t, "github.com/agentrt/agentrt", "v0.1.0", "release"))
	o.SkipTests = true
	m, err := conformance.Emit(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	for k, c := range m.Capabilities {
		if c.Status != conformance.Unproven {
			t.Errorf("%s: %s", k, c.Status)
		}
		for _, e := range c.Evidence {
			for _, cs := range e.Cases {
				if cs.Status != conformance.Missing {
					t.Errorf("%s %s: %s", k, cs.Name, cs.Status)
				}
			}
		}
	}
}

// The emitter's shape assertions refuse an archive that is not the
// release, and a cohort report without modules.
func TestEmitRefusesWrongInputs(t *testing.T) {
	o := fixtureOptions(t, moduleZip(t, "example.com/other", "v0.1.0", "x"))
	o.SkipTests = true
	if _, err := conformance.Emit(context.Background(), o); err == nil || !strings.Contains(err.Error(), "holds module example.com/other") {
		t.Errorf("foreign module: %v", err)
	}
	o = fixtureOptions(t, moduleZip(t, "github.com/agentrt/agentrt", "v0.1.0", "x"))
	o.SkipTests, o.Version = true, "v0.2.0"
	if _, err := conformance.Emit(context.Background(), o); err == nil || !strings.Contains(err.Error(), "holds version v0.1.0") {
		t.Errorf("wrong version: %v", err)
	}
	o = fixtureOptions(t, moduleZip(t, "github.com/agentrt/agentrt", "v0.1.0", "x"))
	o.SkipTests, o.CohortReport = true, []byte(`{"modules":[]}`)
	if _, err := conformance.Emit(context.Background(), o); err == nil || !strings.Contains(err.Error(), `"/modules"`) {
		t.Errorf("empty cohort: %v", err)
	}
	o = fixtureOptions(t, moduleZip(t, "github.com/agentrt/agentrt", "v0.1.0", "x"))
	o.SkipTests, o.SourceCommit = true, "abc"
	if _, err := conformance.Emit(context.Background(), o); err == nil {
		t.Error("short commit accepted")
	}
}
