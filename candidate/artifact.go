package candidate

import (
	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/schema"
)

const base64Alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"

// hasBase64Shape reports whether s is padded standard base64 (CAND §3.3):
// length a multiple of 4, at most two trailing "=", alphabet only.
func hasBase64Shape(s string) bool {
	if len(s)%4 != 0 {
		return false
	}
	n := len(s)
	for n > 0 && s[n-1] == '=' {
		n--
	}
	if len(s)-n > 2 {
		return false
	}
	for i := 0; i < n; i++ {
		c := s[i]
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '+' || c == '/') {
			return false
		}
	}
	return true
}

// hasCanonicalBase64Padding reports whether the bits a padded base64
// string's last character carries beyond its bytes are zero.
func hasCanonicalBase64Padding(s string) bool {
	index := func(i int) int {
		if i < 0 {
			return -1
		}
		for j := 0; j < len(base64Alphabet); j++ {
			if base64Alphabet[j] == s[i] {
				return j
			}
		}
		return -1
	}
	switch {
	case len(s) >= 2 && s[len(s)-2:] == "==":
		i := index(len(s) - 3)
		return i >= 0 && i&0x0f == 0
	case len(s) >= 1 && s[len(s)-1] == '=':
		i := index(len(s) - 2)
		return i >= 0 && i&0x03 == 0
	}
	return true
}

// decodedBase64Length is the byte length padded base64 s decodes to.
func decodedBase64Length(s string) int {
	if s == "" {
		return 0
	}
	pad := 0
	if len(s) >= 2 && s[len(s)-2:] == "==" {
		pad = 2
	} else if s[len(s)-1] == '=' {
		pad = 1
	}
	return len(s)/4*3 - pad
}

