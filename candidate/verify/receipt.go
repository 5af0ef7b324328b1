package verify

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/agentrt/agentrt/candidate"
	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/schema"
)

// Receipt record kind and verdicts (spec candidate §22.1 step 6).
const (
	ReceiptRecordKind = "agent-candidate-receipt-verification"
	// Valid: every digest, evidence byte, binding and (where the inputs
	// allow) limit and publication rule holds.
	Valid = "valid"
	// Invalid: some rule does not hold; Issues say which.
	Invalid = "invalid"
	// LimitExceeded: the receipt is sound but the run broke a frozen limit
	// (§12.1), or the router said so (usageWithinLimits false).
	LimitExceeded = "limit-exceeded"
	// InvalidCapture: the receipt lacks a closed settlement or a complete
	// trace (§15.4); no such receipt may be produced or accepted.
	InvalidCapture = "invalid-capture"
)

// Issue codes of receipt verification, beside the artifact codes shared
// with Verify (artifact-unavailable, artifact-length, artifact-hash,
// resolver-blocked, workspace-manifest-mismatch) and parse-error,
// schema-invalid and digest-mismatch.
const (
	// CodeEvidenceDigestMismatch: an evidence digest is not the SHA-256
	// of its material's canonical JSON.
	CodeEvidenceDigestMismatch = "evidence-digest-mismatch"
	// CodeEvidenceBytesMismatch: an evidence (or benchmark input)
	// artifact's bytes are not the canonical JSON of its material.
	CodeEvidenceBytesMismatch = "evidence-bytes-mismatch"
	// CodeBindingMismatch: a run receipt does not bind the
	// materialization receipt it was given with.
	CodeBindingMismatch = "binding-mismatch"
	// CodePublicationMismatch: a publication rule between the receipt
	// and the given bundle or task does not hold (§§13.3, 14, 15.3).
	CodePublicationMismatch = "publication-mismatch"
	// CodeLimitExceeded: a frozen limit was exceeded.
	CodeLimitExceeded = "limit-exceeded"
	// CodeInvalidCapture: the settlement is not closed or the trace is
	// not complete.
	CodeInvalidCapture = "invalid-capture"
)

// ReceiptOptions configure VerifyReceipt. Bundle, Task and
// Materialization are optional context: without them the rules that
// need them are not applied, and the record's NotPerformed says so.
type ReceiptOptions struct {
	// MaxBytes caps the receipt size; 0 means DefaultMaxBytes.
	MaxBytes int
	// Artifacts reads artifact refs; nil makes every ref unavailable
	// (embedded artifacts are still checked).
	Artifacts ArtifactPort
	// Materialization is the materialization receipt a standalone run
	// receipt binds (its bindings and the limits check need it).
	Materialization *candidate.MaterializationReceipt
	// Bundle is the candidate the receipts were made for; its digest must
	// verify.
	Bundle *candidate.Bundle
	// Task is the benchmark task the receipts were made for; its digest
	// must verify.
	Task *candidate.BenchmarkTask
}

// ErrContext is wrapped by VerifyReceipt's error when a context document
// of ReceiptOptions does not carry its own digest: verifying against it
// would prove nothing.
var ErrContext = errors.New("verify: context document does not verify")

// ReceiptRecord is the result of verifying a materialization receipt, a
// run receipt or a CandidateExecutionEvidence (spec candidate §22.1): a
// project-defined document, self-digested like every candidate document.
type ReceiptRecord struct {
	// Kind is ReceiptRecordKind.
	Kind string `json:"kind"`
	// DigestAlgorithm is DigestAlgorithm.
	DigestAlgorithm string `json:"digestAlgorithm"`
	// ReceiptKind is the kind member of the verified document, when it
	// has one.
	ReceiptKind string `json:"receiptKind,omitzero"`
	// Verdict is Valid, Invalid, LimitExceeded or InvalidCapture.
	Verdict string `json:"verdict"`
	// ReceiptDigest is the computed self-digest; absent when the document
	// has no canonical form.
	ReceiptDigest string `json:"receiptDigest,omitzero"`
	// CarriedDigest is the document's own digest member, untrusted.
	CarriedDigest string `json:"carriedDigest,omitzero"`
	// Evidence are the evidence records whose digest and bytes were
	// verified.
	Evidence []EvidenceRecord `json:"evidence"`
	// Artifacts are the other artifacts whose bytes were verified.
	Artifacts []ArtifactRecord `json:"artifacts"`
	// Workspaces are the workspace snapshots whose manifests were
	// verified (archives by length and sha256 only).
	Workspaces []WorkspaceRecord `json:"workspaces"`
	// Limits is the within-limits check, when the limits and the settled
	// usage were both at hand.
	Limits *LimitsRecord `json:"limits,omitzero"`
	// Context lists the context documents the receipt was checked against
	// ("materialization", "bundle", "task").
	Context []string `json:"context"`
	// NotPerformed lists the §22.1 checks the inputs did not allow.
	NotPerformed []string `json:"notPerformed"`
	// Issues are every reason the verdict is not Valid.
	Issues []Issue `json:"issues"`
	// Digest is the record's self-digest (candidate.SelfDigest).
	Digest string `json:"digest"`
}

