package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// moduleRoot is the repository root, two levels above internal/cli.
func moduleRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

func copyInto(t *testing.T, dir, src string) string {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(dir, filepath.Base(src))
	if err := os.WriteFile(dst, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return dst
}

// CM-22, CM-23, CM-24, CM-17 (behaviour 66 through the command line):
// emit for the fixture capabilities, then verify from an empty directory
// holding only the manifest, archive and cohort report.
func TestConformanceEmitVerifyCommands(t *testing.T) {
	root := moduleRoot(t)
	work := t.TempDir()
	archive := filepath.Join(work, "agentrt.zip")
	if out, errb, code := run(t, "", "conformance", "archive", "--source-root", root, "--version", "v0.1.0", "--out", archive); code != 0 {
		t.Fatalf("archive: %d %s %s", code, out, errb)
	}
	cohort := filepath.Join(root, "conformance", "testdata", "cohort-report.json")
	manifest := filepath.Join(work, "agentrt-conformance-manifest.json")
	out, errb, code := run(t, "", "conformance", "emit", "--archive", archive, "--cohort-report", cohort, "--out", manifest,
		"--source-root", root, "--capabilities", filepath.Join(root, "conformance", "testdata", "capabilities.json"))
	if code != 0 {
		t.Fatalf("emit: %d %s %s", code, out, errb)
	}
	for _, want := range []string{"digest ", "supported=1 unsupported=1 unproven=4", "  supported   all-pass (all-pass)", "  unsupported one-fails", "  unproven    no-evidence"} {
		if !strings.Contains(out, want) {
			t.Errorf("emit output lacks %q:\n%s", want, out)
		}
	}

	empty := t.TempDir()
	m := copyInto(t, empty, manifest)
	a := copyInto(t, empty, archive)
	c := copyInto(t, empty, cohort)
	t.Chdir(empty)
	if out, errb, code := run(t, "", "conformance", "verify", filepath.Base(m), "--archive", filepath.Base(a), "--cohort-report", filepath.Base(c)); code != 0 || !strings.HasPrefix(out, "verified ") {
		t.Fatalf("verify: %d %s %s", code, out, errb)
	}
	out, _, code = run(t, "", "conformance", "verify", filepath.Base(m), "--require", "all-pass", "--require", "skipped", "--require", "nope")
	if code != 1 || !strings.Contains(out, "::error::require: /capabilities/skipped/status: required capability skipped is unproven") ||
		!strings.Contains(out, "::error::require: /capabilities/nope: required capability nope is absent") || strings.Contains(out, "all-pass") {
		t.Fatalf("verify --require: %d\n%s", code, out)
	}
	if err := os.WriteFile(a, []byte("tampered"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _, code = run(t, "", "conformance", "verify", filepath.Base(m), "--archive", filepath.Base(a))
	if code != 1 || !strings.Contains(out, "::error::archive: /package/sha256") {
		t.Fatalf("verify with a tampered archive: %d\n%s", code, out)
	}
	if _, _, code := run(t, "", "conformance", "emit", "--archive", a); code != 2 {
		t.Errorf("emit without --out: exit %d, want 2", code)
	}
}

// Issue 17: a manifest emitted from this repository's capabilities
// verifies with --require session-replay (and, since issue 14 carried
// them over the wire, context-transfer, native-continuation and
// cleanup-settlement) and fails closed for an unproven key. It runs the real evidence tests (agentrt serve among
// them), so it is skipped with -short.
func TestConformanceRepositoryManifest(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the repository's conformance tests")
	}
	// Serial on purpose: it compiles and runs the repository's evidence
	// tests, which would starve the lease-holding parallel tests of CPU.
	root := moduleRoot(t)
	work := t.TempDir()
	archive := filepath.Join(work, "agentrt.zip")
	if out, errb, code := run(t, "", "conformance", "archive", "--source-root", root, "--version", "v0.1.0", "--out", archive); code != 0 {
		t.Fatalf("archive: %d %s %s", code, out, errb)
	}
	cohort := filepath.Join(root, "conformance", "testdata", "cohort-report.json")
	manifest := filepath.Join(work, "manifest.json")
	out, errb, code := run(t, "", "conformance", "emit", "--archive", archive, "--cohort-report", cohort, "--out", manifest, "--source-root", root)
	if code != 0 {
		t.Fatalf("emit: %d %s %s", code, out, errb)
	}
	t.Log(out)
	if out, _, code := run(t, "", "conformance", "verify", manifest, "--archive", archive, "--cohort-report", cohort, "--source-root", root,
		"--require", "session-replay", "--require", "context-transfer", "--require", "native-continuation", "--require", "cleanup-settlement"); code != 0 {
		t.Fatalf("verify --require session-replay, context-transfer, native-continuation, cleanup-settlement: %d\n%s", code, out)
	}
	out, _, code = run(t, "", "conformance", "verify", manifest, "--require", "recursive-observation")
	if code != 1 || !strings.Contains(out, "required capability recursive-observation is unproven") {
		t.Fatalf("verify --require recursive-observation: %d\n%s", code, out)
	}
}
