package verify

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/agentrt/agentrt/candidate"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/schema"
)

// MaterializationContextKind is the kind member of a
// [MaterializationContext] document (project-defined, not a wire type of
// the interface).
const MaterializationContextKind = "agentrt-candidate-materialization-context"

// MaxEmbeddedBytes is the largest evidence artifact a receipt embeds as
// base64 (spec candidate §21.4, the reference's embedded-artifact limit);
// larger ones go through MaterializationContext.Store, or are refused
// (too-large) when it has none.
const MaxEmbeddedBytes = 1 << 20

// MaterializationContext is the evaluator-owned input of §22 step 13
// (--emit-materialization): the benchmark task, the suite that contains
// it, the run cell binding bundle × suite × task, the execution and
// preparation ids, the fresh workspace roots, the model grant and, for a
// pinned container, the manifest and platform selected from its index
// (step 11). Load one from its JSON document with
// [ParseMaterializationContext].
type MaterializationContext struct {
	// Kind is MaterializationContextKind.
	Kind string `json:"kind"`
	// Task is the benchmark task; its self-digest must verify.
	Task *candidate.BenchmarkTask `json:"task"`
	// Suite is the suite that lists Task at RunCell.TaskIndex; its
	// self-digest must verify.
	Suite *candidate.BenchmarkSuite `json:"suite"`
	// RunCell binds the verified bundle, Suite and Task, the position,
	// seed and counted attempt; its self-digest must verify.
	RunCell candidate.RunCell `json:"runCell"`
	// ExecutionID identifies this execution (§13.3 executionId).
	ExecutionID string `json:"executionId"`
	// PreparationID identifies the model-access preparation; task-scoped
	// memory needs it for its namespace (§21.5).
	PreparationID *string `json:"preparationId,omitzero"`
	// TaskRoot is the absolute directory the task workspace is written
	// to: missing (then created, its parent must exist) or an empty
	// directory.
	TaskRoot string `json:"taskRoot"`
	// CandidateRoot is the same for the candidate workspace; required iff
	// the bundle's code is active (no-op or git-patch).
	CandidateRoot *string `json:"candidateRoot,omitzero"`
	// ProfileRoot is the same for the profile staging directory: the
	// activation's files at their relative paths, which the executor
	// applies to the plan's target workspace before launch.
	ProfileRoot string `json:"profileRoot"`
	// Model is the evaluator's model grant.
	Model ModelGrant `json:"model"`
	// Container is the manifest and platform selected from a pinned
	// container's index (§22 step 11): required for a pinned container
	// unless step 11 ran (Options.OCI), which supplies it and which this
	// must then equal; for an evaluator task container it must be absent
	// or equal the task's.
	Container *ContainerSelection `json:"container,omitzero"`
	// Store receives evidence artifacts larger than MaxEmbeddedBytes
	// (not part of the document: set it in Go).
	Store ArtifactStore `json:"-"`
}

// ModelGrant is the evaluator-mediated model access of a plan.
type ModelGrant struct {
	// GrantDigest is the digest of the evaluator's grant.
	GrantDigest string `json:"grantDigest"`
	// Network is {mode:"disabled"} when the task allows no model call,
	// else {mode:"gateway-only", domains}.
	Network candidate.ModelNetwork `json:"network"`
}

// ContainerSelection is the platform manifest selected from an OCI index.
type ContainerSelection struct {
	// ManifestDigest is the selected manifest's digest.
	ManifestDigest string `json:"manifestDigest"`
	// Platform is the selected platform.
	Platform candidate.Platform `json:"platform"`
}

var (
	absRoot = schema.String(schema.MinLen(2))
	digest  = contract.Digest

	// MaterializationContextSchema validates a MaterializationContext
	// document: the task, suite and run cell by their own schemas, the
	// ids, roots, grant and container selection by shape. Digests,
	// bindings and roots are checked when materializing.
	MaterializationContextSchema = schema.Object(
		schema.Req("kind", schema.LiteralString(MaterializationContextKind)),
		schema.Req("task", candidate.BenchmarkTaskSchema),
		schema.Req("suite", candidate.BenchmarkSuiteSchema),
		schema.Req("runCell", candidate.RunCellSchema),
		schema.Req("executionId", schema.String(schema.MinLen(1), schema.MaxLen(512))),
		schema.Opt("preparationId", schema.String(schema.MinLen(1), schema.MaxLen(256))),
		schema.Req("taskRoot", absRoot),
		schema.Opt("candidateRoot", absRoot),
		schema.Req("profileRoot", absRoot),
		schema.Req("model", schema.Object(
			schema.Req("grantDigest", digest),
			schema.Req("network", schema.Discriminated("mode", map[string]schema.Node{
				"disabled": schema.Object(schema.Req("mode", schema.LiteralString("disabled"))),
				"gateway-only": schema.Object(
					schema.Req("mode", schema.LiteralString("gateway-only")),
					schema.Req("domains", schema.Array(schema.String(schema.MinLen(1), schema.MaxLen(253))).MinItems(1)),
				),
			})),
		)),
		schema.Opt("container", schema.Object(
			schema.Req("manifestDigest", digest),
			schema.Req("platform", schema.Object(
				schema.Req("os", schema.String(schema.MinLen(1), schema.MaxLen(100))),
				schema.Req("architecture", schema.String(schema.MinLen(1), schema.MaxLen(100))),
				schema.Opt("variant", schema.String(schema.MinLen(1), schema.MaxLen(100))),
			)),
		)),
	)
)