// EvidenceRecord is one evidence record (or self-digested document)
// whose digest was recomputed and, for evidence, whose artifact bytes
// were found to be exactly the canonical JSON of its material.
type EvidenceRecord struct {
	// Path is the JSON pointer of the record in the verified document.
	Path string `json:"path"`
	// Kind is the record's kind member.
	Kind string `json:"kind"`
	// Digest is the verified digest.
	Digest string `json:"digest"`
}

// LimitsRecord is the §12.1 check over the run's duration, steps and
// settled usage against the plan's frozen limits.
type LimitsRecord struct {
	// Violations are the limits exceeded, as messages; empty when none.
	Violations []string `json:"violations"`
	// UsageWithinLimits is the router's own terminal check, carried by
	// the settlement (false is a breach even when Violations is empty).
	UsageWithinLimits bool `json:"usageWithinLimits"`
}

// VerifyReceipt verifies a materialization receipt, a run receipt or a
// CandidateExecutionEvidence (spec candidate §22.1): strict parse and
// schema (with every cross-field rule), every self-digest and evidence
// digest recomputed, every evidence artifact byte-identical to its
// material's canonical JSON, every other artifact checked by length then
// sha256 through the port, the bindings between a run receipt and its
// materialization, the within-limits check, and — given a bundle or a
// task — the publication rules. A rejection is a record whose verdict is
// not Valid; the error is only for operational failures.
func VerifyReceipt(ctx context.Context, data []byte, opts ReceiptOptions) (*ReceiptRecord, error) {
	rv := &receiptVerifier{opts: opts, store: newStore(opts.Artifacts), rec: &ReceiptRecord{
		Kind: ReceiptRecordKind, DigestAlgorithm: DigestAlgorithm,
		Evidence: []EvidenceRecord{}, Artifacts: []ArtifactRecord{}, Workspaces: []WorkspaceRecord{},
		Context: []string{}, NotPerformed: []string{}, Issues: []Issue{},
	}}
	if err := rv.checkContext(); err != nil {
		return nil, err
	}
	if err := rv.run(ctx, data); err != nil {
		return nil, err
	}
	rv.rec.Verdict = receiptVerdict(rv.rec.Issues)
	d, err := candidate.SelfDigest(rv.rec)
	if err != nil {
		return nil, fmt.Errorf("verify: digesting the record: %w", err)
	}
	rv.rec.Digest = d
	return rv.rec, nil
}

// receiptVerdict ranks the issues: a capture failure voids everything,
// any other issue makes the receipt invalid, and a receipt whose only
// issues are limits is sound but over its limits.
func receiptVerdict(issues []Issue) string {
	verdict := Valid
	for _, is := range issues {
		switch is.Code {
		case CodeInvalidCapture:
			return InvalidCapture
		case CodeLimitExceeded:
			if verdict == Valid {
				verdict = LimitExceeded
			}
		default:
			verdict = Invalid
		}
	}
	return verdict
}

type receiptVerifier struct {
	opts  ReceiptOptions
	store *store
	rec   *ReceiptRecord
	// val is the parsed document: digests are computed over it.
	val canonjson.Value
}

func (rv *receiptVerifier) issue(code, path, format string, args ...any) {
	rv.rec.Issues = append(rv.rec.Issues, Issue{Code: code, Path: path, Message: fmt.Sprintf(format, args...)})
}

