package verify

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/agentrt/agentrt/candidate"
	"github.com/agentrt/agentrt/candidate/gitsafe"
	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/schema"
)

// DefaultMaxBytes is the bundle size cap when Options.MaxBytes is 0.
const DefaultMaxBytes = 64 << 20

// Options configure Verify.
type Options struct {
	// Dialect is the envelope dialect; "" means candidate.DialectAuto.
	Dialect candidate.Dialect
	// MaxBytes caps the bundle size; 0 means DefaultMaxBytes.
	MaxBytes int
	// Artifacts reads artifact refs; nil makes every ref unavailable.
	Artifacts ArtifactPort
	// Repositories maps "owner/repo" to a local repository path (object
	// stores already present; nothing is fetched). A repository the
	// bundle needs and the map lacks is an operational error.
	Repositories map[string]string
	// Git configures gitsafe.
	Git gitsafe.Options
	// Support is the step 5 executor policy; nil skips step 5.
	Support *SupportPolicy
	// OCI reads pinned containers' indexes and manifests for step 11; nil
	// skips step 11.
	OCI OCIStore
	// Platform is the platform step 11 selects; the zero value means
	// linux/amd64.
	Platform candidate.Platform
	// Materialize, when set, performs §22 step 13 for a bundle that
	// verifies: it writes the candidate workspace, the profile staging
	// directory and the task workspace from the verified bytes into the
	// context's fresh roots, re-scans them, and attaches the
	// self-digested AgentCandidateMaterializationReceipt to the record
	// (nothing is executed). A surface the materializer cannot reproduce
	// is an unsupported-surface issue; a context it refuses is a
	// *MaterializationError.
	Materialize *MaterializationContext
	// Progress, when set, is called as each step of §22 begins, with the
	// step's number and a short name ("artifacts"), so a caller can show
	// how far the verification of a large bundle has got. It is called
	// from Verify's goroutine and should return quickly.
	Progress func(step int, name string)
}

// ErrRepositoryNotMapped is wrapped by Verify's error when the bundle
// names a repository Options.Repositories does not map.
var ErrRepositoryNotMapped = errors.New("verify: repository not mapped to a local path")

// Verify runs the integrity verifier of spec candidate §22 over a bundle's
// bytes: steps 1–4, 6–10 and 12, step 5 with Options.Support, step 11
// with Options.OCI and step 13 with Options.Materialize (the record lists
// in NotPerformed what it skipped), and reports the bundle's
// secret-looking strings. A rejection is a Record with
// verdict "rejected" and its issues; the error is only for operational
// failures (I/O, git missing, a repository not mapped, a resolver
// unreachable), when no record is returned.
func Verify(ctx context.Context, data []byte, opts Options) (*Record, error) {
	v := &verifier{opts: opts, store: newStore(opts.Artifacts), repos: map[string]*gitsafe.Repo{}}
	v.rec = &Record{
		Kind: RecordKind, DigestAlgorithm: DigestAlgorithm, Dialect: opts.Dialect,
		Artifacts: []ArtifactRecord{}, Resources: []ResourceRecord{}, Workspaces: []WorkspaceRecord{},
		Secrets: []candidate.SecretFinding{}, NotPerformed: []string{}, Issues: []Issue{},
	}
	if opts.Support == nil {
		v.rec.NotPerformed = append(v.rec.NotPerformed, NotPerformedSupport)
	}
	if opts.OCI == nil {
		v.rec.NotPerformed = append(v.rec.NotPerformed, NotPerformedContainer)
	}
	v.rec.NotPerformed = append(v.rec.NotPerformed, NotPerformedMaterialization)
	if v.rec.Dialect == "" {
		v.rec.Dialect = candidate.DialectAuto
	}
	if err := v.run(ctx, data); err != nil {
		return nil, err
	}
	return v.finish()
}

type verifier struct {
	opts  Options
	rec   *Record
	store *store
	repos map[string]*gitsafe.Repo
}

func (v *verifier) issue(code, path, format string, args ...any) {
	v.rec.Issues = append(v.rec.Issues, Issue{Code: code, Path: path, Message: fmt.Sprintf(format, args...)})
}

func (v *verifier) finish() (*Record, error) {
	v.rec.Verdict = Verified
	if len(v.rec.Issues) > 0 {
		v.rec.Verdict = Rejected
	}
	d, err := candidate.SelfDigest(v.rec)
	if err != nil {
		return nil, fmt.Errorf("verify: digesting the record: %w", err)
	}
	v.rec.Digest = d
	return v.rec, nil
}

