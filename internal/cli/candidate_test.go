package cli_test

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/candidate"
	"github.com/agentrt/agentrt/candidate/verify"
	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/internal/receipttest"
)

// bundleA2 is spec candidate §23.1's A2 (ts16, disabled code) with its
// anchor digest.
const (
	digestA2  = "sha256:d6e849af4a7c5f850466543a825b04461ba62aeeec3546c2f6f808763b7dc88c"
	bundleA2  = `{"code":{"kind":"disabled"},"digestAlgorithm":"rfc8785-sha256","execution":{"cwd":{"path":".","workspace":"task"},"environment":{"kind":"evaluator-task-container"},"harness":"codex","harnessVersion":"0.1.0","instructionDelivery":{"kind":"stdin-utf8"},"isolation":{"candidateSecrets":"disabled","network":"disabled","remoteIntegrations":"disabled"},"launch":{"args":[{"kind":"public","value":"exec"}],"executable":"/usr/local/bin/codex","kind":"container-command"}},"kind":"agent-candidate-bundle","memory":{"mode":"disabled"},"profile":{"harness":"codex","model":{"default":"openai/gpt-5.4"}}`
	sealedA2  = bundleA2 + `,"digest":"` + digestA2 + `"}`
	seedBytes = `{"k":"v"}!`
)

// sealedText replaces A2's memory policy, seals the result and returns it.
func sealedText(t *testing.T, memory string) string {
	t.Helper()
	v, err := canonjson.Decode([]byte(strings.Replace(bundleA2, `{"mode":"disabled"}`, memory, 1) + "}"))
	if err != nil {
		t.Fatal(err)
	}
	d, err := candidate.SelfDigestValue(v)
	if err != nil {
		t.Fatal(err)
	}
	text, _ := canonjson.Canonical(v)
	return strings.TrimSuffix(string(text), "}") + `,"digest":"` + d + `"}`
}

// TestCandidateDigest: the computed digest of A2 (V01), the dialect
// auto picks, and exit codes for invalid input and a bad flag.
func TestCandidateDigest(t *testing.T) {
	good := writeFile(t, "a2.json", sealedA2)
	out, _, code := run(t, "", "candidate", "digest", good)
	if code != 0 || out != digestA2+"\n" {
		t.Fatalf("digest exit %d: %q", code, out)
	}
	out, _, code = run(t, "", "candidate", "digest", "--json", good)
	v := decode(t, out)
	if code != 0 || member(v, "digest").Str() != digestA2 || member(v, "dialect").Str() != "ts16" || !member(v, "carriedMatches").Bool() {
		t.Fatalf("digest --json exit %d: %s", code, out)
	}
	// A2 read in the seed dialect lacks its lineage (S05): invalid.
	out, _, code = run(t, "", "candidate", "digest", "--dialect", "seed", good)
	if code != 1 || !strings.Contains(out, "refused") {
		t.Fatalf("seed dialect exit %d: %s", code, out)
	}
	if _, _, code = run(t, "", "candidate", "digest", "--dialect", "ts17", good); code != 2 {
		t.Fatalf("bad dialect exit %d", code)
	}
}