// checkContext refuses context documents whose own digests do not verify
// and records which were given.
func (rv *receiptVerifier) checkContext() error {
	o := rv.opts
	if m := o.Materialization; m != nil {
		if err := selfDigestHolds("materialization receipt", m, m.Digest); err != nil {
			return err
		}
		rv.rec.Context = append(rv.rec.Context, "materialization")
	}
	if b := o.Bundle; b != nil {
		if err := selfDigestHolds("bundle", b, b.Digest); err != nil {
			return err
		}
		rv.rec.Context = append(rv.rec.Context, "bundle")
	}
	if t := o.Task; t != nil {
		if err := selfDigestHolds("benchmark task", t, t.Digest); err != nil {
			return err
		}
		rv.rec.Context = append(rv.rec.Context, "task")
	}
	return nil
}

func selfDigestHolds(what string, doc any, carried string) error {
	d, err := candidate.SelfDigest(doc)
	if err != nil {
		return fmt.Errorf("%w: the %s: %w", ErrContext, what, err)
	}
	if d != carried {
		return fmt.Errorf("%w: the %s carries %s but digests to %s", ErrContext, what, carried, d)
	}
	return nil
}

// readIssue is §22 step 1's byte-level refusal of data, or "".
func readIssue(data []byte, limit int, what string) string {
	if limit <= 0 {
		limit = DefaultMaxBytes
	}
	switch {
	case len(data) > limit:
		return fmt.Sprintf("the %s is %d bytes, more than %d", what, len(data), limit)
	case bytes.HasPrefix(data, []byte("\xef\xbb\xbf")):
		return fmt.Sprintf("the %s starts with a byte order mark", what)
	case !utf8.Valid(data):
		return fmt.Sprintf("the %s is not valid UTF-8", what)
	}
	return ""
}

func (rv *receiptVerifier) run(ctx context.Context, data []byte) error {
	if msg := readIssue(data, rv.opts.MaxBytes, "receipt"); msg != "" {
		rv.issue(CodeParseError, "", "%s", msg)
		return nil
	}
	val, err := schema.Decode(candidate.KindRunReceipt, data)
	if err != nil {
		return schemaIssues(rv.issue, CodeParseError, err)
	}
	if val.Kind() != canonjson.Object {
		rv.issue(CodeParseError, "", "the top level is not an object")
		return nil
	}
	rv.val = val
	kind, _ := val.Get("kind")
	rv.rec.ReceiptKind = kind.Str()
	if c, ok := val.Get("digest"); ok && c.Kind() == canonjson.String {
		rv.rec.CarriedDigest = c.Str()
	}
	if d, err := candidate.SelfDigestValue(val); err == nil {
		rv.rec.ReceiptDigest = d
	}
	switch rv.rec.ReceiptKind {
	case candidate.KindMaterializationReceiptValue:
		m, ok := parseReceipt[candidate.MaterializationReceipt](rv, candidate.KindMaterializationReceipt, candidate.MaterializationReceiptSchema, val, nil)
		if !ok {
			return nil
		}
		rv.selfDigest("", m.Kind, m.Digest)
		if err := rv.materialization(ctx, "", m); err != nil {
			return err
		}
		rv.publication("", m, nil)
		rv.notPerformed(m, nil)
	case candidate.KindRunReceiptValue:
		r, ok := parseReceipt[candidate.RunReceipt](rv, candidate.KindRunReceipt, candidate.RunReceiptSchema, val, nil)
		if !ok {
			return nil
		}
		rv.selfDigest("", r.Kind, r.Digest)
		if err := rv.runReceipt(ctx, "", r); err != nil {
			return err
		}
		if m := rv.opts.Materialization; m != nil {
			rv.bind(val, m)
		}
		rv.publication("", rv.opts.Materialization, r)
		rv.notPerformed(rv.opts.Materialization, r)
	case candidate.KindExecutionEvidenceValue:
		limitPaths := map[string]bool{}
		for _, v := range candidate.ExecutionEvidenceLimitViolations(val) {
			limitPaths[canonjson.Pointer(v.Path...)] = true
		}
		e, ok := parseReceipt[candidate.ExecutionEvidence](rv, candidate.KindExecutionEvidence, candidate.ExecutionEvidenceSchema, val, limitPaths)
		if !ok {
			return nil
		}
		rv.selfDigest("", e.Kind, e.Digest)
		rv.selfDigest("/materializationReceipt", e.MaterializationReceipt.Kind, e.MaterializationReceipt.Digest)
		rv.selfDigest("/receipt", e.Receipt.Kind, e.Receipt.Digest)
		if err := rv.materialization(ctx, "/materializationReceipt", &e.MaterializationReceipt); err != nil {
			return err
		}
		if err := rv.runReceipt(ctx, "/receipt", &e.Receipt); err != nil {
			return err
		}
		rv.limits(val, &e.Receipt)
		rv.publication("/materializationReceipt", &e.MaterializationReceipt, &e.Receipt)
		rv.notPerformed(&e.MaterializationReceipt, &e.Receipt)
	default:
		rv.issue(CodeSchemaInvalid, "/kind", "%q is not a receipt kind this verifier knows (%s, %s or %s)", rv.rec.ReceiptKind,
			candidate.KindMaterializationReceiptValue, candidate.KindRunReceiptValue, candidate.KindExecutionEvidenceValue)
	}
	return nil
}