// ParseMaterializationContext decodes a MaterializationContext document
// strictly (duplicate keys and unknown members refused) and validates
// it with MaterializationContextSchema.
func ParseMaterializationContext(data []byte) (*MaterializationContext, error) {
	return contract.Parse[MaterializationContext](MaterializationContextKind, MaterializationContextSchema, data)
}

// ErrMaterialization is wrapped by every *MaterializationError.
var ErrMaterialization = errors.New("verify: materialization refused")

// Codes of a MaterializationError.
const (
	// MatContextInvalid: the context document is not valid, or its task,
	// suite or run cell does not carry its own digest.
	MatContextInvalid = "context-invalid"
	// MatBindingMismatch: the run cell does not bind this bundle, suite
	// and task, or the suite does not list the task at the cell's
	// position.
	MatBindingMismatch = "binding-mismatch"
	// MatTaskMismatch: the task cannot run this candidate (model,
	// container, network) or its workspace does not verify.
	MatTaskMismatch = "task-mismatch"
	// MatRoots: a root is not canonical and absolute, the roots overlap,
	// or a root is not a fresh empty directory.
	MatRoots = "roots"
	// MatRescan: a written directory does not re-scan to its manifest,
	// or bytes verified in an earlier step no longer read back the same.
	MatRescan = "rescan-mismatch"
	// MatTooLarge: an evidence artifact exceeds MaxEmbeddedBytes and
	// the context has no Store.
	MatTooLarge = "too-large"
)

// MaterializationError is why §22 step 13 refused the evaluator's
// context (not the bundle: a bundle the runtime cannot materialize gets
// an unsupported-surface issue instead). Verify returns it as its
// error; nothing stays written.
type MaterializationError struct {
	// Code is one of the Mat* codes.
	Code string
	// Path is the JSON pointer of the offending value in the context
	// document (or the bundle, prefixed "bundle:"), if any.
	Path string
	// Detail says what is wrong.
	Detail string
}

// Error says the code, the path and the detail.
func (e *MaterializationError) Error() string {
	if e.Path == "" {
		return fmt.Sprintf("verify: materialization refused: %s: %s", e.Code, e.Detail)
	}
	return fmt.Sprintf("verify: materialization refused: %s at %s: %s", e.Code, e.Path, e.Detail)
}

// Unwrap returns ErrMaterialization.
func (e *MaterializationError) Unwrap() error { return ErrMaterialization }

func matErr(code, path, format string, args ...any) error {
	return &MaterializationError{Code: code, Path: path, Detail: fmt.Sprintf(format, args...)}
}

// materialize performs §22 step 13 for a verified bundle: it checks the
// context, refuses unsupported surfaces as issues, builds the plan and
// the receipt and checks the receipt's schema before anything is
// written, then writes and re-scans the three roots, and finally attaches
// the self-digested receipt to the record.
func (v *verifier) materialize(ctx context.Context, b *candidate.Bundle) error {
	m := v.opts.Materialize
	// A pinned container resolved by step 11 is the selection; one the
	// context also names must be the same.
	if c := v.rec.Container; c != nil && c.ManifestDigest != "" && c.Platform != nil {
		resolved := &ContainerSelection{ManifestDigest: c.ManifestDigest, Platform: *c.Platform}
		if m.Container != nil && !same(m.Container, resolved) {
			return matErr(MatContextInvalid, "/container", "the context selects manifest %s, step 11 resolved %s from the index", m.Container.ManifestDigest, c.ManifestDigest)
		}
		withResolved := *m
		withResolved.Container = resolved
		m = &withResolved
	}
	if err := checkContext(m, b, v.rec.BundleDigest); err != nil {
		return err
	}
	if v.unsupported(b) {
		return nil
	}
	w, err := v.workspaces(ctx, b, m)
	if err != nil {
		return err
	}
	pp, err := v.profilePlan(ctx, b, m, w)
	if err != nil || pp == nil {
		return err
	}
	receipt, err := v.receipt(capturer{ctx, m.Store}, b, m, pp)
	if err != nil {
		return err
	}
	if err := w.write(); err != nil {
		return err
	}
	v.rec.MaterializationReceipt = receipt
	v.rec.NotPerformed = slices.DeleteFunc(slices.Clone(v.rec.NotPerformed), func(s string) bool { return s == NotPerformedMaterialization })
	return nil
}

