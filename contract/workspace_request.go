package contract

import (
	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/schema"
)

// Kind names of the create-time workspace and resource requests (no
// reference vectors).
const (
	KindWorkspaceRequest = "WorkspaceRequest"
	KindResourceRequest  = "ResourceRequest"
)

// WorkspaceRequest says which workspace a new environment starts with.
// Environment (a provider template id such as "universal") and Image
// exclude each other; GitRef needs RepoURL. The workspace source is one of:
// a repository (RepoURL, GitRef), a provider-native Checkpoint (needs
// create.workspaceCheckpoint; excludes RepoURL), or a portable Snapshot
// (needs create.workspaceSnapshot; excludes RepoURL, GitRef and
// Checkpoint, and its Cwd, if any, is repository-based). Cwd is an
// explicitly based path: a bare string is refused.
type WorkspaceRequest struct {
	Environment     *string                    `json:"environment,omitzero"`
	Image           *string                    `json:"image,omitzero"`
	RepoURL         *string                    `json:"repoUrl,omitzero"`
	GitRef          *string                    `json:"gitRef,omitzero"`
	Cwd             *WorkspaceCwd              `json:"cwd,omitzero"`
	Checkpoint      *WorkspaceCheckpointRef    `json:"checkpoint,omitzero"`
	Snapshot        *WorkspaceSnapshotRef      `json:"snapshot,omitzero"`
	ProviderOptions map[string]canonjson.Value `json:"providerOptions,omitzero"`
}

// ResourceRequest asks for compute resources. CPU is a positive core
// count (fractions allowed), MemoryMB and DiskMB positive integer
// mebibytes, GPU a provider-specific accelerator name. An absent member
// leaves the provider's default.
type ResourceRequest struct {
	CPU             *float64                   `json:"cpu,omitzero"`
	MemoryMB        *int64                     `json:"memoryMb,omitzero"`
	DiskMB          *int64                     `json:"diskMb,omitzero"`
	GPU             *string                    `json:"gpu,omitzero"`
	ProviderOptions map[string]canonjson.Value `json:"providerOptions,omitzero"`
}

var (
	envNonEmptyString = schema.String(schema.MaxLen(MaxStringLength), schema.MinLen(1))

	// WorkspaceRequestSchema is the strict WorkspaceRequest shape with its
	// source-exclusion rules. A repository cwd is canonicalized.
	WorkspaceRequestSchema = schema.Object(
		schema.Opt("environment", BoundedIdentifier),
		schema.Opt("image", envNonEmptyString),
		schema.Opt("repoUrl", envNonEmptyString),
		schema.Opt("gitRef", BoundedIdentifier),
		schema.Opt("cwd", WorkspaceCwdSchema),
		schema.Opt("checkpoint", WorkspaceCheckpointRefSchema),
		schema.Opt("snapshot", WorkspaceSnapshotRefSchema),
		schema.Opt("providerOptions", BoundedJSONRecord),
	).Refine(envCheckWorkspaceRequest)

	// ResourceRequestSchema is the strict ResourceRequest shape.
	ResourceRequestSchema = schema.Object(
		schema.Opt("cpu", schema.Number(schema.Positive)),
		schema.Opt("memoryMb", schema.Number(schema.Int, schema.Positive)),
		schema.Opt("diskMb", schema.Number(schema.Int, schema.Positive)),
		schema.Opt("gpu", BoundedIdentifier),
		schema.Opt("providerOptions", BoundedJSONRecord),
	)
)

func envCheckWorkspaceRequest(c *schema.Context, v canonjson.Value) {
	has := func(name string) bool { _, ok := v.Get(name); return ok }
	if has("snapshot") && (has("repoUrl") || has("gitRef") || has("checkpoint")) {
		c.Custom("a workspace snapshot cannot be combined with a repository or a checkpoint", "snapshot")
	}
	if cwd, ok := v.Get("cwd"); ok && has("snapshot") {
		if base, _ := cwd.Get("base"); base.Kind() == canonjson.String && base.Str() == CwdHost {
			c.Custom("a workspace snapshot's cwd must be relative to the restored repository", "cwd")
		}
	}
	if has("checkpoint") && has("repoUrl") {
		c.Custom("a workspace checkpoint cannot be combined with a repository", "checkpoint")
	}
	if has("environment") && has("image") {
		c.Custom("a workspace names an environment or an image, not both", "image")
	}
	if has("gitRef") && !has("repoUrl") {
		c.Custom("a workspace gitRef needs repoUrl", "gitRef")
	}
}

// ParseWorkspaceRequest decodes and validates a workspace request; a
// repository cwd comes back canonicalized.
func ParseWorkspaceRequest(data []byte) (*WorkspaceRequest, error) {
	return Parse[WorkspaceRequest](KindWorkspaceRequest, WorkspaceRequestSchema, data)
}

// ParseResourceRequest decodes and validates a resource request.
func ParseResourceRequest(data []byte) (*ResourceRequest, error) {
	return Parse[ResourceRequest](KindResourceRequest, ResourceRequestSchema, data)
}
