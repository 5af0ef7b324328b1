package verify

import (
	"context"
	"encoding/base64"
	"errors"
	"io/fs"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/agentrt/agentrt/candidate"
	"github.com/agentrt/agentrt/candidate/gitsafe"
	"github.com/agentrt/agentrt/candidate/wsarchive"
	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/profile"
)

func base64Std(data []byte) string { return base64.StdEncoding.EncodeToString(data) }

// tree is one directory to write: its root, the files decoded from the
// verified archive, the manifest they must re-scan to, and whether a root
// .git or .sidecar is tolerated (task workspaces only, §3.5).
type tree struct {
	root     string
	files    []wsarchive.File
	material *candidate.WorkspaceManifestMaterial
	task     bool
}

// trees are the three roots of step 13, in writing order.
type trees struct {
	task, candidate, profile *tree
}

// profilePlanned is the profile plan, its activation files and the
// workspace the executor applies them to.
type profilePlanned struct {
	material candidate.ProfilePlanMaterial
	files    []candidate.ActivationFile
	target   string
}

// workspaces checks the roots and decodes the task and candidate
// workspaces from verified bytes: the candidate's from the store cache
// (steps 6–7), the task's through the same store and port, checked here
// as step 7 checks a bundle's.
func (v *verifier) workspaces(ctx context.Context, b *candidate.Bundle, m *MaterializationContext) (*trees, error) {
	utf8File := b.Execution.InstructionDelivery.Kind == "utf8-file"
	roots := [][2]string{{"/taskRoot", m.TaskRoot}, {"/profileRoot", m.ProfileRoot}}
	if m.CandidateRoot != nil {
		roots = append(roots, [2]string{"/candidateRoot", *m.CandidateRoot})
	}
	for i, r := range roots {
		if !isCanonicalRoot(r[1]) {
			return nil, matErr(MatRoots, r[0], "%q is not a canonical absolute path", r[1])
		}
		if utf8File && overlaps(r[1], candidate.TaskPath) {
			return nil, matErr(MatRoots, r[0], "%q overlaps the task file %s", r[1], candidate.TaskPath)
		}
		for _, o := range roots[:i] {
			if overlaps(r[1], o[1]) {
				return nil, matErr(MatRoots, r[0], "%q overlaps %s %q: the roots must be disjoint", r[1], o[0][1:], o[1])
			}
		}
	}
	t := &trees{}
	task := &m.Task.Workspace
	files, err := v.taskWorkspace(ctx, task)
	if err != nil {
		return nil, err
	}
	t.task = &tree{root: m.TaskRoot, files: files, material: &task.Material, task: true}
	if w := b.Execution.Workspace; w != nil && m.CandidateRoot != nil {
		a, err := wsarchive.Decode(v.store.cache[Key{w.Archive.SHA256, w.Archive.ByteLength}], wsarchive.DefaultLimits())
		if err != nil {
			return nil, err // step 7 decoded the same bytes
		}
		t.candidate = &tree{root: *m.CandidateRoot, files: a.Files, material: &w.Material}
	}
	return t, nil
}

// taskWorkspace verifies a task workspace's manifest and archive through
// the store (§3.4), the manifest rule (§3.5) and the reference layout
// (§21.4), and returns its files.
func (v *verifier) taskWorkspace(ctx context.Context, w *candidate.WorkspaceSnapshotEvidence) ([]wsarchive.File, error) {
	const path = "/task/workspace"
	var data [2][]byte
	for i, a := range []artifact{captured(path+"/manifest", &w.Manifest), captured(path+"/archive", &w.Archive)} {
		got, is, err := v.store.verify(ctx, a)
		if err != nil {
			return nil, err
		}
		if is != nil {
			return nil, matErr(MatTaskMismatch, is.Path, "%s: %s", is.Code, is.Message)
		}
		data[i] = got
	}
	if is := manifestIssue(path, w, data[0]); is != nil {
		return nil, matErr(MatTaskMismatch, is.Path, "%s: %s", is.Code, is.Message)
	}
	if !isReference(data[1]) {
		return nil, matErr(MatTaskMismatch, path+"/archive", "only archives in the reference layout (§21.4) can be unpacked")
	}
	if _, is := archiveContent(path, w, data[1], taskWorkspace); is != nil {
		return nil, matErr(MatTaskMismatch, is.Path, "%s: %s", is.Code, is.Message)
	}
	a, err := wsarchive.Decode(data[1], wsarchive.DefaultLimits())
	if err != nil {
		return nil, err
	}
	return a.Files, nil
}

