package verify_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/candidate"
	"github.com/agentrt/agentrt/candidate/verify"
	"github.com/agentrt/agentrt/internal/receipttest"
)

func verifyDoc(t *testing.T, c *receipttest.Chain, doc any, opts verify.ReceiptOptions) *verify.ReceiptRecord {
	t.Helper()
	if opts.Artifacts == nil {
		opts.Artifacts = verify.Dir(c.Dir)
	}
	rec, err := verify.VerifyReceipt(context.Background(), receipttest.Bytes(t, doc), opts)
	if err != nil {
		t.Fatal(err)
	}
	if d, err := candidate.SelfDigest(rec); err != nil || d != rec.Digest {
		t.Fatalf("record digest %s, computed %s (%v)", rec.Digest, d, err)
	}
	return rec
}

func issueCodes(rec *verify.ReceiptRecord) []string {
	var out []string
	for _, is := range rec.Issues {
		out = append(out, is.Code+" "+is.Path)
	}
	return out
}

// TestVerifyReceiptValid: an honest chain verifies in each of its three
// forms, against its bundle and task (spec candidate §22.1 steps 1–6).
func TestVerifyReceiptValid(t *testing.T) {
	c := receipttest.New(t)
	e := c.Evidence
	full := verify.ReceiptOptions{Bundle: c.Bundle, Task: c.Task}
	for _, tc := range []struct {
		name     string
		doc      any
		opts     verify.ReceiptOptions
		evidence int
		limits   bool
	}{
		// suite, task, activation, profile plan, execution plan, run cell, the receipt
		{"materialization", &e.MaterializationReceipt, full, 7, false},
		// settlement, outcome, result, the receipt
		{"run", &e.Receipt, verify.ReceiptOptions{Materialization: &e.MaterializationReceipt, Bundle: c.Bundle, Task: c.Task}, 4, true},
		{"evidence", e, full, 7 + 4 + 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := verifyDoc(t, c, tc.doc, tc.opts)
			if rec.Verdict != verify.Valid || len(rec.Issues) > 0 {
				t.Fatalf("verdict %s, issues %v", rec.Verdict, rec.Issues)
			}
			if len(rec.Evidence) != tc.evidence {
				t.Errorf("%d evidence records verified, want %d: %v", len(rec.Evidence), tc.evidence, rec.Evidence)
			}
			if (rec.Limits != nil) != tc.limits || tc.limits && (len(rec.Limits.Violations) > 0 || !rec.Limits.UsageWithinLimits) {
				t.Errorf("limits %+v", rec.Limits)
			}
			for _, np := range rec.NotPerformed {
				if strings.Contains(np, "publication") || strings.Contains(np, "bindings") {
					t.Errorf("not performed although the context was given: %s", np)
				}
			}
			for _, w := range rec.Workspaces {
				if w.ArchiveContent != verify.ArchiveVerified {
					t.Errorf("workspace %+v: the fixture's archives are in the reference layout", w)
				}
			}
			if rec.ReceiptDigest != rec.CarriedDigest {
				t.Errorf("receipt digest %s, carried %s", rec.ReceiptDigest, rec.CarriedDigest)
			}
		})
	}
}

// TestVerifyReceiptWithoutContext: without bundle, task or
// materialization the record says which checks were not performed; a
// valid verdict never hides them.
func TestVerifyReceiptWithoutContext(t *testing.T) {
	c := receipttest.New(t)
	rec := verifyDoc(t, c, &c.Evidence.Receipt, verify.ReceiptOptions{})
	if rec.Verdict != verify.Valid {
		t.Fatalf("verdict %s: %v", rec.Verdict, rec.Issues)
	}
	if rec.Limits != nil {
		t.Errorf("a run receipt alone cannot be checked against limits, got %+v", rec.Limits)
	}
	for _, want := range []string{"bindings to the materialization receipt", "against the bundle", "against the task"} {
		if !slices.ContainsFunc(rec.NotPerformed, func(s string) bool { return strings.Contains(s, want) }) {
			t.Errorf("notPerformed %q lacks %q", rec.NotPerformed, want)
		}
	}
}

