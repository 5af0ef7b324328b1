package receipttest

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/candidate"
	"github.com/agentrt/agentrt/candidate/wsarchive"
	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/internal/vectors"
	"github.com/agentrt/agentrt/schema"
)

// Chain is a complete, consistent receipt chain for one candidate × task
// cell: a bundle, a task, the materialization receipt, the run receipt
// and the execution evidence wrapping both, every digest recomputed and
// every referenced artifact's bytes stored in dir (a verify.Dir).
type Chain struct {
	t testing.TB
	// Dir is the content-addressed artifact directory (files named by
	// sha256 hex), a verify.Dir.
	Dir string
	// Bundle is the candidate (ts16, disabled code).
	Bundle *candidate.Bundle
	// Task is the benchmark task.
	Task *candidate.BenchmarkTask
	// Evidence wraps the materialization receipt and the run receipt.
	Evidence *candidate.ExecutionEvidence
}

// vectorInput decodes the input of the named case of a vector kind (the
// first case when name is "") into a T, without validating it.
func vectorInput[T any](t testing.TB, kind, name string) *T {
	t.Helper()
	k, err := vectors.Load(kind)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range k.Cases {
		if name == "" || c.Name == name {
			out := new(T)
			if err := canonjson.FromValue(c.Input, out); err != nil {
				t.Fatalf("%s %s: %v", kind, c.Name, err)
			}
			return out
		}
	}
	t.Fatalf("%s has no case %q", kind, name)
	return nil
}

// New builds the chain from reference vector inputs (the execution
// evidence case whose only fault is one step over the limit, a valid
// task and a valid disabled-code bundle), made consistent and resealed.
func New(t testing.TB) *Chain {
	t.Helper()
	c := &Chain{t: t, Dir: t.TempDir()}
	e := vectorInput[candidate.ExecutionEvidence](t, candidate.KindExecutionEvidence, "recorded-4f8492400b")
	e.Receipt.Steps = 20 // the vector's one fault: 21 steps against a limit of 20
	m, r := &e.MaterializationReceipt, &e.Receipt
	pm := &m.ExecutionPlan.Material

	b := vectorInput[candidate.Bundle](t, candidate.KindBundle, "recorded-b982626d7b")
	b.Execution.InstructionDelivery = pm.InstructionDelivery
	b.Execution.Environment = candidate.ExecutionEnvironment{Kind: "evaluator-task-container"}
	b.Memory = candidate.MemoryPolicy{Mode: "disabled"}
	b.Knowledge = nil
	for i := range b.Profile.Resources.Files {
		res := &b.Profile.Resources.Files[i].Resource
		res.SHA256 = candidate.SHA256Text(*res.Content)
	}
	c.Bundle = b

	task := vectorInput[candidate.BenchmarkTask](t, candidate.KindBenchmarkTask, "recorded-99d3b30951")
	task.Model = pm.Model.Resolved
	task.Limits = pm.Limits
	task.EvaluatorTaskContainer = &pm.Container
	base := r.TaskOutcome.Material.Outcome.BaseRepository
	task.Outcome = candidate.TaskOutcomeSpec{Kind: "workspace"}
	task.Repository = &candidate.TaskRepository{Identity: base.Identity, RootIdentity: base.RootIdentity, BaseCommit: base.Commit, BaseTree: base.Tree}
	task.Grader = r.BenchmarkResult.Material.Grader
	task.DatasetSnapshot = nil
	c.snapshot(&task.Workspace, nil)
	c.ref(&task.Grader.Artifact, "grader")
	r.BenchmarkResult.Material.Grader = task.Grader
	c.Task = task
	c.Evidence = e
	c.Reseal()
	// The chain must be what the schemas accept, or the tests would test
	// the fixture.
	for _, doc := range []struct {
		kind string
		node schema.Node
		x    any
	}{
		{candidate.KindBundle, candidate.BundleSchemaFor(candidate.DialectTS16), b},
		{candidate.KindBenchmarkTask, candidate.BenchmarkTaskSchema, task},
		{candidate.KindExecutionEvidence, candidate.ExecutionEvidenceSchema, e},
	} {
		if _, err := contract.Validate(doc.kind, doc.node, doc.x); err != nil {
			t.Fatalf("fixture %s: %v", doc.kind, err)
		}
	}
	return c
}