func isReference(data []byte) bool { return wsarchive.IsReferenceLayout(data) }

// isCanonicalRoot is the plan's canonical absolute path: "/" and a safe
// relative path (no empty, "." or ".." segment, no control character).
func isCanonicalRoot(p string) bool {
	return strings.HasPrefix(p, "/") && p != "/" && !strings.Contains(p, "//") && profile.IsSafeRelativePath(p[1:], false)
}

// overlaps: equal or one nested in the other.
func overlaps(a, b string) bool {
	return a == b || strings.HasPrefix(a, b+"/") || strings.HasPrefix(b, a+"/")
}

// profilePlan is the harness materializer of §13.1 for the surfaces that
// are plain files: resources.files, inline or github (bytes re-read from
// the repository admitted in step 8 and checked again by length and
// sha256), at mode 0755 when executable, else 0644. It returns nil when
// it refused a surface as an issue.
func (v *verifier) profilePlan(ctx context.Context, b *candidate.Bundle, m *MaterializationContext, t *trees) (*profilePlanned, error) {
	pd, err := candidate.ProfileDigest(&b.Profile)
	if err != nil {
		return nil, err
	}
	pp := &profilePlanned{target: b.Execution.Cwd.Workspace, files: []candidate.ActivationFile{}}
	pp.material = candidate.ProfilePlanMaterial{
		SourceProfileDigest: pd, Harness: b.Execution.Harness, Files: []candidate.ProfilePlanFile{},
		Env: map[string]candidate.ConfigValue{}, Flags: []candidate.ConfigValue{}, Unsupported: []candidate.Unsupported{},
	}
	refused := false
	if r := b.Profile.Resources; r != nil {
		for i := range r.Files {
			f := &r.Files[i]
			path := "/profile/resources/files/" + strconv.Itoa(i)
			data, err := v.resourceBytes(ctx, &f.Resource)
			if err != nil {
				return nil, err
			}
			if data == nil || !utf8.Valid(data) {
				v.issue(CodeUnsupportedSurface, path+"/resource", "the resource bytes are not UTF-8 text, which an activation file must be")
				refused = true
				continue
			}
			mode := int64(0o644)
			if f.Executable != nil && *f.Executable {
				mode = 0o755
			}
			pp.files = append(pp.files, candidate.ActivationFile{Path: f.Path, Mode: mode, Content: string(data)})
		}
	}
	slices.SortFunc(pp.files, func(a, b candidate.ActivationFile) int { return canonjson.CompareUTF16(a.Path, b.Path) })
	targetFiles := t.task.material.Files
	if pp.target == "candidate" && t.candidate != nil {
		targetFiles = t.candidate.material.Files
	}
	for i, f := range pp.files {
		if i > 0 && overlaps(pp.files[i-1].Path, f.Path) {
			v.issue(CodeUnsupportedSurface, "/profile/resources/files", "mount %q overlaps mount %q", f.Path, pp.files[i-1].Path)
			refused = true
		}
		for _, w := range targetFiles {
			if overlaps(f.Path, w.Path) {
				if pp.target == "task" {
					return nil, matErr(MatTaskMismatch, "bundle:/profile/resources/files", "mount %q overlaps task workspace file %q", f.Path, w.Path)
				}
				v.issue(CodeUnsupportedSurface, "/profile/resources/files", "mount %q overlaps candidate workspace file %q", f.Path, w.Path)
				refused = true
			}
		}
		pp.material.Files = append(pp.material.Files, candidate.ProfilePlanFile{RelPath: f.Path, Mode: f.Mode, ContentSHA256: candidate.SHA256Text(f.Content)})
	}
	if refused {
		return nil, nil
	}
	files := make([]wsarchive.File, len(pp.files))
	for i, f := range pp.files {
		files[i] = wsarchive.File{Path: f.Path, Mode: fs.FileMode(f.Mode), Data: []byte(f.Content)}
	}
	mat := wsarchive.Manifest(files)
	t.profile = &tree{root: m.ProfileRoot, files: files, material: &mat}
	return pp, nil
}