// checkContext validates the context and its bindings to the bundle.
func checkContext(m *MaterializationContext, b *candidate.Bundle, bundleDigest string) error {
	if m.Task == nil || m.Suite == nil {
		return matErr(MatContextInvalid, "", "the context needs a task and a suite")
	}
	if _, err := contract.Validate(MaterializationContextKind, MaterializationContextSchema, m); err != nil {
		return matErr(MatContextInvalid, "", "%v", err)
	}
	for _, d := range []struct {
		path    string
		doc     any
		carried string
	}{{"/task", m.Task, m.Task.Digest}, {"/suite", m.Suite, m.Suite.Digest}, {"/runCell", &m.RunCell, m.RunCell.Digest}} {
		got, err := candidate.SelfDigest(d.doc)
		if err != nil {
			return matErr(MatContextInvalid, d.path, "%v", err)
		}
		if got != d.carried {
			return matErr(MatContextInvalid, d.path+"/digest", "carried %s, computed %s", d.carried, got)
		}
	}
	cell, suite, task := &m.RunCell, m.Suite, m.Task
	switch {
	case cell.BundleDigest != bundleDigest:
		return matErr(MatBindingMismatch, "/runCell/bundleDigest", "the run cell binds bundle %s, not the verified %s", cell.BundleDigest, bundleDigest)
	case cell.SuiteDigest != suite.Digest:
		return matErr(MatBindingMismatch, "/runCell/suiteDigest", "the run cell binds suite %s, not %s", cell.SuiteDigest, suite.Digest)
	case cell.TaskDigest != task.Digest:
		return matErr(MatBindingMismatch, "/runCell/taskDigest", "the run cell binds task %s, not %s", cell.TaskDigest, task.Digest)
	case cell.TaskIndex >= int64(len(suite.TaskDigests)) || suite.TaskDigests[cell.TaskIndex] != task.Digest:
		return matErr(MatBindingMismatch, "/runCell/taskIndex", "the suite does not list task %s at index %d", task.Digest, cell.TaskIndex)
	case cell.Repetition >= suite.Reps:
		return matErr(MatBindingMismatch, "/runCell/repetition", "repetition %d of a suite with %d", cell.Repetition, suite.Reps)
	case suite.Seeds[cell.TaskIndex*suite.Reps+cell.Repetition] != cell.Seed:
		return matErr(MatBindingMismatch, "/runCell/seed", "the suite's seed for this cell is %d, not %d", suite.Seeds[cell.TaskIndex*suite.Reps+cell.Repetition], cell.Seed)
	case cell.Attempt > task.Attempt.MaxAttempts:
		return matErr(MatBindingMismatch, "/runCell/attempt", "attempt %d of at most %d", cell.Attempt, task.Attempt.MaxAttempts)
	}
	active := b.Code.Kind != candidate.CodeDisabled
	if active != (m.CandidateRoot != nil) {
		return matErr(MatRoots, "/candidateRoot", "a candidate root is required iff the code is active (code %s)", b.Code.Kind)
	}
	return checkTaskFit(m, b)
}