// captureRule reports whether a schema issue at path is a capture
// failure (§15.4): no settlement or trace at all, a settlement that is
// not closed, or a trace without events or bytes.
func captureRule(path string) bool {
	for _, suffix := range []string{"/modelSettlement", "/modelSettlement/material/closed", "/trace", "/trace/eventCount", "/trace/artifact/byteLength"} {
		if strings.HasSuffix(path, suffix) {
			return true
		}
	}
	return false
}

// parseReceipt validates val as kind. Every schema issue is recorded:
// capture failures as invalid-capture, the limit paths as
// limit-exceeded, the rest as schema-invalid. ok is false when the value
// is not of the kind (the typed checks cannot run).
func parseReceipt[T any](rv *receiptVerifier, kind string, node schema.Node, val canonjson.Value, limitPaths map[string]bool) (*T, bool) {
	doc, err := contract.FromValue[T](kind, node, val)
	if err == nil {
		return doc, true
	}
	var se *schema.Error
	if !errors.As(err, &se) {
		rv.issue(CodeSchemaInvalid, "", "%v", err)
		return nil, false
	}
	structural := false
	for _, is := range se.Issues {
		switch {
		case captureRule(is.Path):
			rv.issue(CodeInvalidCapture, is.Path, "%s (%s)", is.Message, is.Code)
		case limitPaths[is.Path] && is.Code == "custom":
			rv.issue(CodeLimitExceeded, is.Path, "%s", is.Message)
		default:
			structural = true
			rv.issue(CodeSchemaInvalid, is.Path, "%s (%s)", is.Message, is.Code)
		}
	}
	if structural {
		return nil, false
	}
	// Only limit and capture rules failed: the shape is sound, so read it
	// without the refinements to run the remaining checks.
	doc = new(T)
	if err := canonjson.FromValue(val, doc); err != nil {
		return nil, false
	}
	return doc, true
}

// selfDigest checks that the self-digested document at path carries its
// digest, computed over the parsed value (spec candidate §2.3), not over
// a re-encoding of the Go type.
func (rv *receiptVerifier) selfDigest(path, kind, carried string) {
	doc, ok := canonjson.Resolve(rv.val, path)
	if !ok {
		rv.issue(CodeDigestMismatch, path, "no document at %s", path)
		return
	}
	d, err := candidate.SelfDigestValue(doc)
	if err != nil {
		rv.issue(CodeDigestMismatch, path, "no canonical form: %v", err)
		return
	}
	if d != carried {
		rv.issue(CodeDigestMismatch, path+"/digest", "carried %s, computed %s", carried, d)
		return
	}
	rv.rec.Evidence = append(rv.rec.Evidence, EvidenceRecord{Path: path, Kind: kind, Digest: d})
}

// evidence checks one evidence record: digest == sha256(JCS(material)),
// and the artifact's verified bytes are exactly JCS(material).
func evidence[M any](ctx context.Context, rv *receiptVerifier, path string, e *candidate.Evidence[M]) error {
	material, _ := canonjson.Resolve(rv.val, path+"/material")
	want, err := canonjson.Canonical(material)
	if err != nil {
		rv.issue(CodeEvidenceDigestMismatch, path+"/material", "no canonical form: %v", err)
		return nil
	}
	if d := sha256Digest(want); d != e.Digest {
		rv.issue(CodeEvidenceDigestMismatch, path+"/digest", "carried %s, the material digests to %s", e.Digest, d)
		return nil
	}
	got, ok, err := rv.artifact(ctx, captured(path+"/artifact", &e.Artifact))
	if !ok || err != nil {
		return err
	}
	if !bytes.Equal(got, want) {
		rv.issue(CodeEvidenceBytesMismatch, path+"/artifact", "the artifact's bytes are not the canonical JSON of the material")
		return nil
	}
	rv.rec.Evidence = append(rv.rec.Evidence, EvidenceRecord{Path: path, Kind: e.Kind, Digest: e.Digest})
	return nil
}