// resourceBytes returns a resource's verified bytes (step 8 recorded
// them as verified; github blobs are read again from the admitted
// repository and checked again).
func (v *verifier) resourceBytes(ctx context.Context, r *candidate.ResourceRef) ([]byte, error) {
	var data []byte
	switch r.Kind {
	case "inline":
		data = []byte(deref(r.Content))
	case "github":
		repo := v.repos[r.Repository.Owner+"/"+r.Repository.Repo]
		if repo == nil {
			return nil, errors.New("verify: a github resource's repository was not admitted")
		}
		var err error
		if data, err = repo.Blob(ctx, deref(r.Commit), deref(r.Path), r.ByteLength); err != nil {
			var re *gitsafe.RefusedError
			if errors.As(err, &re) {
				return nil, matErr(MatRescan, "bundle:"+deref(r.Path), "the blob verified in step 8 is now refused: %s", re.Detail)
			}
			return nil, err
		}
	}
	if int64(len(data)) != r.ByteLength || canonjson.DigestBytes(data) != r.SHA256 {
		return nil, matErr(MatRescan, "bundle:"+r.SHA256, "the resource bytes no longer match the bytes verified in step 8")
	}
	return data, nil
}

// seal makes an evidence record of material: its canonical bytes
// embedded, their sha256 the digest.
func seal[M any](cp capturer, kind, path string, material M) (candidate.Evidence[M], error) {
	data, err := candidate.MaterialBytes(material)
	if err != nil {
		return candidate.Evidence[M]{}, err
	}
	a, err := cp.capture(path, data)
	if err != nil {
		return candidate.Evidence[M]{}, err
	}
	return candidate.Evidence[M]{Kind: kind, Digest: a.SHA256, Material: material, Artifact: a}, nil
}

// receipt builds the plan chain and the receipt of §§13–14 and checks
// it with candidate.MaterializationReceiptSchema.
func (v *verifier) receipt(cp capturer, b *candidate.Bundle, m *MaterializationContext, pp *profilePlanned) (*candidate.MaterializationReceipt, error) {
	task := m.Task
	planEv, err := seal(cp, candidate.KindProfilePlanEvidenceValue, "/profileActivation/profilePlan", pp.material)
	if err != nil {
		return nil, err
	}
	act := candidate.ProfileActivation{Kind: candidate.KindProfileActivationValue, ProfilePlan: planEv, Files: pp.files}
	if act.Digest, err = candidate.SelfDigest(&act); err != nil {
		return nil, err
	}
	mem, err := effectiveMemory(cp, b, m)
	if err != nil {
		return nil, err
	}
	launch, err := planLaunch(b, m, &pp.material)
	if err != nil {
		return nil, err
	}
	mounts := make([]string, len(pp.material.Files))
	for i, f := range pp.material.Files {
		mounts[i] = f.RelPath
	}
	pm := candidate.ExecutionPlanMaterial{
		Kind:                candidate.KindExecutionPlanMaterialValue,
		RunCell:             m.RunCell,
		ExecutionID:         m.ExecutionID,
		Workspaces:          candidate.PlanWorkspaces{TaskRoot: m.TaskRoot, CandidateRoot: m.CandidateRoot},
		CodeKind:            b.Code.Kind,
		CandidateWorkspace:  b.Execution.Workspace,
		Profile:             candidate.PlanProfile{PlanDigest: planEv.Digest, TargetWorkspace: pp.target, MountPaths: mounts},
		Harness:             b.Execution.Harness,
		HarnessVersion:      b.Execution.HarnessVersion,
		InstructionDelivery: b.Execution.InstructionDelivery,
		Limits:              task.Limits,
		Container:           selectedContainer(b, m),
		Model: candidate.PlanModel{Policy: "single", Resolved: task.Model, Routes: routes(&b.Profile, task.Model.Requested),
			Access: candidate.ModelAccess{Kind: "evaluator-mediated", GrantDigest: m.Model.GrantDigest, Network: m.Model.Network}},
		Launch:  launch,
		Memory:  mem,
		Network: candidate.NetworkMode{Mode: "disabled"},
	}
	if b.Code.Kind == candidate.CodeDisabled {
		pm.CandidateWorkspace = nil
	}
	execEv, err := seal(cp, candidate.KindExecutionPlanEvidenceValue, "/executionPlan", pm)
	if err != nil {
		return nil, err
	}
	suiteIn, err := benchmarkInput(cp, "/benchmark/suite", m.Suite, m.Suite.Digest)
	if err != nil {
		return nil, err
	}
	taskIn, err := benchmarkInput(cp, "/benchmark/task", task, task.Digest)
	if err != nil {
		return nil, err
	}
	r := &candidate.MaterializationReceipt{
		Kind: candidate.KindMaterializationReceiptValue, DigestAlgorithm: candidate.DigestAlgorithm,
		BundleDigest:       v.rec.BundleDigest,
		Benchmark:          candidate.BenchmarkInputEvidence{Suite: suiteIn, Task: taskIn},
		ProfileActivation:  act,
		ExecutionPlan:      execEv,
		CandidateWorkspace: pm.CandidateWorkspace,
		CodeKind:           b.Code.Kind,
		MaterializedTree:   v.rec.MaterializedTree,
		Harness:            b.Execution.Harness,
		HarnessVersion:     b.Execution.HarnessVersion,
		Container:          pm.Container,
		ResolvedModel:      task.Model,
	}
	if ep := v.rec.Entrypoint; ep != nil {
		r.Entrypoint = &candidate.EntrypointReceipt{Path: ep.Path, SHA256: ep.SHA256, ByteLength: ep.ByteLength}
	}
	if r.Digest, err = candidate.SelfDigest(r); err != nil {
		return nil, err
	}
	// The receipt's own cross-checks (§14) and every nested schema.
	if _, err := contract.Validate(candidate.KindMaterializationReceipt, candidate.MaterializationReceiptSchema, r); err != nil {
		return nil, matErr(MatContextInvalid, "", "the receipt built from this context does not validate: %v", err)
	}
	return r, nil
}