// Reseal recomputes every digest and binding of the chain bottom up,
// after a test changed something; each step is what an honest evaluator
// computes.
func (c *Chain) Reseal() {
	t := c.t
	t.Helper()
	b, task, e := c.Bundle, c.Task, c.Evidence
	m, r := &e.MaterializationReceipt, &e.Receipt
	pm := &m.ExecutionPlan.Material
	b.Digest = c.SelfDigest(b)
	task.Digest = c.SelfDigest(task)

	suite := &candidate.BenchmarkSuite{Kind: candidate.KindBenchmarkSuiteValue, DigestAlgorithm: candidate.DigestAlgorithm,
		TaskDigests: []string{task.Digest}, Reps: 1, Seeds: []int64{42}}
	suite.Digest = c.SelfDigest(suite)
	m.Benchmark.Suite = c.input(suite, suite.Digest)
	m.Benchmark.Task = c.input(task, task.Digest)

	act := &m.ProfileActivation
	profileDigest, err := candidate.ProfileDigest(&b.Profile)
	if err != nil {
		t.Fatal(err)
	}
	act.ProfilePlan.Material.SourceProfileDigest = profileDigest
	SealEvidence(c, &act.ProfilePlan)
	act.Digest = c.SelfDigest(act)

	cell := &pm.RunCell
	cell.BundleDigest, cell.SuiteDigest, cell.TaskDigest = b.Digest, suite.Digest, task.Digest
	cell.Digest = c.SelfDigest(cell)
	pm.Profile.PlanDigest = act.ProfilePlan.Digest
	SealEvidence(c, &m.ExecutionPlan)
	m.BundleDigest = b.Digest
	m.Digest = c.SelfDigest(m)

	plan := m.ExecutionPlan.Digest
	r.BundleDigest, r.RunCellDigest, r.MaterializationReceiptDigest, r.ExecutionPlanDigest = b.Digest, cell.Digest, m.Digest, plan
	r.ModelSettlement.Material.ExecutionPlanDigest = plan
	r.ModelSettlement.Material.GrantDigest = pm.Model.Access.GrantDigest
	SealEvidence(c, &r.ModelSettlement)
	r.TaskOutcome.Material.ExecutionPlanDigest = plan
	if w := r.TaskOutcome.Material.Outcome.AfterState; w != nil {
		c.snapshot(w, []wsarchive.File{{Path: "src/result.ts", Mode: 0o644, Data: []byte("export const x = 1\n")}})
	}
	if d := r.TaskOutcome.Material.Outcome.GitDiff; d != nil {
		c.ref(&d.Artifact, "diff --git a/src/result.ts b/src/result.ts\n")
	}
	SealEvidence(c, &r.TaskOutcome)
	res := &r.BenchmarkResult.Material
	res.ExecutionPlanDigest, res.TaskOutcomeDigest = plan, r.TaskOutcome.Digest
	c.ref(&res.Evidence, "grader output")
	SealEvidence(c, &r.BenchmarkResult)
	c.Captured(&r.Trace.Artifact, []byte("trace events\n"))
	c.ref(&r.ExecutorCapture, "executor capture")
	r.Digest = c.SelfDigest(r)
	e.Digest = c.SelfDigest(e)
}

// SelfDigest is candidate.SelfDigest, failing the test on error.
func (c *Chain) SelfDigest(doc any) string {
	c.t.Helper()
	d, err := candidate.SelfDigest(doc)
	if err != nil {
		c.t.Fatal(err)
	}
	return d
}

// store writes data into the artifact directory and returns its key.
func (c *Chain) store(data []byte) (string, int64) {
	c.t.Helper()
	sum := sha256.Sum256(data)
	h := hex.EncodeToString(sum[:])
	if err := os.WriteFile(filepath.Join(c.Dir, h), data, 0o600); err != nil {
		c.t.Fatal(err)
	}
	return "sha256:" + h, int64(len(data))
}

