package contract

import (
	"regexp"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/schema"
)

// KindWorkspaceSnapshotRef names a workspace snapshot reference (no
// reference vectors: the shape comes from Interface 5, seed 004).
const KindWorkspaceSnapshotRef = "AgentWorkspaceSnapshotRef"

// Constants of a workspace snapshot reference.
const (
	// WorkspaceSnapshotKind is the kind member of every snapshot
	// reference.
	WorkspaceSnapshotKind = "agent-candidate-workspace-snapshot"
	// WorkspaceSnapshotPolicyKind is the kind of a source snapshot policy:
	// the rules are the provider's own, identified by name, version and
	// digest.
	WorkspaceSnapshotPolicyKind = "provider-declared"

	// LocatorS3 locates an object in an S3 bucket.
	LocatorS3 = "s3"
	// LocatorIPFS locates an object by IPFS content id.
	LocatorIPFS = "ipfs"
	// LocatorPrivateCAS locates an object in a private content-addressed
	// store by namespace and digest.
	LocatorPrivateCAS = "private-cas"
)

// WorkspaceSnapshotRef restores a portable workspace through closed,
// content-addressed references: a manifest and an archive (the archive
// also identifies Git HEAD and staged state), plus the identities of the
// lease and policy that captured the source. It carries no file bytes, and
// neither its hashes nor its public lease identities grant access to the
// artifacts or control of a workspace: a receiver authorizes and verifies
// the artifacts itself.
type WorkspaceSnapshotRef struct {
	Kind     string                    `json:"kind"`
	Digest   string                    `json:"digest"`
	Manifest WorkspaceSnapshotArtifact `json:"manifest"`
	Archive  WorkspaceSnapshotArtifact `json:"archive"`
	Source   WorkspaceSnapshotSource   `json:"source"`
}

// WorkspaceSnapshotArtifact is one content-addressed object: where it is,
// its SHA-256 and its exact length in bytes.
type WorkspaceSnapshotArtifact struct {
	Locator    WorkspaceSnapshotLocator `json:"locator"`
	SHA256     string                   `json:"sha256"`
	ByteLength int64                    `json:"byteLength"`
}

// WorkspaceSnapshotLocator is a closed locator union, selected by Kind:
//
//   - LocatorS3: Bucket and Key, optional Region;
//   - LocatorIPFS: CID, optional Path;
//   - LocatorPrivateCAS: Namespace and Digest.
//
// Members of other kinds are absent.
type WorkspaceSnapshotLocator struct {
	Kind      string  `json:"kind"`
	Bucket    *string `json:"bucket,omitzero"`
	Key       *string `json:"key,omitzero"`
	Region    *string `json:"region,omitzero"`
	CID       *string `json:"cid,omitzero"`
	Path      *string `json:"path,omitzero"`
	Namespace *string `json:"namespace,omitzero"`
	Digest    *string `json:"digest,omitzero"`
}

// S3Locator returns an S3 locator; region may be nil.
func S3Locator(bucket, key string, region *string) WorkspaceSnapshotLocator {
	return WorkspaceSnapshotLocator{Kind: LocatorS3, Bucket: &bucket, Key: &key, Region: region}
}

// IPFSLocator returns an IPFS locator; path may be nil.
func IPFSLocator(cid string, path *string) WorkspaceSnapshotLocator {
	return WorkspaceSnapshotLocator{Kind: LocatorIPFS, CID: &cid, Path: path}
}

// PrivateCASLocator returns a private content-addressed store locator.
func PrivateCASLocator(namespace, digest string) WorkspaceSnapshotLocator {
	return WorkspaceSnapshotLocator{Kind: LocatorPrivateCAS, Namespace: &namespace, Digest: &digest}
}

// WorkspaceSnapshotSource identifies where the snapshot came from: the
// lease that held the source workspace and the digest of its record, the
// workspace allocation, the source snapshot digest and the policy that
// captured it.
type WorkspaceSnapshotSource struct {
	LeaseID              string                      `json:"leaseId"`
	LeaseRecordDigest    string                      `json:"leaseRecordDigest"`
	Workspace            WorkspaceSnapshotAllocation `json:"workspace"`
	SourceSnapshotDigest string                      `json:"sourceSnapshotDigest"`
	SourceSnapshotPolicy WorkspaceSnapshotPolicy     `json:"sourceSnapshotPolicy"`
}

// WorkspaceSnapshotAllocation is the public identity of the source
// workspace allocation: its provider, root locator and identity digest.
type WorkspaceSnapshotAllocation struct {
	Provider       string `json:"provider"`
	Root           string `json:"root"`
	IdentityDigest string `json:"identityDigest"`
}

// WorkspaceSnapshotPolicy is the public identity of the provider-owned
// capture rules (Kind is WorkspaceSnapshotPolicyKind). The digest binds
// the exact policy document; it does not claim every provider captures the
// same fields.
type WorkspaceSnapshotPolicy struct {
	Kind    string `json:"kind"`
	Name    string `json:"name"`
	Version int64  `json:"version"`
	Digest  string `json:"digest"`
}