var (
	// locatorNode is the closed locator union of the reference build: s3
	// and ipfs (CAND §3.1). The seed dialect's private-cas locator is
	// not part of the ts16 wire shapes the vectors bind.
	locatorNode = schema.Discriminated("kind", map[string]schema.Node{
		contract.LocatorS3:   contract.S3LocatorSchema,
		contract.LocatorIPFS: contract.IPFSLocatorSchema,
	})

	// ArtifactRefSchema is AgentCandidateArtifactRef: bytes stored outside
	// the document under a closed locator.
	ArtifactRefSchema = schema.Object(
		schema.Req("locator", locatorNode),
		schema.Req("sha256", digestNode),
		schema.Req("byteLength", safeCount),
	)

	// EmbeddedArtifactSchema is AgentCandidateEmbeddedArtifact: bytes
	// inside the document as canonical base64 (CAND §3.3).
	EmbeddedArtifactSchema = schema.Object(
		schema.Req("encoding", schema.LiteralString("base64")),
		schema.Req("content", schema.String(schema.Rule[string]{Code: schema.CodeCustom, Message: "content must be canonical base64", Test: hasBase64Shape})),
		schema.Req("sha256", digestNode),
		schema.Req("byteLength", safeCount),
	).Refine(func(c *schema.Context, v canonjson.Value) {
		content := member(v, "content")
		if !hasCanonicalBase64Padding(content) {
			c.Custom("base64 content must use canonical zero padding bits", "content")
		}
		if float64(decodedBase64Length(content)) != num(v, "byteLength") {
			c.Custom("byteLength must match the decoded base64 content", "byteLength")
		}
	})

	// capturedNode is a captured artifact: a locator ref or embedded
	// bytes.
	capturedNode = schema.Union(ArtifactRefSchema, EmbeddedArtifactSchema)

	// WorkspaceManifestMaterialSchema is
	// AgentCandidateWorkspaceManifestMaterial: regular files in strictly
	// ascending UTF-16 path order (CAND §3.5).
	WorkspaceManifestMaterialSchema = schema.Object(
		schema.Req("kind", schema.LiteralString(KindWorkspaceManifestValue)),
		schema.Req("files", schema.Array(schema.Object(
			schema.Req("path", relPath(false, "workspace manifest paths must be canonical and relative")),
			schema.Req("mode", fileMode),
			schema.Req("sha256", digestNode),
			schema.Req("byteLength", safeCount),
		))),
	).Refine(func(c *schema.Context, v canonjson.Value) {
		checkAscending(c, memberStrings(at(v, "files"), "path"), "workspace manifest paths must be unique and lexicographically sorted", "path", "files")
	})

	// WorkspaceSnapshotEvidenceSchema is
	// AgentCandidateWorkspaceSnapshotEvidence: the manifest material, its
	// canonical bytes and the archive.
	WorkspaceSnapshotEvidenceSchema = schema.Object(
		schema.Req("kind", schema.LiteralString(contract.WorkspaceSnapshotKind)),
		schema.Req("digest", digestNode),
		schema.Req("material", WorkspaceManifestMaterialSchema),
		schema.Req("manifest", capturedNode),
		schema.Req("archive", capturedNode),
	).Refine(func(c *schema.Context, v canonjson.Value) {
		if member(at(v, "manifest"), "sha256") != member(v, "digest") {
			c.Custom("workspace digest must equal the canonical manifest hash", "manifest", "sha256")
		}
		if num(v, "manifest", "byteLength") == 0 || num(v, "archive", "byteLength") == 0 {
			c.Custom("workspace evidence requires non-empty manifest and archive bytes")
		}
	})

	// InlineResourceSchema is AgentCandidateInlineResource.
	InlineResourceSchema = schema.Object(
		schema.Req("kind", schema.LiteralString(profile.ResourceInline)),
		schema.Req("name", schema.String(schema.MinLen(1), schema.WellFormed)),
		schema.Req("content", wellFormed),
		schema.Req("sha256", digestNode),
		schema.Req("byteLength", safeCount),
		schema.Opt("source", SourceSchema),
	).Refine(func(c *schema.Context, v canonjson.Value) {
		if float64(len(member(v, "content"))) != num(v, "byteLength") {
			c.Custom("byteLength must match UTF-8 content", "byteLength")
		}
		checkSourceDigest(c, v)
	})

	// GitHubResourceSchema is AgentCandidateGitHubResource: one file
	// pinned to a full commit and its content digest.
	GitHubResourceSchema = schema.Object(
		schema.Req("kind", schema.LiteralString(profile.ResourceGitHub)),
		schema.Req("repository", repositoryNode),
		schema.Req("path", relPath(false, "path must be a canonical repository-relative path")),
		schema.Req("commit", gitObjectNode),
		schema.Opt("name", schema.String(schema.MinLen(1), schema.WellFormed)),
		schema.Req("sha256", digestNode),
		schema.Req("byteLength", safeCount),
		schema.Opt("source", SourceSchema),
	).Refine(checkSourceDigest)

	resourceRefNode = schema.Discriminated("kind", map[string]schema.Node{
		profile.ResourceInline: InlineResourceSchema,
		profile.ResourceGitHub: GitHubResourceSchema,
	})
	resourceRefs = schema.Array(resourceRefNode)

	// FileMountSchema is AgentCandidateFileMount.
	FileMountSchema = schema.Object(
		schema.Req("path", relPath(false, "mount path must be a canonical workspace-relative path")),
		schema.Req("resource", resourceRefNode),
		schema.Opt("executable", boolean),
	)

	// ResourcesSchema is AgentCandidateResources: failOnError is required
	// and true (a frozen candidate never degrades silently, CAND §4.2).
	ResourcesSchema = schema.Object(
		schema.Opt("files", schema.Array(FileMountSchema)),
		schema.Opt("tools", resourceRefs),
		schema.Opt("skills", resourceRefs),
		schema.Opt("agents", resourceRefs),
		schema.Opt("commands", resourceRefs),
		schema.Opt("instructions", schema.Union(wellFormed, resourceRefNode)),
		schema.Req("failOnError", schema.Literal(canonjson.BoolValue(true))),
	)
)

// checkSourceDigest: a resource's provenance must name the frozen bytes.
func checkSourceDigest(c *schema.Context, v canonjson.Value) {
	if src, ok := v.Get("source"); ok && member(src, "sourceDigest") != member(v, "sha256") {
		c.Custom("resource source digest must equal the frozen resource digest", "source", "sourceDigest")
	}
}