// step reports that step n of §22 begins.
func (v *verifier) step(n int, name string) {
	if v.opts.Progress != nil {
		v.opts.Progress(n, name)
	}
}

func (v *verifier) run(ctx context.Context, data []byte) error {
	// Step 1: read and decode strictly.
	v.step(1, "read and decode")
	if msg := readIssue(data, v.opts.MaxBytes, "bundle"); msg != "" {
		v.issue(CodeParseError, "", "%s", msg)
		return nil
	}
	val, err := schema.Decode(candidate.KindBundle, data)
	if err != nil {
		return schemaIssues(v.issue, CodeParseError, err)
	}
	if val.Kind() != canonjson.Object {
		v.issue(CodeParseError, "", "the top level is not an object")
		return nil
	}
	// Step 2: dialect.
	v.step(2, "dialect")
	dialect := v.rec.Dialect.Resolve(val)
	v.rec.Dialect = dialect
	if c, ok := val.Get("digest"); ok && c.Kind() == canonjson.String {
		v.rec.CarriedDigest = c.Str()
	}
	// Secrets are reported over whatever decoded (§20.1), never judged.
	if found := candidate.ScanSecrets(val); found != nil {
		v.rec.Secrets = found
	}
	// Step 3: schema, every issue.
	v.step(3, "schema")
	b, err := contract.FromValue[candidate.Bundle](candidate.KindBundle, candidate.BundleSchemaFor(dialect), val)
	if err != nil {
		if d, derr := candidate.SelfDigestValue(val); derr == nil {
			v.rec.BundleDigest = d
		}
		return schemaIssues(v.issue, CodeSchemaInvalid, err)
	}
	// Step 4: digest.
	v.step(4, "digest")
	computed, err := candidate.Digest(b)
	if err != nil {
		return fmt.Errorf("verify: %w", err)
	}
	v.rec.BundleDigest = computed
	v.rec.CodeKind = b.Code.Kind
	if computed != b.Digest {
		v.issue(CodeDigestMismatch, "/digest", "carried %s, computed %s", b.Digest, computed)
	}
	// Step 5: support policy; integrity verification goes on.
	if p := v.opts.Support; p != nil {
		v.step(5, "support policy")
		v.rec.SupportPolicy = p.Name
		v.support(b, p)
	}
	// Step 6: artifacts, in §22 order.
	v.step(6, "artifacts")
	if err := v.artifacts(ctx, b); err != nil {
		return err
	}
	// Step 7: workspace snapshots.
	v.step(7, "workspace snapshots")
	v.workspace("/execution/workspace", b.Execution.Workspace)
	if b.Knowledge != nil {
		v.workspace("/knowledge/snapshot", &b.Knowledge.Snapshot)
	}
	// Step 8: resources.
	v.step(8, "resources")
	if err := v.resources(ctx, b.Profile.Resources); err != nil {
		return err
	}
	// Step 9: code.
	v.step(9, "code")
	if err := v.code(ctx, &b.Code); err != nil {
		return err
	}
	// Step 10: entrypoint evidence.
	v.step(10, "entrypoint evidence")
	v.entrypoint(b)
	// Step 11: container.
	if v.opts.OCI != nil {
		v.step(11, "container")
		if err := v.container(ctx, b); err != nil {
			return err
		}
	}
	// Step 13: materialization, for a bundle that verified.
	if v.opts.Materialize != nil && len(v.rec.Issues) == 0 {
		v.step(13, "materialization")
		return v.materialize(ctx, b)
	}
	return nil
}

// schemaIssues turns a *schema.Error into issues with code, reported
// through issue; any other error is operational.
func schemaIssues(issue func(code, path, format string, args ...any), code string, err error) error {
	var se *schema.Error
	if !errors.As(err, &se) {
		return fmt.Errorf("verify: %w", err)
	}
	for _, is := range se.Issues {
		issue(code, is.Path, "%s (%s)", is.Message, is.Code)
	}
	return nil
}