// TestVerifyReceiptFaults: each fault is found, with its code, path and
// verdict (§22.1 steps 2–6, §12.1, §15.4).
func TestVerifyReceiptFaults(t *testing.T) {
	for _, tc := range []struct {
		name string
		// change mutates the chain; reseal says whether to recompute every
		// digest afterwards (an honest evaluator's fault) or only the
		// top-level one (a tampered record).
		change  func(c *receipttest.Chain)
		reseal  bool
		verdict string
		want    []string
	}{
		{"tampered receipt digest", func(c *receipttest.Chain) { c.Evidence.Digest = c.Evidence.Receipt.Digest }, false,
			verify.Invalid, []string{"digest-mismatch /digest"}},
		{"tampered settlement material", func(c *receipttest.Chain) {
			c.Evidence.Receipt.ModelSettlement.Material.PreparationID = "another-preparation"
			c.ResealTop()
		}, false, verify.Invalid, []string{"evidence-digest-mismatch /receipt/modelSettlement/digest"}},
		{"tampered run cell", func(c *receipttest.Chain) {
			c.Evidence.MaterializationReceipt.ExecutionPlan.Material.RunCell.Seed = 7
			c.ResealTop()
		}, false, verify.Invalid, []string{
			"evidence-digest-mismatch /materializationReceipt/executionPlan/digest",
			"digest-mismatch /materializationReceipt/executionPlan/material/runCell/digest",
		}},
		{"trace missing from the store", func(c *receipttest.Chain) { c.Remove(c.Evidence.Receipt.Trace.Artifact.SHA256) }, false,
			verify.Invalid, []string{"artifact-unavailable /receipt/trace/artifact"}},
		{"trace bytes swapped", func(c *receipttest.Chain) { c.Overwrite(c.Evidence.Receipt.Trace.Artifact.SHA256, "trace EVENTS\n") }, false,
			verify.Invalid, []string{"artifact-hash /receipt/trace/artifact"}},
		{"one step over the limit", func(c *receipttest.Chain) { c.Evidence.Receipt.Steps = 21 }, true,
			verify.LimitExceeded, []string{"limit-exceeded /receipt/steps"}},
		{"router found usage over the limits", func(c *receipttest.Chain) { c.Evidence.Receipt.ModelSettlement.Material.UsageWithinLimits = false }, true,
			verify.LimitExceeded, []string{"limit-exceeded /receipt/modelSettlement/material/usageWithinLimits"}},
		{"settlement not closed", func(c *receipttest.Chain) { c.Evidence.Receipt.ModelSettlement.Material.Closed = false }, true,
			verify.InvalidCapture, []string{"invalid-capture /receipt/modelSettlement/material/closed"}},
		{"trace without events", func(c *receipttest.Chain) { c.Evidence.Receipt.Trace.EventCount = 0 }, true,
			verify.InvalidCapture, []string{"invalid-capture /receipt/trace/eventCount", "invalid-capture /receipt/trace/eventCount"}},
		{"captured task not canonical", func(c *receipttest.Chain) {
			m := &c.Evidence.MaterializationReceipt
			pretty, err := json.MarshalIndent(c.Task, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			c.Captured(&m.Benchmark.Task.Material, pretty)
			m.Benchmark.Task.Digest = m.Benchmark.Task.Material.SHA256
			m.ExecutionPlan.Material.RunCell.TaskDigest = m.Benchmark.Task.Digest
			resealFrom(c, m.Benchmark.Task.Digest)
		}, false, verify.Invalid, []string{
			"evidence-bytes-mismatch /materializationReceipt/benchmark/task/material",
			"publication-mismatch /materializationReceipt/benchmark/task/digest",
		}},
		{"another harness version", func(c *receipttest.Chain) { c.Bundle.Execution.HarnessVersion = "0.2.0" }, true,
			verify.Invalid, []string{"publication-mismatch /materializationReceipt/harness"}},
		{"limits not the task's", func(c *receipttest.Chain) { c.Task.Limits.MaxSteps = 30 }, true,
			verify.Invalid, []string{"publication-mismatch /materializationReceipt/executionPlan/material/limits"}},
		{"a retried attempt", func(c *receipttest.Chain) {
			c.Evidence.MaterializationReceipt.ExecutionPlan.Material.RunCell.Attempt = 2
		}, true,
			verify.Invalid, []string{"publication-mismatch /materializationReceipt/executionPlan/material/runCell/attempt"}},
		{"graded by another grader", func(c *receipttest.Chain) { c.Evidence.Receipt.BenchmarkResult.Material.Grader.Version = "9.9.9" }, true,
			verify.Invalid, []string{"publication-mismatch /receipt/benchmarkResult/material/grader"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := receipttest.New(t)
			tc.change(c)
			if tc.reseal {
				c.Reseal()
			}
			rec := verifyDoc(t, c, c.Evidence, verify.ReceiptOptions{Bundle: c.Bundle, Task: c.Task})
			if rec.Verdict != tc.verdict {
				t.Errorf("verdict %s, want %s (issues %v)", rec.Verdict, tc.verdict, rec.Issues)
			}
			if diff := cmp.Diff(tc.want, issueCodes(rec)); diff != "" {
				t.Errorf("issues (-want +got):\n%s\n%v", diff, rec.Issues)
			}
		})
	}
}

// TestVerifyReceiptBinding: a run receipt checked against a
// materialization receipt it does not bind.
func TestVerifyReceiptBinding(t *testing.T) {
	c := receipttest.New(t)
	other := receipttest.New(t)
	other.Evidence.MaterializationReceipt.ExecutionPlan.Material.ExecutionID = "candidate-execution-2"
	other.Reseal()
	rec := verifyDoc(t, c, &c.Evidence.Receipt, verify.ReceiptOptions{Materialization: &other.Evidence.MaterializationReceipt})
	if rec.Verdict != verify.Invalid {
		t.Fatalf("verdict %s", rec.Verdict)
	}
	// Another execution id: another plan and materialization, one run
	// cell.
	want := []string{"binding-mismatch /materializationReceiptDigest", "binding-mismatch /executionPlanDigest"}
	if diff := cmp.Diff(want, issueCodes(rec)); diff != "" {
		t.Errorf("issues (-want +got):\n%s", diff)
	}
	// Over its limits against its own materialization: limit-exceeded.
	c.Evidence.Receipt.Steps = 21
	c.Reseal()
	rec = verifyDoc(t, c, &c.Evidence.Receipt, verify.ReceiptOptions{Materialization: &c.Evidence.MaterializationReceipt})
	if rec.Verdict != verify.LimitExceeded || rec.Limits == nil || len(rec.Limits.Violations) != 1 {
		t.Fatalf("verdict %s, limits %+v, issues %v", rec.Verdict, rec.Limits, rec.Issues)
	}
}

// TestVerifyReceiptRefusals: unreadable input and context documents
// that do not carry their own digests.
func TestVerifyReceiptRefusals(t *testing.T) {
	c := receipttest.New(t)
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"byte order mark", append([]byte("\xef\xbb\xbf"), receipttest.Bytes(t, c.Evidence)...), "parse-error "},
		{"duplicate member", []byte(`{"kind":"agent-candidate-run","kind":"agent-candidate-run"}`), "parse-error /kind"},
		{"not an object", []byte(`[]`), "parse-error "},
		{"unknown kind", []byte(`{"kind":"agent-candidate-bundle"}`), "schema-invalid /kind"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec, err := verify.VerifyReceipt(context.Background(), tc.data, verify.ReceiptOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got := issueCodes(rec); rec.Verdict != verify.Invalid || len(got) == 0 || got[0] != tc.want {
				t.Errorf("verdict %s, issues %v, want first %q", rec.Verdict, got, tc.want)
			}
		})
	}
	bad := *c.Task
	bad.Limits.MaxSteps++
	_, err := verify.VerifyReceipt(context.Background(), receipttest.Bytes(t, c.Evidence), verify.ReceiptOptions{Task: &bad})
	if !errors.Is(err, verify.ErrContext) {
		t.Errorf("a task whose digest does not verify: %v, want ErrContext", err)
	}
}