// checkTaskFit checks what the task imposes on the candidate: §21.3's
// model rule, an instruction argv can carry, the container and the model
// network (§13.3).
func checkTaskFit(m *MaterializationContext, b *candidate.Bundle) error {
	task := m.Task
	if mh := b.Profile.Model; mh != nil {
		switch {
		case mh.Default != nil && *mh.Default != task.Model.Requested:
			return matErr(MatTaskMismatch, "bundle:/profile/model/default", "the candidate asks for %q, the task resolves %q", *mh.Default, task.Model.Requested)
		case mh.Provider != nil && *mh.Provider != task.Model.Provider:
			return matErr(MatTaskMismatch, "bundle:/profile/model/provider", "the candidate asks for provider %q, the task's is %q", *mh.Provider, task.Model.Provider)
		case mh.ReasoningEffort != "" && mh.ReasoningEffort != task.Model.ReasoningEffort:
			return matErr(MatTaskMismatch, "bundle:/profile/model/reasoningEffort", "the candidate asks for effort %q, the task's is %q", mh.ReasoningEffort, task.Model.ReasoningEffort)
		}
	}
	if b.Execution.InstructionDelivery.Kind == "argv-append" && strings.ContainsRune(task.Instruction, 0) {
		return matErr(MatTaskMismatch, "/task/instruction", "argv-append cannot carry U+0000; the task is refused rather than altered (§13.3)")
	}
	if (task.Limits.MaxModelCalls == 0) != (m.Model.Network.Mode == "disabled") {
		return matErr(MatTaskMismatch, "/model/network/mode", "a task allowing %d model calls cannot run with model network %q", task.Limits.MaxModelCalls, m.Model.Network.Mode)
	}
	switch env := b.Execution.Environment; env.Kind {
	case "pinned-container":
		if m.Container == nil {
			return matErr(MatContextInvalid, "/container", "a pinned container needs the manifest and platform selected from its index")
		}
	case "evaluator-task-container":
		tc := task.EvaluatorTaskContainer
		if tc == nil {
			return matErr(MatTaskMismatch, "/task/evaluatorTaskContainer", "the candidate leaves the container to the task, which selects none")
		}
		if m.Container != nil && !same(m.Container, &ContainerSelection{ManifestDigest: tc.ManifestDigest, Platform: tc.Platform}) {
			return matErr(MatTaskMismatch, "/container", "the selection is not the task's evaluator task container")
		}
	}
	return nil
}

// unsupported reports, as unsupported-surface issues, every surface of
// a verified bundle this materializer cannot reproduce exactly; true
// when there is one.
func (v *verifier) unsupported(b *candidate.Bundle) bool {
	n := len(v.rec.Issues)
	refuse := func(path, why string) { v.issue(CodeUnsupportedSurface, path, "%s", why) }
	if b.Knowledge != nil {
		refuse("/knowledge", "knowledge is promoted through its own path; the runtime does not execute a bundle that carries it (§8)")
	}
	if b.Memory.Seed != nil {
		refuse("/memory/seed", "seeding task-scoped memory is not implemented; the before-state would not be empty")
	}
	if w := b.Execution.Workspace; w != nil {
		if data, ok := v.store.cache[Key{w.Archive.SHA256, w.Archive.ByteLength}]; !ok || !isReference(data) {
			refuse("/execution/workspace/archive", "only archives in the reference layout (§21.4) can be unpacked")
		}
	}
	p := &b.Profile
	profileRefusals(p, refuse)
	return len(v.rec.Issues) > n
}

// profileRefusals names every profile member that needs harness-specific
// lowering (a flag, a native config file, a prompt channel) this generic
// materializer does not have. Descriptive members (name, description,
// version, tags), the harness, the model route and the evaluator's own
// model settings, and resources.files are materialized.
func profileRefusals(p *candidate.Profile, refuse func(path, why string)) {
	const lowering = "needs harness-specific lowering this materializer does not implement; refused rather than dropped (§13.1)"
	if p.Prompt != nil {
		refuse("/profile/prompt", "prompt "+lowering)
	}
	if mh := p.Model; mh != nil {
		for _, c := range []struct {
			name string
			set  bool
		}{{"maxVisibleOutputTokens", mh.MaxVisibleOutputTokens != nil}, {"maxReasoningTokens", mh.MaxReasoningTokens != nil}, {"maxTotalOutputTokens", mh.MaxTotalOutputTokens != nil}} {
			if c.set {
				refuse("/profile/model/"+c.name, "the token ceiling cannot be enforced by this materializer")
			}
		}
	}
	for _, g := range []struct {
		name string
		n    int
	}{{"permissions", len(p.Permissions)}, {"tools", len(p.Tools)}, {"mcp", len(p.MCP)}, {"subagents", len(p.Subagents)}, {"hooks", len(p.Hooks)}, {"modes", len(p.Modes)}} {
		if g.n > 0 {
			refuse("/profile/"+g.name, g.name+" "+lowering)
		}
	}
	if p.Confidential != nil {
		refuse("/profile/confidential", "confidential execution is not supported")
	}
	if r := p.Resources; r != nil {
		for _, g := range []struct {
			name string
			n    int
		}{{"tools", len(r.Tools)}, {"skills", len(r.Skills)}, {"agents", len(r.Agents)}, {"commands", len(r.Commands)}} {
			if g.n > 0 {
				refuse("/profile/resources/"+g.name, "resources."+g.name+" "+lowering)
			}
		}
		if r.Instructions != nil {
			refuse("/profile/resources/instructions", "resources.instructions "+lowering)
		}
	}
}