// artifact verifies one artifact's bytes through the store and records
// it; ok is false when it was rejected (the issue is recorded).
func (rv *receiptVerifier) artifact(ctx context.Context, a artifact) ([]byte, bool, error) {
	data, is, err := rv.store.verify(ctx, a)
	if err != nil {
		return nil, false, err
	}
	if is != nil {
		rv.rec.Issues = append(rv.rec.Issues, *is)
		return nil, false, nil
	}
	rv.rec.Artifacts = append(rv.rec.Artifacts, ArtifactRecord{a.path, a.key.SHA256, a.key.ByteLength, a.source()})
	return data, true, nil
}

// snapshot verifies a workspace snapshot: manifest and archive bytes,
// that the manifest is exactly JCS(material) hashing to digest, and the
// archive's content where it is in the reference layout.
func (rv *receiptVerifier) snapshot(ctx context.Context, path string, w *candidate.WorkspaceSnapshotEvidence, kind workspaceKind) error {
	if w == nil {
		return nil
	}
	manifest, manifestOK, err := rv.artifact(ctx, captured(path+"/manifest", &w.Manifest))
	if err != nil {
		return err
	}
	archive, archiveOK, err := rv.artifact(ctx, captured(path+"/archive", &w.Archive))
	if err != nil || !manifestOK || !archiveOK {
		return err
	}
	if is := manifestIssue(path, w, manifest); is != nil {
		rv.rec.Issues = append(rv.rec.Issues, *is)
		return nil
	}
	state, is := archiveContent(path, w, archive, kind)
	if is != nil {
		rv.rec.Issues = append(rv.rec.Issues, *is)
		return nil
	}
	rv.rec.Workspaces = append(rv.rec.Workspaces, WorkspaceRecord{Path: path, Digest: w.Digest, Files: len(w.Material.Files), ArchiveContent: state})
	return nil
}

// benchmarkInput checks a captured suite or task: its bytes (verified
// against the digest by length and sha256) are the canonical JSON of a
// document of kind without its digest.
func (rv *receiptVerifier) benchmarkInput(ctx context.Context, path, kind string, e *candidate.BenchmarkMaterialEvidence) error {
	got, ok, err := rv.artifact(ctx, captured(path+"/material", &e.Material))
	if !ok || err != nil {
		return err
	}
	v, err := canonjson.Decode(got)
	canon, cerr := canonjson.Canonical(v)
	if err != nil || cerr != nil || !bytes.Equal(canon, got) {
		rv.issue(CodeEvidenceBytesMismatch, path+"/material", "the captured bytes are not canonical JSON")
		return nil
	}
	if k, _ := v.Get("kind"); k.Str() != kind {
		rv.issue(CodeEvidenceBytesMismatch, path+"/material", "the captured document is of kind %q, not %q", k.Str(), kind)
		return nil
	}
	if _, has := v.Get("digest"); has {
		rv.issue(CodeEvidenceBytesMismatch, path+"/material", "the captured bytes carry a digest member; they must be the document without it")
		return nil
	}
	rv.rec.Evidence = append(rv.rec.Evidence, EvidenceRecord{Path: path, Kind: kind, Digest: e.Digest})
	return nil
}

// materialization runs §22.1 step 2 over a materialization receipt.
func (rv *receiptVerifier) materialization(ctx context.Context, base string, m *candidate.MaterializationReceipt) error {
	if err := rv.benchmarkInput(ctx, base+"/benchmark/suite", candidate.KindBenchmarkSuiteValue, &m.Benchmark.Suite); err != nil {
		return err
	}
	if err := rv.benchmarkInput(ctx, base+"/benchmark/task", candidate.KindBenchmarkTaskValue, &m.Benchmark.Task); err != nil {
		return err
	}
	act := &m.ProfileActivation
	rv.selfDigest(base+"/profileActivation", act.Kind, act.Digest)
	if err := evidence(ctx, rv, base+"/profileActivation/profilePlan", &act.ProfilePlan); err != nil {
		return err
	}
	plan := &m.ExecutionPlan
	if err := evidence(ctx, rv, base+"/executionPlan", plan); err != nil {
		return err
	}
	pm := &plan.Material
	rv.selfDigest(base+"/executionPlan/material/runCell", pm.RunCell.Kind, pm.RunCell.Digest)
	if err := rv.snapshot(ctx, base+"/executionPlan/material/candidateWorkspace", pm.CandidateWorkspace, candidateWorkspace); err != nil {
		return err
	}
	if mem := pm.Memory; mem.Reset != nil {
		if _, _, err := rv.artifact(ctx, captured(base+"/executionPlan/material/memory/reset/evidence", &mem.Reset.Evidence)); err != nil {
			return err
		}
	}
	if err := rv.snapshot(ctx, base+"/executionPlan/material/memory/beforeState", pm.Memory.BeforeState, candidateWorkspace); err != nil {
		return err
	}
	return rv.snapshot(ctx, base+"/candidateWorkspace", m.CandidateWorkspace, candidateWorkspace)
}