var (
	envS3Bucket   = regexp.MustCompile(`^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$`)
	envIPv4Like   = regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+$`)
	envAWSRegion  = regexp.MustCompile(`^[a-z]{2}(?:-gov)?-[a-z]+-[0-9]$`)
	envIPFSCID    = regexp.MustCompile(`^(?:Qm[1-9A-HJ-NP-Za-km-z]{44}|b[a-z2-7]{20,})$`)
	envArtifactAt = func(s string) bool { return profile.IsSafeRelativePath(s, false) && !profile.LooksLikeCredential(s) }

	// envPublicText is public workspace identity text: not blank,
	// well-formed, free of control characters and of anything that looks
	// like a credential.
	envPublicText = func(s string) bool {
		return canonjson.TrimJS(s) != "" && canonjson.IsWellFormed(s) && !canonjson.HasControl(s) && !profile.LooksLikeCredential(s)
	}

	// envPublicIdentifier is a public workspace identifier (1..500 units).
	envPublicIdentifier = schema.String(schema.MinLen(1), schema.MaxLen(500), schema.Rule[string]{Code: schema.CodeCustom,
		Message: "a public workspace identity must not carry credential-like material", Test: envPublicText})

	// envPublicLocator is a public workspace locator (1..16384 units).
	envPublicLocator = schema.String(schema.MinLen(1), schema.MaxLen(MaxStringLength), schema.Rule[string]{Code: schema.CodeCustom,
		Message: "a workspace locator must be public, well-formed text", Test: envPublicText})

	// PublicWorkspaceIdentifierSchema is a public workspace identifier
	// (1..500 UTF-16 units of public text), shared with lease records.
	PublicWorkspaceIdentifierSchema = envPublicIdentifier

	// PublicWorkspaceLocatorSchema is a public workspace root locator,
	// shared with lease records.
	PublicWorkspaceLocatorSchema = envPublicLocator

	// S3LocatorSchema is the s3 artifact locator: a bucket that is not an
	// IPv4 address, a canonical relative key and an optional region.
	S3LocatorSchema = schema.Object(
		schema.Req("kind", schema.LiteralString(LocatorS3)),
		schema.Req("bucket", schema.String(schema.Matches("must be an S3 bucket name", func(s string) bool {
			return envS3Bucket.MatchString(s) && !envIPv4Like.MatchString(s)
		}))),
		schema.Req("key", schema.String(schema.Rule[string]{Code: schema.CodeCustom,
			Message: "an S3 key must be a canonical relative artifact path", Test: envArtifactAt})),
		schema.Opt("region", schema.String(schema.Matches("must be an AWS region", envAWSRegion.MatchString))),
	)

	// IPFSLocatorSchema is the ipfs artifact locator: a CIDv0 or base32
	// CIDv1 and an optional canonical relative path.
	IPFSLocatorSchema = schema.Object(
		schema.Req("kind", schema.LiteralString(LocatorIPFS)),
		schema.Req("cid", schema.String(schema.Matches("must be an IPFS CID", envIPFSCID.MatchString))),
		schema.Opt("path", schema.String(schema.Rule[string]{Code: schema.CodeCustom,
			Message: "an IPFS path must be a canonical relative artifact path", Test: envArtifactAt})),
	)

	// PrivateCASLocatorSchema is the private content-addressed store
	// locator (Interface 5, seed 004): a public namespace and a digest.
	PrivateCASLocatorSchema = schema.Object(
		schema.Req("kind", schema.LiteralString(LocatorPrivateCAS)),
		schema.Req("namespace", envPublicIdentifier),
		schema.Req("digest", Digest),
	)

	// WorkspaceSnapshotLocatorSchema is the closed locator union.
	WorkspaceSnapshotLocatorSchema = schema.Discriminated("kind", map[string]schema.Node{
		LocatorS3:         S3LocatorSchema,
		LocatorIPFS:       IPFSLocatorSchema,
		LocatorPrivateCAS: PrivateCASLocatorSchema,
	})

	// WorkspaceSnapshotArtifactSchema is one content-addressed artifact.
	WorkspaceSnapshotArtifactSchema = schema.Object(
		schema.Req("locator", WorkspaceSnapshotLocatorSchema),
		schema.Req("sha256", Digest),
		schema.Req("byteLength", schema.Number(schema.Int, schema.NonNegative)),
	)

	// WorkspaceSnapshotPolicySchema is the source snapshot policy identity.
	WorkspaceSnapshotPolicySchema = schema.Object(
		schema.Req("kind", schema.LiteralString(WorkspaceSnapshotPolicyKind)),
		schema.Req("name", envPublicIdentifier),
		schema.Req("version", schema.Number(schema.Int, schema.Positive)),
		schema.Req("digest", Digest),
	)

	// WorkspaceSnapshotRefSchema is the strict AgentWorkspaceSnapshotRef
	// shape: closed locators, no inline bytes.
	WorkspaceSnapshotRefSchema = schema.Object(
		schema.Req("kind", schema.LiteralString(WorkspaceSnapshotKind)),
		schema.Req("digest", Digest),
		schema.Req("manifest", WorkspaceSnapshotArtifactSchema),
		schema.Req("archive", WorkspaceSnapshotArtifactSchema),
		schema.Req("source", schema.Object(
			schema.Req("leaseId", envPublicIdentifier),
			schema.Req("leaseRecordDigest", Digest),
			schema.Req("workspace", schema.Object(
				schema.Req("provider", envPublicIdentifier),
				schema.Req("root", envPublicLocator),
				schema.Req("identityDigest", Digest),
			)),
			schema.Req("sourceSnapshotDigest", Digest),
			schema.Req("sourceSnapshotPolicy", WorkspaceSnapshotPolicySchema),
		)),
	)
)

// ParseWorkspaceSnapshotRef decodes and validates a snapshot reference.
func ParseWorkspaceSnapshotRef(data []byte) (*WorkspaceSnapshotRef, error) {
	return Parse[WorkspaceSnapshotRef](KindWorkspaceSnapshotRef, WorkspaceSnapshotRefSchema, data)
}