// resealFrom reseals c keeping the captured task as the test set
// it (digest taskDigest), without recomputing the task's own digest.
func resealFrom(c *receipttest.Chain, taskDigest string) {
	e := c.Evidence
	m := &e.MaterializationReceipt
	captured := m.Benchmark.Task
	c.Reseal()
	m.Benchmark.Task = captured
	m.ExecutionPlan.Material.RunCell.TaskDigest = taskDigest
	m.ExecutionPlan.Material.RunCell.Digest = c.SelfDigest(&m.ExecutionPlan.Material.RunCell)
	receipttest.SealEvidence(c, &m.ExecutionPlan)
	r := &e.Receipt
	plan := m.ExecutionPlan.Digest
	r.RunCellDigest, r.ExecutionPlanDigest = m.ExecutionPlan.Material.RunCell.Digest, plan
	r.ModelSettlement.Material.ExecutionPlanDigest = plan
	receipttest.SealEvidence(c, &r.ModelSettlement)
	r.TaskOutcome.Material.ExecutionPlanDigest = plan
	receipttest.SealEvidence(c, &r.TaskOutcome)
	r.BenchmarkResult.Material.ExecutionPlanDigest, r.BenchmarkResult.Material.TaskOutcomeDigest = plan, r.TaskOutcome.Digest
	receipttest.SealEvidence(c, &r.BenchmarkResult)
	c.ResealTop()
}
