package verify

import "github.com/agentrt/agentrt/candidate"

// Record kinds, verdicts and archive states of a verification record
// (spec candidate §22 step 12).
const (
	RecordKind      = "agent-candidate-verification"
	DigestAlgorithm = "rfc8785-sha256"
	Verified        = "verified"
	Rejected        = "rejected"
	// ArchiveVerified says an archive in the reference layout (spec
	// candidate §21.4) decoded strictly, re-encoded to the same bytes and
	// reproduced the manifest's files, modes and bytes exactly.
	ArchiveVerified = "verified"
	// ArchiveUnverified says an archive's bytes matched its sha256 and
	// byteLength but are in another encoding than the reference layout,
	// so their content was not compared with the manifest.
	ArchiveUnverified = "unverified"
)

// Verdict codes of spec candidate §22 decided in this package; gitsafe's
// codes (repository-mismatch, base-commit-missing, …) pass through.
const (
	CodeParseError                = "parse-error"
	CodeSchemaInvalid             = "schema-invalid"
	CodeDigestMismatch            = "digest-mismatch"
	CodeResolverBlocked           = "resolver-blocked"
	CodeArtifactUnavailable       = "artifact-unavailable"
	CodeArtifactLength            = "artifact-length"
	CodeArtifactHash              = "artifact-hash"
	CodeWorkspaceManifestMismatch = "workspace-manifest-mismatch"
	CodeWorkspaceArchiveMismatch  = "workspace-archive-mismatch"
	CodeResourceHash              = "resource-hash"
	CodeCandidateTreeMismatch     = "candidate-tree-mismatch"
)

// The optional §22 steps a record lists in NotPerformed when the options
// did not ask for them, so no reader takes their absence for a pass.
const (
	NotPerformedSupport         = "step 5 support policy (no policy given: --execute-support)"
	NotPerformedContainer       = "step 11 container (no OCI store given: --oci-layout)"
	NotPerformedMaterialization = "step 13 materialization"
)

// Record is the verification record of spec candidate §22 step 12: a
// project-defined document, self-digested like every candidate document.
type Record struct {
	// Kind is RecordKind.
	Kind string `json:"kind"`
	// DigestAlgorithm is DigestAlgorithm.
	DigestAlgorithm string `json:"digestAlgorithm"`
	// Dialect is the dialect the bundle was read in (the requested one
	// when the bytes could not be decoded).
	Dialect candidate.Dialect `json:"dialect"`
	// Verdict is Verified when Issues is empty, else Rejected.
	Verdict string `json:"verdict"`
	// BundleDigest is the computed digest; absent when the bundle has no
	// canonical form (a parse error, a lone surrogate).
	BundleDigest string `json:"bundleDigest,omitzero"`
	// CarriedDigest is the bundle's own digest member, untrusted.
	CarriedDigest string `json:"carriedDigest,omitzero"`
	// CodeKind is code.kind of a schema-valid bundle.
	CodeKind string `json:"codeKind,omitzero"`
	// MaterializedTree is the tree a verified no-op or git-patch code
	// materializes.
	MaterializedTree *string `json:"materializedTree,omitzero"`
	// Repository is the repository a no-op or git-patch code names.
	Repository *RepositoryRecord `json:"repository,omitzero"`
	// Artifacts are the artifacts whose bytes were verified, in §22 order.
	Artifacts []ArtifactRecord `json:"artifacts"`
	// Resources are the resources whose bytes were verified, in §4.2
	// order.
	Resources []ResourceRecord `json:"resources"`
	// Workspaces are the workspace snapshots whose manifests were
	// verified.
	Workspaces []WorkspaceRecord `json:"workspaces"`
	// Entrypoint is the manifest row of an active candidate's entrypoint.
	Entrypoint *EntrypointRecord `json:"entrypoint,omitzero"`
	// Container is step 11's evidence, when it was performed.
	Container *ContainerRecord `json:"container,omitzero"`
	// SupportPolicy names the step 5 policy applied, if any.
	SupportPolicy string `json:"supportPolicy,omitzero"`
	// Secrets are the strings of the bundle that look like credential
	// material (by JSON pointer and rule, never the text; spec candidate
	// §20.1). They are reported, not judged: they do not change the
	// verdict.
	Secrets []candidate.SecretFinding `json:"secrets"`
	// MaterializationReceipt is the receipt of §22 step 13, emitted when
	// Options.Materialize was set and the bundle verified.
	MaterializationReceipt *candidate.MaterializationReceipt `json:"materializationReceipt,omitzero"`
	// NotPerformed lists the §22 steps this verifier skipped.
	NotPerformed []string `json:"notPerformed"`
	// Issues are every reason for rejection.
	Issues []Issue `json:"issues"`
	// Digest is the record's self-digest (candidate.SelfDigest).
	Digest string `json:"digest"`
}