// TestCandidateVerify: verified (V01), tampered digest (V04), the record
// as canonical JSON, an artifact directory (V33) and operational errors.
func TestCandidateVerify(t *testing.T) {
	good := writeFile(t, "a2.json", sealedA2)
	out, _, code := run(t, "", "candidate", "verify", good)
	if code != 0 || !strings.Contains(out, "verified (dialect ts16)") || !strings.Contains(out, digestA2) || !strings.Contains(out, "not performed") {
		t.Fatalf("verify exit %d:\n%s", code, out)
	}
	_, errOut, code := run(t, "", "candidate", "verify", good)
	if code != 0 || errOut != "" {
		t.Errorf("a small bundle: exit %d, progress %q", code, errOut)
	}
	// A large bundle (here padded with blanks, which leave its digest
	// alone) says which step it is in, a line each.
	large := writeFile(t, "large.json", sealedA2+strings.Repeat(" ", 1<<20))
	out, errOut, code = run(t, "", "candidate", "verify", large)
	if code != 0 || !strings.Contains(out, "verified") {
		t.Fatalf("large bundle: exit %d\n%s%s", code, out, errOut)
	}
	if lines := strings.Split(strings.TrimSuffix(errOut, "\n"), "\n"); len(lines) != 9 ||
		lines[0] != "verifying "+large+": step 1, read and decode…" || lines[8] != "verifying "+large+": step 10, entrypoint evidence…" {
		t.Errorf("large bundle progress:\n%s", errOut)
	}
	tampered := writeFile(t, "v04.json", strings.Replace(sealedA2, "c88c\"", "c88d\"", 1))
	out, _, code = run(t, "", "candidate", "verify", "--json", tampered)
	v := decode(t, out)
	if code != 1 || member(v, "verdict").Str() != "rejected" || member(member(v, "issues").Items()[0], "code").Str() != "digest-mismatch" {
		t.Fatalf("V04 exit %d: %s", code, out)
	}
	if canon, err := canonjson.Canonical(v); err != nil || string(canon)+"\n" != out {
		t.Fatalf("--json is not canonical JSON: %v", err)
	}

	sum := sha256.Sum256([]byte(seedBytes))
	hexSum := hex.EncodeToString(sum[:])
	seeded := writeFile(t, "v33.json", sealedText(t, `{"mode":"isolated","scope":"task","seed":{"byteLength":10,"locator":{"bucket":"candidate-artifacts","key":"seeds/memory.json","kind":"s3","region":"us-east-1"},"sha256":"sha256:`+hexSum+`"}}`))
	stored := writeFile(t, hexSum, seedBytes)
	store := filepath.Dir(stored)
	out, _, code = run(t, "", "candidate", "verify", "--artifacts", store, seeded)
	if code != 0 || !strings.Contains(out, "1 artifacts") {
		t.Fatalf("V33 exit %d:\n%s", code, out)
	}
	if err := os.WriteFile(stored, []byte(seedBytes+"!"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _, code = run(t, "", "candidate", "verify", "--artifacts", store, seeded)
	if code != 1 || !strings.Contains(out, "artifact-length /memory/seed") {
		t.Fatalf("V33g exit %d:\n%s", code, out)
	}

	if _, _, code = run(t, "", "candidate", "verify", filepath.Join(t.TempDir(), "absent.json")); code != 2 {
		t.Fatalf("missing file exit %d", code)
	}
	if _, _, code = run(t, "", "candidate", "verify", "--repo", "example", good); code != 2 {
		t.Fatalf("bad --repo exit %d", code)
	}
	if _, _, code = run(t, "", "candidate", "verify", "--resolve-oci", "--offline", good); code != 2 {
		t.Fatalf("--resolve-oci --offline exit %d", code)
	}
	if _, _, code = run(t, "", "candidate", "verify", "--platform", "linux", good); code != 2 {
		t.Fatalf("bad --platform exit %d", code)
	}
	// Step 5 and step 11 (A2's container is the task's) performed.
	out, _, code = run(t, "", "candidate", "verify", "--execute-support", "--oci-layout", t.TempDir(), good)
	if code != 0 || !strings.Contains(out, "support policy reference-runtime applied") || !strings.Contains(out, "deferred to the task") || strings.Contains(out, "step 5") {
		t.Fatalf("--execute-support --oci-layout exit %d:\n%s", code, out)
	}
	// A secret in the prompt is reported, never printed.
	key := "sk-ant-api03-" + strings.Repeat("Z", 24)
	withKey := strings.Replace(bundleA2, `"model":{"default":"openai/gpt-5.4"}`, `"model":{"default":"openai/gpt-5.4"},"prompt":{"systemPrompt":"key `+key+`"}`, 1)
	v, err := canonjson.Decode([]byte(withKey + "}"))
	if err != nil {
		t.Fatal(err)
	}
	d, _ := candidate.SelfDigestValue(v)
	text, _ := canonjson.Canonical(v)
	file := writeFile(t, "withkey.json", strings.TrimSuffix(string(text), "}")+`,"digest":"`+d+`"}`)
	out, errOut, code = run(t, "", "candidate", "verify", file)
	if code != 0 || !strings.Contains(out, "warning: /profile/prompt/systemPrompt looks like a secret (anthropic-key)") || strings.Contains(out+errOut, key) {
		t.Fatalf("secret exit %d:\n%s%s", code, out, errOut)
	}
}

// TestCandidateScan: a clean bundle has no finding; a prompt and an inline
// file carrying secrets are reported by pointer and rule, and the secret
// itself is never printed.
func TestCandidateScan(t *testing.T) {
	clean := writeFile(t, "a2.json", sealedA2)
	out, _, code := run(t, "", "candidate", "scan", clean)
	if code != 0 || !strings.Contains(out, "no secret found") {
		t.Fatalf("clean bundle: exit %d: %s", code, out)
	}
	const key = "sk-ant-api03-AAAAAAAAAAAAAAAAAAAAAAAA"
	leaky := writeFile(t, "leaky.json", `{"profile":{"prompt":{"systemPrompt":"use `+key+`"}},"resources":{"inline":[{"path":"a.pem","content":"-----BEGIN RSA PRIVATE KEY-----\nMIIE"}]}}`)
	out, errOut, code := run(t, "", "candidate", "scan", leaky)
	if code != 1 || !strings.Contains(out, "/profile/prompt/systemPrompt") || !strings.Contains(out, "anthropic-key") || !strings.Contains(out, "/resources/inline/0/content") {
		t.Fatalf("leaky: exit %d: %s", code, out)
	}
	if strings.Contains(out+errOut, key) || strings.Contains(out+errOut, "MIIE") {
		t.Error("a secret was printed")
	}
	out, _, code = run(t, "", "candidate", "scan", "--json", leaky)
	if v := decode(t, out); code != 1 || len(member(v, "findings").Items()) != 2 {
		t.Errorf("--json exit %d: %s", code, out)
	}
	if _, _, code := run(t, "", "candidate", "scan", writeFile(t, "bad.json", `{"a":1,"a":2}`)); code != 2 {
		t.Errorf("a document with duplicate names: exit %d, want 2", code)
	}
}

// TestCandidateVerifyReceipt: `agentrt candidate verify-receipt` over a
// sealed receipt chain — valid with its context documents, limit-exceeded
// when the run took one step too many, operational (exit 2) for a context
// document that does not verify (spec candidate §22.1).
func TestCandidateVerifyReceipt(t *testing.T) {
	c := receipttest.New(t)
	files := map[string]string{}
	for name, doc := range map[string]any{
		"evidence": c.Evidence, "run": &c.Evidence.Receipt, "materialization": &c.Evidence.MaterializationReceipt,
		"bundle": c.Bundle, "task": c.Task,
	} {
		files[name] = writeFile(t, name+".json", string(receipttest.Bytes(t, doc)))
	}
	out, errOut, code := run(t, "", "candidate", "verify-receipt", files["evidence"], "--artifacts", c.Dir, "--offline",
		"--bundle", files["bundle"], "--task", files["task"])
	if code != 0 || !strings.Contains(out, ": valid (agent-candidate-execution-evidence)") || !strings.Contains(out, "within the frozen limits") {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	out, _, code = run(t, "", "candidate", "verify-receipt", "--json", files["run"], "--materialization", files["materialization"],
		"--artifacts", c.Dir, "--offline")
	if v := decode(t, out); code != 0 || member(v, "verdict").Str() != "valid" || member(v, "kind").Str() != "agent-candidate-receipt-verification" {
		t.Fatalf("run receipt --json exit %d: %s", code, out)
	}
	// Offline without the artifact directory: every ref is unavailable.
	out, _, code = run(t, "", "candidate", "verify-receipt", files["run"], "--offline")
	if code != 1 || !strings.Contains(out, "artifact-unavailable /trace/artifact") {
		t.Fatalf("offline without artifacts exit %d: %s", code, out)
	}
	c.Evidence.Receipt.Steps = 21
	c.Reseal()
	over := writeFile(t, "over.json", string(receipttest.Bytes(t, c.Evidence)))
	out, _, code = run(t, "", "candidate", "verify-receipt", over, "--artifacts", c.Dir, "--offline")
	if code != 1 || !strings.Contains(out, ": limit-exceeded") || !strings.Contains(out, "execution steps 21 exceeds frozen limit 20") {
		t.Fatalf("over the limit exit %d: %s", code, out)
	}
	// The task changed after the chain was sealed: its digest does not
	// verify, which is the caller's error, not the receipt's.
	tampered := strings.Replace(string(receipttest.Bytes(t, c.Task)), `"maxSteps":20`, `"maxSteps":21`, 1)
	_, errOut, code = run(t, "", "candidate", "verify-receipt", over, "--task", writeFile(t, "tampered.json", tampered))
	if code != 2 || !strings.Contains(errOut, "does not verify") {
		t.Fatalf("tampered task exit %d: %s", code, errOut)
	}
}

// TestCandidateMaterialize: `candidate verify --materialize` performs §22
// step 13 for A2 into fresh roots and writes the receipt, which
// `candidate verify-receipt` then finds valid against the bundle and the
// task; a run into a root that is not empty is refused as an operational
// error.
func TestCandidateMaterialize(t *testing.T) {
	c := receipttest.New(t)
	suite := &candidate.BenchmarkSuite{Kind: candidate.KindBenchmarkSuiteValue, DigestAlgorithm: candidate.DigestAlgorithm,
		TaskDigests: []string{c.Task.Digest}, Reps: 1, Seeds: []int64{42}}
	suite.Digest = c.SelfDigest(suite)
	cell := candidate.RunCell{Kind: candidate.KindRunCellValue, ExperimentDigest: "sha256:" + strings.Repeat("e", 64), Arm: "candidate",
		BundleDigest: digestA2, SuiteDigest: suite.Digest, TaskDigest: c.Task.Digest, Seed: 42, Attempt: 1}
	cell.Digest = c.SelfDigest(&cell)
	base := t.TempDir()
	ctx := verify.MaterializationContext{
		Kind: verify.MaterializationContextKind, Task: c.Task, Suite: suite, RunCell: cell, ExecutionID: "exec-1",
		TaskRoot: filepath.Join(base, "task"), ProfileRoot: filepath.Join(base, "profile"),
		Model: verify.ModelGrant{GrantDigest: "sha256:" + strings.Repeat("4", 64),
			Network: candidate.ModelNetwork{Mode: "gateway-only", Domains: []string{"router.tangle.tools"}}},
	}
	bundle := writeFile(t, "a2.json", sealedA2)
	ctxFile := writeFile(t, "context.json", string(receipttest.Bytes(t, &ctx)))
	taskFile := writeFile(t, "task.json", string(receipttest.Bytes(t, c.Task)))
	receipt := filepath.Join(t.TempDir(), "receipt.json")
	out, errOut, code := run(t, "", "candidate", "verify", bundle, "--materialize", ctxFile, "--receipt", receipt, "--artifacts", c.Dir, "--offline")
	if code != 0 || !strings.Contains(out, "materialized: receipt sha256:") || strings.Contains(out, "step 13") {
		t.Fatalf("materialize exit %d:\n%s%s", code, out, errOut)
	}
	if _, err := os.Stat(ctx.TaskRoot); err != nil {
		t.Fatalf("task root: %v", err)
	}
	out, errOut, code = run(t, "", "candidate", "verify-receipt", receipt, "--bundle", bundle, "--task", taskFile, "--artifacts", c.Dir, "--offline")
	if code != 0 || !strings.Contains(out, ": valid (agent-candidate-materialization)") {
		t.Fatalf("verify-receipt exit %d:\n%s%s", code, out, errOut)
	}
	if err := os.WriteFile(filepath.Join(ctx.TaskRoot, "stray.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, errOut, code = run(t, "", "candidate", "verify", bundle, "--materialize", ctxFile, "--artifacts", c.Dir, "--offline")
	if code != 2 || !strings.Contains(errOut, "empty") {
		t.Fatalf("second materialization exit %d: %s", code, errOut)
	}
	if _, _, code = run(t, "", "candidate", "verify", bundle, "--receipt", receipt); code != 2 {
		t.Fatalf("--receipt without --materialize exit %d", code)
	}
}
