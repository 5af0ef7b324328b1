package candidate

import (
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/profile"
)

// Kind members of candidate documents.
const (
	KindBundleValue            = "agent-candidate-bundle"
	KindWorkspaceManifestValue = "agent-candidate-workspace-manifest"
	KindWorkspaceSnapshotValue = contract.WorkspaceSnapshotKind
)

// Locator is a closed artifact locator: s3 (Bucket, Key, optional
// Region), ipfs (CID, optional Path) or, in a seed-dialect memory seed,
// private-cas (Namespace, Digest). It is contract's locator.
type Locator = contract.WorkspaceSnapshotLocator

// ArtifactRef is AgentCandidateArtifactRef: bytes outside the document.
type ArtifactRef struct {
	Locator    Locator `json:"locator"`
	SHA256     string  `json:"sha256"`
	ByteLength int64   `json:"byteLength"`
}

// EmbeddedArtifact is AgentCandidateEmbeddedArtifact: canonical base64
// bytes inside the document.
type EmbeddedArtifact struct {
	Encoding   string `json:"encoding"`
	Content    string `json:"content"`
	SHA256     string `json:"sha256"`
	ByteLength int64  `json:"byteLength"`
}

// CapturedArtifact is a captured artifact: a locator ref (Locator set) or
// embedded bytes (Encoding and Content set).
type CapturedArtifact struct {
	Locator    *Locator `json:"locator,omitzero"`
	Encoding   *string  `json:"encoding,omitzero"`
	Content    *string  `json:"content,omitzero"`
	SHA256     string   `json:"sha256"`
	ByteLength int64    `json:"byteLength"`
}

// ManifestFile is one regular file of a workspace manifest; Mode is the
// permission bits as a decimal integer (0o644 = 420).
type ManifestFile struct {
	Path       string `json:"path"`
	Mode       int64  `json:"mode"`
	SHA256     string `json:"sha256"`
	ByteLength int64  `json:"byteLength"`
}

// WorkspaceManifestMaterial is AgentCandidateWorkspaceManifestMaterial.
type WorkspaceManifestMaterial struct {
	Kind  string         `json:"kind"`
	Files []ManifestFile `json:"files"`
}

// WorkspaceSnapshotEvidence is AgentCandidateWorkspaceSnapshotEvidence.
type WorkspaceSnapshotEvidence struct {
	Kind     string                    `json:"kind"`
	Digest   string                    `json:"digest"`
	Material WorkspaceManifestMaterial `json:"material"`
	Manifest CapturedArtifact          `json:"manifest"`
	Archive  CapturedArtifact          `json:"archive"`
}

// Repository is a GitHub repository.
type Repository struct {
	Kind  string `json:"kind"`
	Owner string `json:"owner"`
	Repo  string `json:"repo"`
}

// ResourceRef is a frozen resource: inline (Name, Content) or github
// (Repository, Path, Commit, optional Name), both with SHA256 and
// ByteLength and optional provenance.
type ResourceRef struct {
	Kind       string      `json:"kind"`
	Name       *string     `json:"name,omitzero"`
	Content    *string     `json:"content,omitzero"`
	Repository *Repository `json:"repository,omitzero"`
	Path       *string     `json:"path,omitzero"`
	Commit     *string     `json:"commit,omitzero"`
	SHA256     string      `json:"sha256"`
	ByteLength int64       `json:"byteLength"`
	Source     *Source     `json:"source,omitzero"`
}

// InlineResource is AgentCandidateInlineResource.
type InlineResource struct {
	Kind       string  `json:"kind"`
	Name       string  `json:"name"`
	Content    string  `json:"content"`
	SHA256     string  `json:"sha256"`
	ByteLength int64   `json:"byteLength"`
	Source     *Source `json:"source,omitzero"`
}

// GitHubResource is AgentCandidateGitHubResource.
type GitHubResource struct {
	Kind       string     `json:"kind"`
	Repository Repository `json:"repository"`
	Path       string     `json:"path"`
	Commit     string     `json:"commit"`
	Name       *string    `json:"name,omitzero"`
	SHA256     string     `json:"sha256"`
	ByteLength int64      `json:"byteLength"`
	Source     *Source    `json:"source,omitzero"`
}

// FileMount is AgentCandidateFileMount.
type FileMount struct {
	Path       string      `json:"path"`
	Resource   ResourceRef `json:"resource"`
	Executable *bool       `json:"executable,omitzero"`
}

// Resources is AgentCandidateResources; FailOnError is always true.
type Resources struct {
	Files        []FileMount   `json:"files,omitzero"`
	Tools        []ResourceRef `json:"tools,omitzero"`
	Skills       []ResourceRef `json:"skills,omitzero"`
	Agents       []ResourceRef `json:"agents,omitzero"`
	Commands     []ResourceRef `json:"commands,omitzero"`
	Instructions *Instructions `json:"instructions,omitzero"`
	FailOnError  bool          `json:"failOnError"`
}

// Instructions is resources.instructions: text or a frozen resource.
type Instructions = profile.TextOrRef[ResourceRef]

// Source is AgentImprovementSource, a resource's provenance.
// SourceRevision is a string or a non-negative integer.
type Source struct {
	Kind            string           `json:"kind"`
	SourceIdentity  string           `json:"sourceIdentity"`
	SourceDigest    string           `json:"sourceDigest"`
	SourceRevision  Revision         `json:"sourceRevision"`
	License         *License         `json:"license,omitzero"`
	Attribution     []string         `json:"attribution,omitzero"`
	Notices         []string         `json:"notices,omitzero"`
	Transformations []Transformation `json:"transformations,omitzero"`
}

// License is a source licence: spdx (Expression) or custom (Name,
// Reference, TermsDigest).
type License struct {
	Kind        string  `json:"kind"`
	Expression  *string `json:"expression,omitzero"`
	Name        *string `json:"name,omitzero"`
	Reference   *string `json:"reference,omitzero"`
	TermsDigest *string `json:"termsDigest,omitzero"`
}

// Transformation is one step of an imported source's transformation
// chain.
type Transformation struct {
	Kind            string   `json:"kind"`
	Identity        string   `json:"identity"`
	Revision        Revision `json:"revision"`
	ProcedureDigest string   `json:"procedureDigest"`
	InputDigest     string   `json:"inputDigest"`
	OutputDigest    string   `json:"outputDigest"`
}

// Revision is a textual or numeric source revision: exactly one of Text
// and Number is set.
type Revision struct {
	Text   *string
	Number *int64
}