func (v *verifier) artifacts(ctx context.Context, b *candidate.Bundle) error {
	var list []artifact
	if p := b.Code.Patch; p != nil {
		content := p.Artifact.Content
		list = append(list, artifact{path: "/code/patch/artifact", embedded: &content, key: Key{p.Artifact.SHA256, p.Artifact.ByteLength}})
	}
	if w := b.Execution.Workspace; w != nil {
		list = append(list, captured("/execution/workspace/manifest", &w.Manifest), captured("/execution/workspace/archive", &w.Archive))
	}
	if k := b.Knowledge; k != nil {
		list = append(list, captured("/knowledge/snapshot/manifest", &k.Snapshot.Manifest), captured("/knowledge/snapshot/archive", &k.Snapshot.Archive))
		if k.RetrievalConfig != nil {
			list = append(list, captured("/knowledge/retrievalConfig", k.RetrievalConfig))
		}
		list = append(list, captured("/knowledge/evaluation", &k.Evaluation))
	}
	if s := b.Memory.Seed; s != nil {
		list = append(list, referenced("/memory/seed", s))
	}
	for _, a := range list {
		if err := v.artifact(ctx, a); err != nil {
			return err
		}
	}
	return nil
}

// artifact verifies one artifact per §3.4 and records it.
func (v *verifier) artifact(ctx context.Context, a artifact) error {
	_, is, err := v.store.verify(ctx, a)
	switch {
	case err != nil:
		return err
	case is != nil:
		v.rec.Issues = append(v.rec.Issues, *is)
	default:
		v.rec.Artifacts = append(v.rec.Artifacts, ArtifactRecord{a.path, a.key.SHA256, a.key.ByteLength, a.source()})
	}
	return nil
}

// workspace checks step 7: the manifest bytes verified in step 6 are
// exactly JCS(material) and hash to the snapshot digest, and an archive
// in the reference layout reproduces the manifest (archiveContent).
func (v *verifier) workspace(path string, w *candidate.WorkspaceSnapshotEvidence) {
	if w == nil {
		return
	}
	data, ok := v.store.cache[Key{w.Manifest.SHA256, w.Manifest.ByteLength}]
	if !ok {
		return // step 6 already reported the manifest
	}
	if is := manifestIssue(path, w, data); is != nil {
		v.rec.Issues = append(v.rec.Issues, *is)
		return
	}
	archive, ok := v.store.cache[Key{w.Archive.SHA256, w.Archive.ByteLength}]
	if !ok {
		return // step 6 already reported the archive
	}
	state, is := archiveContent(path, w, archive, candidateWorkspace)
	if is != nil {
		v.rec.Issues = append(v.rec.Issues, *is)
		return
	}
	v.rec.Workspaces = append(v.rec.Workspaces, WorkspaceRecord{Path: path, Digest: w.Digest, Files: len(w.Material.Files), ArchiveContent: state})
}

// manifestIssue is the rule of a workspace snapshot's verified manifest
// bytes (§3.5): exactly JCS(material), hashing to the snapshot digest.
func manifestIssue(path string, w *candidate.WorkspaceSnapshotEvidence, data []byte) *Issue {
	want, err := candidate.MaterialBytes(&w.Material)
	switch {
	case err != nil:
		return &Issue{CodeWorkspaceManifestMismatch, path + "/material", err.Error()}
	case !bytes.Equal(data, want):
		return &Issue{CodeWorkspaceManifestMismatch, path + "/manifest", "the manifest bytes are not the canonical JSON of the material"}
	}
	if got := sha256Digest(data); got != w.Digest {
		return &Issue{CodeWorkspaceManifestMismatch, path + "/digest", fmt.Sprintf("the manifest hashes to %s, digest is %s", got, w.Digest)}
	}
	return nil
}

// resources checks step 8 in the order of §4.2.
func (v *verifier) resources(ctx context.Context, r *candidate.Resources) error {
	if r == nil {
		return nil
	}
	base := "/profile/resources"
	for i := range r.Files {
		if err := v.resource(ctx, fmt.Sprintf("%s/files/%d/resource", base, i), &r.Files[i].Resource); err != nil {
			return err
		}
	}
	for _, g := range []struct {
		name string
		refs []candidate.ResourceRef
	}{{"tools", r.Tools}, {"skills", r.Skills}, {"agents", r.Agents}, {"commands", r.Commands}} {
		for i := range g.refs {
			if err := v.resource(ctx, base+"/"+g.name+"/"+strconv.Itoa(i), &g.refs[i]); err != nil {
				return err
			}
		}
	}
	if r.Instructions != nil && r.Instructions.Ref != nil {
		return v.resource(ctx, base+"/instructions", r.Instructions.Ref)
	}
	return nil
}