// runReceipt runs §22.1 step 2 over a run receipt.
func (rv *receiptVerifier) runReceipt(ctx context.Context, base string, r *candidate.RunReceipt) error {
	if err := evidence(ctx, rv, base+"/modelSettlement", &r.ModelSettlement); err != nil {
		return err
	}
	if !r.ModelSettlement.Material.UsageWithinLimits {
		rv.issue(CodeLimitExceeded, base+"/modelSettlement/material/usageWithinLimits", "the router's own check found the settled usage over the limits")
	}
	if err := evidence(ctx, rv, base+"/taskOutcome", &r.TaskOutcome); err != nil {
		return err
	}
	out := &r.TaskOutcome.Material.Outcome
	if err := rv.snapshot(ctx, base+"/taskOutcome/material/outcome/afterState", out.AfterState, taskWorkspace); err != nil {
		return err
	}
	if out.GitDiff != nil {
		if _, _, err := rv.artifact(ctx, referenced(base+"/taskOutcome/material/outcome/gitDiff/artifact", &out.GitDiff.Artifact)); err != nil {
			return err
		}
	}
	if out.Artifact != nil {
		if _, _, err := rv.artifact(ctx, referenced(base+"/taskOutcome/material/outcome/artifact", out.Artifact)); err != nil {
			return err
		}
	}
	if err := evidence(ctx, rv, base+"/benchmarkResult", &r.BenchmarkResult); err != nil {
		return err
	}
	if _, _, err := rv.artifact(ctx, referenced(base+"/benchmarkResult/material/evidence", &r.BenchmarkResult.Material.Evidence)); err != nil {
		return err
	}
	if _, _, err := rv.artifact(ctx, captured(base+"/trace/artifact", &r.Trace.Artifact)); err != nil {
		return err
	}
	if _, _, err := rv.artifact(ctx, referenced(base+"/executorCapture", &r.ExecutorCapture)); err != nil {
		return err
	}
	return rv.snapshot(ctx, base+"/memory/afterState", r.Memory.AfterState, candidateWorkspace)
}

// bind checks a standalone run receipt against the given materialization
// receipt through the execution-evidence rules (bindings and limits),
// reporting each issue at its place in the run receipt (or the
// materialization receipt's, as "materialization:" plus its pointer).
func (rv *receiptVerifier) bind(run canonjson.Value, m *candidate.MaterializationReceipt) {
	mv, err := canonjson.ToValue(m)
	if err != nil {
		rv.issue(CodeBindingMismatch, "", "the materialization receipt has no canonical form: %v", err)
		return
	}
	ev := canonjson.ObjectValue([]canonjson.Member{
		{Name: "kind", Value: canonjson.StringValue(candidate.KindExecutionEvidenceValue)},
		{Name: "materializationReceipt", Value: mv},
		{Name: "receipt", Value: run},
	})
	d, err := candidate.SelfDigestValue(ev)
	if err != nil {
		rv.issue(CodeBindingMismatch, "", "%v", err)
		return
	}
	ev = ev.With("digest", canonjson.StringValue(d))
	limitPaths := map[string]bool{}
	for _, v := range candidate.ExecutionEvidenceLimitViolations(ev) {
		limitPaths[canonjson.Pointer(v.Path...)] = true
	}
	if _, err := schema.Run(candidate.KindExecutionEvidence, candidate.ExecutionEvidenceSchema, ev); err != nil {
		var se *schema.Error
		if !errors.As(err, &se) {
			rv.issue(CodeBindingMismatch, "", "%v", err)
			return
		}
		for _, is := range se.Issues {
			code := CodeBindingMismatch
			if limitPaths[is.Path] {
				code = CodeLimitExceeded
			}
			path, ok := strings.CutPrefix(is.Path, "/receipt")
			if !ok {
				path = "materialization:" + strings.TrimPrefix(is.Path, "/materializationReceipt")
			}
			rv.issue(code, path, "%s", is.Message)
		}
	}
	rv.limits(ev, nil)
}