// RepositoryRecord is the repository and trees a no-op or git-patch
// code was checked against.
type RepositoryRecord struct {
	// Owner and Repo name the GitHub repository.
	Owner string `json:"owner"`
	Repo  string `json:"repo"`
	// BaseCommit is the commit the code starts from.
	BaseCommit string `json:"baseCommit"`
	// BaseTree is BaseCommit's tree.
	BaseTree string `json:"baseTree"`
	// CandidateTree is a git-patch code's declared result tree.
	CandidateTree *string `json:"candidateTree,omitzero"`
}

// ArtifactRecord is one artifact whose bytes were verified (length, then
// sha256). Source is "embedded" or the locator kind.
type ArtifactRecord struct {
	// Path is the JSON pointer of the value in the bundle (for an
	// entrypoint, its path in the workspace).
	Path string `json:"path"`
	// SHA256 is the "sha256:" digest of the verified bytes.
	SHA256 string `json:"sha256"`
	// ByteLength is their length.
	ByteLength int64 `json:"byteLength"`
	// Source is "embedded" or the locator kind the bytes came through.
	Source string `json:"source"`
}

// ResourceRecord is one resource whose bytes were verified.
type ResourceRecord struct {
	// Path is the JSON pointer of the resource in the bundle.
	Path string `json:"path"`
	// Kind is the resource kind, inline or github.
	Kind string `json:"kind"`
	// SHA256 is the "sha256:" digest of the verified bytes.
	SHA256 string `json:"sha256"`
	// ByteLength is their length.
	ByteLength int64 `json:"byteLength"`
}

// WorkspaceRecord is one workspace snapshot whose manifest bytes were
// verified, and whether its archive's content was.
type WorkspaceRecord struct {
	// Path is the JSON pointer of the snapshot in the document.
	Path string `json:"path"`
	// Digest is the snapshot digest, the manifest's sha256.
	Digest string `json:"digest"`
	// Files is the number of files in the manifest.
	Files int `json:"files"`
	// ArchiveContent is ArchiveVerified (the reference layout, decoded
	// and matched) or ArchiveUnverified (another encoding, or the archive
	// bytes could not be read: checked by length and sha256 only).
	ArchiveContent string `json:"archiveContent"`
}

// EntrypointRecord is the manifest row of an active candidate's
// entrypoint (§22 step 10).
type EntrypointRecord struct {
	// Path is the entrypoint's path in the candidate workspace.
	Path string `json:"path"`
	// SHA256 is the "sha256:" digest of the verified bytes.
	SHA256 string `json:"sha256"`
	// ByteLength is their length.
	ByteLength int64 `json:"byteLength"`
}

// Issue is one reason for rejection: a §22 verdict code, the JSON pointer
// of the offending value and a message.
type Issue struct {
	// Code is the §22 verdict code.
	Code string `json:"code"`
	// Path is the JSON pointer of the offending value.
	Path string `json:"path"`
	// Message says what was found.
	Message string `json:"message"`
}