func (v *verifier) resource(ctx context.Context, path string, r *candidate.ResourceRef) error {
	var data []byte
	switch r.Kind {
	case "inline":
		data = []byte(deref(r.Content))
	case "github":
		repo, err := v.repo(ctx, path+"/repository", r.Repository)
		if repo == nil || err != nil {
			return err
		}
		data, err = repo.Blob(ctx, deref(r.Commit), deref(r.Path), r.ByteLength)
		var re *gitsafe.RefusedError
		if errors.As(err, &re) {
			code := re.Code
			if code == gitsafe.CodeResourceTooLarge {
				code = CodeResourceHash // the length check of §22 step 8
			}
			v.issue(code, path, "%s", re.Detail)
			return nil
		}
		if err != nil {
			return fmt.Errorf("verify: %s: %w", path, err)
		}
	default:
		return fmt.Errorf("verify: %s: resource kind %q", path, r.Kind)
	}
	if int64(len(data)) != r.ByteLength {
		v.issue(CodeResourceHash, path, "%d bytes, declared %d", len(data), r.ByteLength)
		return nil
	}
	if got := sha256Digest(data); got != r.SHA256 {
		v.issue(CodeResourceHash, path, "bytes hash to %s, declared %s", got, r.SHA256)
		return nil
	}
	v.rec.Resources = append(v.rec.Resources, ResourceRecord{Path: path, Kind: r.Kind, SHA256: r.SHA256, ByteLength: r.ByteLength})
	return nil
}

// repo admits the repository once (§20.4). A refusal becomes a
// repository-mismatch issue and a nil Repo; a repository missing from
// the map is operational.
func (v *verifier) repo(ctx context.Context, path string, r *candidate.Repository) (*gitsafe.Repo, error) {
	name := r.Owner + "/" + r.Repo
	if repo, ok := v.repos[name]; ok {
		if repo == nil {
			v.issue(gitsafe.CodeRepositoryMismatch, path, "repository %s was refused", name)
		}
		return repo, nil
	}
	dir, ok := v.opts.Repositories[name]
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrRepositoryNotMapped, name)
	}
	repo, err := gitsafe.Open(ctx, dir, r.Owner, r.Repo, v.opts.Git)
	var re *gitsafe.RefusedError
	if errors.As(err, &re) {
		v.repos[name] = nil
		v.issue(re.Code, path, "%s", re.Detail)
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("verify: %w", err)
	}
	v.repos[name] = repo
	return repo, nil
}

// code checks step 9.
func (v *verifier) code(ctx context.Context, c *candidate.Code) error {
	if c.Kind == candidate.CodeDisabled || c.Repository == nil {
		return nil
	}
	baseCommit, baseTree := deref(c.BaseCommit), deref(c.BaseTree)
	v.rec.Repository = &RepositoryRecord{Owner: c.Repository.Owner, Repo: c.Repository.Repo, BaseCommit: baseCommit, BaseTree: baseTree, CandidateTree: c.CandidateTree}
	repo, err := v.repo(ctx, "/code/repository", c.Repository)
	if repo == nil || err != nil {
		return err
	}
	refused := func(err error) error {
		var re *gitsafe.RefusedError
		if errors.As(err, &re) {
			v.issue(re.Code, "/code", "%s", re.Detail)
			return nil
		}
		return fmt.Errorf("verify: %w", err)
	}
	if err := repo.CheckBase(ctx, baseCommit, baseTree); err != nil {
		return refused(err)
	}
	if c.Patch == nil {
		if err := repo.CheckTree(ctx, baseTree); err != nil {
			return refused(err)
		}
		v.rec.MaterializedTree = &baseTree
		return nil
	}
	patch, ok := v.store.cache[Key{c.Patch.Artifact.SHA256, c.Patch.Artifact.ByteLength}]
	if !ok {
		return nil // step 6 already rejected the patch bytes
	}
	tree, err := repo.ApplyPatch(ctx, baseTree, patch)
	if err != nil {
		return refused(err)
	}
	want := deref(c.CandidateTree)
	if tree != want {
		v.issue(CodeCandidateTreeMismatch, "/code/candidateTree", "the patch yields tree %s, not %s", tree, want)
		return nil
	}
	v.rec.MaterializedTree = &tree
	return nil
}

// entrypoint records step 10: the workspace manifest row of an active
// candidate's entrypoint.
func (v *verifier) entrypoint(b *candidate.Bundle) {
	ep := b.Execution.Launch.Entrypoint
	if b.Code.Kind == candidate.CodeDisabled || ep == nil || b.Execution.Workspace == nil {
		return
	}
	for _, f := range b.Execution.Workspace.Material.Files {
		if f.Path == *ep {
			v.rec.Entrypoint = &EntrypointRecord{Path: f.Path, SHA256: f.SHA256, ByteLength: f.ByteLength}
			return
		}
	}
}