// limits records the within-limits check of an execution-evidence value
// (the schema has already reported each violation).
func (rv *receiptVerifier) limits(ev canonjson.Value, r *candidate.RunReceipt) {
	rec := &LimitsRecord{Violations: []string{}}
	for _, v := range candidate.ExecutionEvidenceLimitViolations(ev) {
		rec.Violations = append(rec.Violations, v.Message())
	}
	within, _ := ev.Get("receipt")
	within, _ = within.Get("modelSettlement")
	within, _ = within.Get("material")
	w, _ := within.Get("usageWithinLimits")
	rec.UsageWithinLimits = w.Kind() == canonjson.Bool && w.Bool()
	rv.rec.Limits = rec
}

// notPerformed lists what the inputs did not allow.
func (rv *receiptVerifier) notPerformed(m *candidate.MaterializationReceipt, r *candidate.RunReceipt) {
	np := &rv.rec.NotPerformed
	if r != nil && m == nil {
		*np = append(*np, "bindings to the materialization receipt and the limits check (no materialization receipt given)")
	}
	if rv.opts.Bundle == nil {
		*np = append(*np, "publication rules against the bundle (no bundle given)")
	}
	if rv.opts.Task == nil {
		*np = append(*np, "publication rules against the task (no task given)")
	}
	if r != nil {
		*np = append(*np, "task outcome replay (applying gitDiff to the base tree)")
	}
}

// sameOptional compares two optional documents: both absent, or both
// present and structurally equal.
func sameOptional[T any](a, b *T) bool {
	return (a == nil) == (b == nil) && (a == nil || same(a, b))
}

// same compares two documents structurally (canonically).
func same(a, b any) bool {
	va, err := canonjson.ToValue(a)
	if err != nil {
		return false
	}
	vb, err := canonjson.ToValue(b)
	return err == nil && canonjson.Equal(va, vb)
}

// publication applies §22.1 step 5: the publication rules of §§13.3, 14
// and 15.3 between the receipts (m at base, r) and the given bundle and
// task.
func (rv *receiptVerifier) publication(base string, m *candidate.MaterializationReceipt, r *candidate.RunReceipt) {
	b, t := rv.opts.Bundle, rv.opts.Task
	if b == nil && t == nil {
		return
	}
	check := func(ok bool, path, format string, args ...any) {
		if !ok {
			rv.issue(CodePublicationMismatch, path, format, args...)
		}
	}
	runBase := base
	if base == "/materializationReceipt" {
		runBase = "/receipt"
	}
	if m != nil {
		pm := &m.ExecutionPlan.Material
		check(pm.RunCell.Attempt == 1, base+"/executionPlan/material/runCell/attempt", "publishable evidence is the first attempt, not attempt %d", pm.RunCell.Attempt)
		if b != nil {
			rv.bundleRules(base, m, b, check)
		}
		if t != nil {
			check(m.Benchmark.Task.Digest == t.Digest, base+"/benchmark/task/digest", "the receipt captured task %s, not the given task %s", m.Benchmark.Task.Digest, t.Digest)
			check(same(m.ResolvedModel, t.Model), base+"/resolvedModel", "the resolved model is not the task's model")
			check(same(pm.Limits, t.Limits), base+"/executionPlan/material/limits", "the plan's limits are not the task's signed limits")
			network := pm.Model.Access.Network.Mode
			check((t.Limits.MaxModelCalls == 0) == (network == "disabled"), base+"/executionPlan/material/model/access/network/mode",
				"a task allowing %d model calls needs model network %s, not %q", t.Limits.MaxModelCalls, map[bool]string{true: "disabled", false: "gateway-only"}[t.Limits.MaxModelCalls == 0], network)
			if pm.Container.Source == "evaluator-task-container" {
				check(sameOptional(&pm.Container, t.EvaluatorTaskContainer), base+"/executionPlan/material/container",
					"an evaluator-owned container must be the task's evaluator task container exactly")
			}
		}
	} else if b != nil && r != nil {
		check(r.BundleDigest == b.Digest, runBase+"/bundleDigest", "the receipt binds bundle %s, not the given bundle %s", r.BundleDigest, b.Digest)
	}
	if r != nil && t != nil {
		out := &r.TaskOutcome.Material.Outcome
		check(out.Kind == t.Outcome.Kind, runBase+"/taskOutcome/material/outcome/kind", "the outcome is %q, the task asks for %q", out.Kind, t.Outcome.Kind)
		if out.Kind == "output" && t.Outcome.Kind == "output" && out.Spec != nil {
			check(out.Spec.MediaType == deref(t.Outcome.MediaType) && t.Outcome.MaxBytes != nil && out.Spec.MaxBytes == *t.Outcome.MaxBytes,
				runBase+"/taskOutcome/material/outcome/spec", "the output spec is not the task's")
		}
		if out.Kind == "workspace" && out.BaseRepository != nil {
			tr := t.Repository
			br := out.BaseRepository
			check(tr != nil && br.Identity == tr.Identity && br.RootIdentity == tr.RootIdentity && br.Commit == tr.BaseCommit && br.Tree == tr.BaseTree,
				runBase+"/taskOutcome/material/outcome/baseRepository", "a workspace outcome must start from the task repository's base commit and tree")
		}
		check(same(r.BenchmarkResult.Material.Grader, t.Grader), runBase+"/benchmarkResult/material/grader", "the result was graded by another grader than the task's")
	}
}