// ref points r at stored bytes (content made unique by what).
func (c *Chain) ref(r *candidate.ArtifactRef, what string) {
	r.SHA256, r.ByteLength = c.store([]byte(what))
}

// Captured makes an embedded or a stored artifact carry data, keeping its
// form (a locator stays a locator).
func (c *Chain) Captured(a *candidate.CapturedArtifact, data []byte) {
	if a.Locator != nil {
		a.SHA256, a.ByteLength = c.store(data)
		a.Encoding, a.Content = nil, nil
		return
	}
	enc, content := "base64", base64.StdEncoding.EncodeToString(data)
	sum := sha256.Sum256(data)
	a.Encoding, a.Content = &enc, &content
	a.SHA256, a.ByteLength = "sha256:"+hex.EncodeToString(sum[:]), int64(len(data))
}

// input is the captured benchmark input of a self-digested document.
func (c *Chain) input(doc any, digest string) candidate.BenchmarkMaterialEvidence {
	c.t.Helper()
	data, err := candidate.SelfMaterialBytes(doc)
	if err != nil {
		c.t.Fatal(err)
	}
	loc := contract.S3Locator("agent-candidate-artifacts", fmt.Sprintf("inputs/%s.json", digest[7:19]), nil)
	ev := candidate.BenchmarkMaterialEvidence{Digest: digest, Material: candidate.CapturedArtifact{Locator: &loc}}
	c.Captured(&ev.Material, data)
	return ev
}

// snapshot makes w a snapshot of files: the manifest material, its
// canonical bytes and an archive in the reference layout (spec candidate
// §21.4), both stored, and the digest.
func (c *Chain) snapshot(w *candidate.WorkspaceSnapshotEvidence, files []wsarchive.File) {
	c.t.Helper()
	w.Material = wsarchive.Manifest(files)
	data, err := candidate.MaterialBytes(&w.Material)
	if err != nil {
		c.t.Fatal(err)
	}
	c.Captured(&w.Manifest, data)
	w.Digest = w.Manifest.SHA256
	archive, err := wsarchive.Encode(files, nil)
	if err != nil {
		c.t.Fatal(err)
	}
	c.Captured(&w.Archive, archive)
}

// SealEvidence sets an evidence record's digest and artifact from its
// material.
func SealEvidence[M any](c *Chain, e *candidate.Evidence[M]) {
	c.t.Helper()
	data, err := candidate.MaterialBytes(e.Material)
	if err != nil {
		c.t.Fatal(err)
	}
	c.Captured(&e.Artifact, data)
	e.Digest = e.Artifact.SHA256
}

// Bytes returns a document's canonical JSON.
func Bytes(t testing.TB, doc any) []byte {
	t.Helper()
	v, err := canonjson.ToValue(doc)
	if err != nil {
		t.Fatal(err)
	}
	out, err := canonjson.Canonical(v)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// ResealTop recomputes only the outer self-digests (materialization
// receipt, run receipt, evidence): what a forger who edited an inner
// record without recomputing its evidence would do.
func (c *Chain) ResealTop() {
	e := c.Evidence
	e.MaterializationReceipt.Digest = c.SelfDigest(&e.MaterializationReceipt)
	e.Receipt.MaterializationReceiptDigest = e.MaterializationReceipt.Digest
	e.Receipt.Digest = c.SelfDigest(&e.Receipt)
	e.Digest = c.SelfDigest(e)
}

// Remove deletes the stored object sha from the artifact directory.
func (c *Chain) Remove(sha string) {
	c.t.Helper()
	if err := os.Remove(filepath.Join(c.Dir, strings.TrimPrefix(sha, "sha256:"))); err != nil {
		c.t.Fatal(err)
	}
}

// Overwrite replaces the stored object sha's bytes with content.
func (c *Chain) Overwrite(sha, content string) {
	c.t.Helper()
	if err := os.WriteFile(filepath.Join(c.Dir, strings.TrimPrefix(sha, "sha256:")), []byte(content), 0o600); err != nil {
		c.t.Fatal(err)
	}
}