// benchmarkInput captures a self-digested document's canonical bytes
// without its digest (§14).
func benchmarkInput(cp capturer, path string, doc any, digest string) (candidate.BenchmarkMaterialEvidence, error) {
	data, err := candidate.SelfMaterialBytes(doc)
	if err != nil {
		return candidate.BenchmarkMaterialEvidence{}, err
	}
	// checkContext proved digest is the sha256 of these bytes.
	a, err := cp.capture(path+"/material", data)
	return candidate.BenchmarkMaterialEvidence{Digest: digest, Material: a}, err
}

// selectedContainer is §13.3's container: the task's evaluator task
// container, or the bundle's pinned image and index with the selected
// manifest and platform.
func selectedContainer(b *candidate.Bundle, m *MaterializationContext) candidate.SelectedContainer {
	env := b.Execution.Environment
	if env.Kind == "evaluator-task-container" {
		return *m.Task.EvaluatorTaskContainer
	}
	return candidate.SelectedContainer{Source: "pinned-container", Image: env.Container.Image, IndexDigest: env.Container.IndexDigest,
		ManifestDigest: m.Container.ManifestDigest, Platform: m.Container.Platform}
}

// routes are §21.3's: primary, small, modes then subagents with a model
// (name-sorted), each requesting the evaluator's model.
func routes(p *candidate.Profile, requested string) []candidate.Route {
	req := func() *string { s := requested; return &s }
	out := []candidate.Route{{Kind: "primary", Requested: req()}}
	if p.Model != nil && p.Model.Small != nil {
		out = append(out, candidate.Route{Kind: "small", Requested: req()})
	}
	for _, g := range []struct {
		kind   string
		models map[string]*string
	}{{"mode", modeModels(p)}, {"subagent", subagentModels(p)}} {
		names := make([]string, 0, len(g.models))
		for n, model := range g.models {
			if model != nil {
				names = append(names, n)
			}
		}
		slices.SortFunc(names, canonjson.CompareUTF16)
		for _, n := range names {
			out = append(out, candidate.Route{Kind: g.kind, Name: &n, Requested: req()})
		}
	}
	return out
}

func modeModels(p *candidate.Profile) map[string]*string {
	out := map[string]*string{}
	for n, m := range p.Modes {
		out[n] = m.Model
	}
	return out
}

func subagentModels(p *candidate.Profile) map[string]*string {
	out := map[string]*string{}
	for n, s := range p.Subagents {
		out[n] = s.Model
	}
	return out
}