// bundleRules are the publication rules between a materialization
// receipt and its bundle (§§13.3, 14).
func (rv *receiptVerifier) bundleRules(base string, m *candidate.MaterializationReceipt, b *candidate.Bundle, check func(bool, string, string, ...any)) {
	pm := &m.ExecutionPlan.Material
	check(m.BundleDigest == b.Digest, base+"/bundleDigest", "the receipt binds bundle %s, not the given bundle %s", m.BundleDigest, b.Digest)
	check(m.CodeKind == b.Code.Kind, base+"/codeKind", "code kind %q, the bundle's is %q", m.CodeKind, b.Code.Kind)
	var wantTree *string
	switch b.Code.Kind {
	case candidate.CodeNoOp:
		wantTree = b.Code.BaseTree
	case candidate.CodeGitPatch:
		wantTree = b.Code.CandidateTree
	}
	check(sameOptional(m.MaterializedTree, wantTree), base+"/materializedTree", "the materialized tree is not the tree the bundle's code yields")
	if d, err := candidate.ProfileDigest(&b.Profile); err == nil {
		got := m.ProfileActivation.ProfilePlan.Material.SourceProfileDigest
		check(got == d, base+"/profileActivation/profilePlan/material/sourceProfileDigest", "the profile plan was made from profile %s, the bundle's is %s", got, d)
	}
	check(m.Harness == b.Execution.Harness && m.HarnessVersion == b.Execution.HarnessVersion, base+"/harness",
		"harness %s %s, the bundle's is %s %s", m.Harness, m.HarnessVersion, b.Execution.Harness, b.Execution.HarnessVersion)
	check(same(pm.InstructionDelivery, b.Execution.InstructionDelivery), base+"/executionPlan/material/instructionDelivery", "the plan's instruction delivery is not the bundle's")
	check(same(pm.Launch.Cwd, b.Execution.Cwd), base+"/executionPlan/material/launch/cwd", "the plan's working directory is not the bundle's")
	check(sameOptional(pm.CandidateWorkspace, b.Execution.Workspace), base+"/executionPlan/material/candidateWorkspace", "the plan's candidate workspace is not the bundle's")
	var knowledge *string
	if b.Knowledge != nil {
		knowledge = &b.Knowledge.Snapshot.Digest
	}
	check(sameOptional(pm.KnowledgeManifestDigest, knowledge), base+"/executionPlan/material/knowledgeManifestDigest", "the plan's knowledge is not the bundle's")
	check(pm.Memory.Mode == b.Memory.Mode, base+"/executionPlan/material/memory/mode", "memory %q, the bundle's policy is %q", pm.Memory.Mode, b.Memory.Mode)
	var seed *string
	if b.Memory.Seed != nil {
		seed = &b.Memory.Seed.SHA256
	}
	check(sameOptional(pm.Memory.SeedDigest, seed), base+"/executionPlan/material/memory/seedDigest", "the plan's memory seed is not the bundle's")
	env := b.Execution.Environment
	switch env.Kind {
	case "pinned-container":
		c := env.Container
		check(pm.Container.Source == "pinned-container" && c != nil && pm.Container.Image == c.Image && pm.Container.IndexDigest == c.IndexDigest,
			base+"/executionPlan/material/container", "a pinned container must be the bundle's image and index")
	case "evaluator-task-container":
		check(pm.Container.Source == "evaluator-task-container", base+"/executionPlan/material/container/source", "the bundle leaves the container to the task, but the plan selected %q", pm.Container.Source)
	}
}