// planLaunch is §21.1's argv and §21.2's env. The instruction of
// argv-append is not an element of args: it is bound through the run
// cell's task digest, and an executor appends it as the final argv
// element (a config value cannot carry the newlines an instruction may
// hold).
func planLaunch(b *candidate.Bundle, m *MaterializationContext, pm *candidate.ProfilePlanMaterial) (candidate.PlanLaunch, error) {
	l := b.Execution.Launch
	var exe string
	args := []candidate.ConfigValue{}
	switch l.Kind {
	case "container-command":
		exe = deref(l.Executable)
	case "candidate-entrypoint":
		e := *m.CandidateRoot + "/" + deref(l.Entrypoint)
		if l.Interpreter != nil {
			exe = *l.Interpreter
			args = append(args, candidate.ConfigValue{Kind: "public", Value: e})
		} else {
			exe = e
		}
	}
	args = append(args, l.Args...)
	args = append(args, pm.Flags...)
	env := map[string]candidate.ConfigValue{}
	add := func(path string, vars map[string]candidate.ConfigValue) error {
		for name, val := range vars {
			if old, ok := env[name]; ok && old != val {
				return matErr(MatContextInvalid, path, "%s is defined twice with different values", name)
			}
			env[name] = val
		}
		return nil
	}
	if err := add("bundle:/execution/env", b.Execution.Env); err != nil {
		return candidate.PlanLaunch{}, err
	}
	if err := add("profile plan env", pm.Env); err != nil {
		return candidate.PlanLaunch{}, err
	}
	if b.Execution.InstructionDelivery.Kind == "utf8-file" {
		if err := add("instruction delivery", map[string]candidate.ConfigValue{candidate.TaskPathEnv: {Kind: "public", Value: candidate.TaskPath}}); err != nil {
			return candidate.PlanLaunch{}, err
		}
	}
	return candidate.PlanLaunch{Executable: exe, Args: args, Env: env, Cwd: b.Execution.Cwd}, nil
}

// effectiveMemory is disabled, or task-scoped with §21.5's namespace, a
// fresh-reset evidence document and an empty before-state (an empty
// manifest and an empty reference archive).
func effectiveMemory(cp capturer, b *candidate.Bundle, m *MaterializationContext) (candidate.EffectiveMemory, error) {
	if b.Memory.Mode != "isolated" {
		return candidate.EffectiveMemory{Mode: "disabled"}, nil
	}
	if m.PreparationID == nil {
		return candidate.EffectiveMemory{}, matErr(MatContextInvalid, "/preparationId", "task-scoped memory needs the preparation id for its namespace")
	}
	hexOf := func(name, value string) (string, error) {
		d, err := candidate.DigestOf(map[string]string{name: value})
		return strings.TrimPrefix(d, "sha256:"), err
	}
	exec, err := hexOf("executionId", m.ExecutionID)
	if err != nil {
		return candidate.EffectiveMemory{}, err
	}
	// [INFERRED] §21.5 names a taskId; the task's scenario id is its id.
	taskID, err := hexOf("taskId", m.Task.Scenario.ID)
	if err != nil {
		return candidate.EffectiveMemory{}, err
	}
	prep, err := hexOf("preparationId", *m.PreparationID)
	if err != nil {
		return candidate.EffectiveMemory{}, err
	}
	ns := "candidate/" + strings.TrimPrefix(b.Digest, "sha256:")[:16] + "/" + exec + "/" + taskID + "/" + prep[:16]
	empty := wsarchive.Manifest(nil)
	manifest, err := candidate.MaterialBytes(&empty)
	if err != nil {
		return candidate.EffectiveMemory{}, err
	}
	archive, err := wsarchive.Encode(nil, nil)
	if err != nil {
		return candidate.EffectiveMemory{}, err
	}
	before := &candidate.WorkspaceSnapshotEvidence{Kind: candidate.KindWorkspaceSnapshotValue, Digest: canonjson.DigestBytes(manifest), Material: empty}
	if before.Manifest, err = cp.capture("/memory/beforeState/manifest", manifest); err != nil {
		return candidate.EffectiveMemory{}, err
	}
	if before.Archive, err = cp.capture("/memory/beforeState/archive", archive); err != nil {
		return candidate.EffectiveMemory{}, err
	}
	reset, err := candidate.MaterialBytes(map[string]string{"kind": MemoryResetKind, "effectiveNamespace": ns, "emptyStateDigest": before.Digest})
	if err != nil {
		return candidate.EffectiveMemory{}, err
	}
	ev, err := cp.capture("/memory/reset/evidence", reset)
	if err != nil {
		return candidate.EffectiveMemory{}, err
	}
	scope := "task"
	return candidate.EffectiveMemory{Mode: "isolated", Scope: &scope, EffectiveNamespace: &ns,
		Reset: &candidate.MemoryReset{Kind: "fresh", Evidence: ev, EmptyStateDigest: before.Digest}, BeforeState: before}, nil
}

// MemoryResetKind is the kind of the fresh-reset evidence document a
// task-scoped memory plan embeds (project-defined): the canonical JSON
// of {kind, effectiveNamespace, emptyStateDigest}, the namespace that
// must be empty before launch and the digest of its empty state.
const MemoryResetKind = "agentrt-candidate-memory-reset"
