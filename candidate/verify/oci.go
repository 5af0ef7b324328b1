package verify

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/agentrt/agentrt/candidate"
	"github.com/agentrt/agentrt/candidate/netsafe"
)

// Step 11 verdict codes (project-defined: spec candidate §22 names none).
const (
	// CodeContainerUnavailable: the OCI store lacks the index or the
	// selected manifest.
	CodeContainerUnavailable = "container-unavailable"
	// CodeContainerDigestMismatch: a blob's bytes do not hash to the
	// digest it was asked for, or its size is not its descriptor's.
	CodeContainerDigestMismatch = "container-digest-mismatch"
	// CodeContainerIndexInvalid: the index is not an OCI image index (or
	// Docker manifest list), or the selected manifest is not an image
	// manifest.
	CodeContainerIndexInvalid = "container-index-invalid"
	// CodeContainerPlatformMissing: the index has no manifest for the
	// requested platform.
	CodeContainerPlatformMissing = "container-platform-missing"
)

// maxOCIBlob bounds an index or manifest read in step 11.
const maxOCIBlob = 4 << 20

// OCIStore reads OCI blobs (image indexes and manifests) by digest for
// step 11. Blob returns ErrUnavailable (wrapped) when the store lacks
// the blob; the bytes are untrusted: the verifier checks their digest.
type OCIStore interface {
	Blob(ctx context.Context, image, digest string) ([]byte, error)
}

// OCILayout is a local OCI image layout directory (what `skopeo copy
// docker://IMAGE oci:DIR` or `docker buildx build --output type=oci`
// write): the blob with digest "sha256:H" is blobs/sha256/H. The image
// name is not used: blobs are content-addressed.
type OCILayout string

// Blob reads the blob of digest, at most maxOCIBlob+1 bytes.
func (d OCILayout) Blob(_ context.Context, _ string, digest string) ([]byte, error) {
	hex, ok := strings.CutPrefix(digest, "sha256:")
	if !ok || len(hex) != 64 || strings.Trim(hex, "0123456789abcdef") != "" {
		return nil, fmt.Errorf("%w: %q is not a sha256 digest", ErrUnavailable, digest)
	}
	f, err := openRegular(filepath.Join(string(d), "blobs", "sha256", hex))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: blob %s is not in the OCI layout %s", ErrUnavailable, digest, string(d))
	}
	if errors.Is(err, errNotRegular) {
		return nil, fmt.Errorf("%w: blob %s in the OCI layout %s is not a regular file", ErrUnavailable, digest, string(d))
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, maxOCIBlob+1))
}

// ContainerRecord is step 11's evidence: the pinned container's index,
// the manifest selected for the platform, or an evaluator-owned
// container deferred to the task.
type ContainerRecord struct {
	// Source is "pinned-container" or "evaluator-task-container".
	Source string `json:"source"`
	// Image and IndexDigest are the bundle's pinned container.
	Image       string `json:"image,omitzero"`
	IndexDigest string `json:"indexDigest,omitzero"`
	// ManifestDigest is the image manifest the index lists for Platform.
	ManifestDigest string `json:"manifestDigest,omitzero"`
	// Platform is the platform the manifest was selected for.
	Platform *candidate.Platform `json:"platform,omitzero"`
	// DeferredToTask is true for an evaluator-owned container: the task
	// selects it.
	DeferredToTask bool `json:"deferredToTask,omitzero"`
}

// ociDescriptor and ociIndex are the parts of the OCI image index (and
// Docker manifest list) step 11 reads.
type ociDescriptor struct {
	MediaType string `json:"mediaType"`
	Digest    string `json:"digest"`
	Size      int64  `json:"size"`
	Platform  *struct {
		OS           string `json:"os"`
		Architecture string `json:"architecture"`
		Variant      string `json:"variant"`
	} `json:"platform"`
}

type ociIndex struct {
	SchemaVersion int             `json:"schemaVersion"`
	MediaType     string          `json:"mediaType"`
	Manifests     []ociDescriptor `json:"manifests"`
}

const (
	ociIndexType          = "application/vnd.oci.image.index.v1+json"
	dockerListType        = "application/vnd.docker.distribution.manifest.list.v2+json"
	ociManifestType       = "application/vnd.oci.image.manifest.v1+json"
	dockerManifestType    = "application/vnd.docker.distribution.manifest.v2+json"
	containerPath         = "/execution/environment/container"
	containerIndexPath    = containerPath + "/indexDigest"
	defaultOCIOS          = "linux"
	defaultOCIArch        = "amd64"
	ociPinnedContainer    = "pinned-container"
	ociEvaluatorContainer = "evaluator-task-container"
)

// container performs step 11 for a schema-valid bundle.
func (v *verifier) container(ctx context.Context, b *candidate.Bundle) error {
	env := b.Execution.Environment
	if env.Kind != ociPinnedContainer || env.Container == nil {
		v.rec.Container = &ContainerRecord{Source: ociEvaluatorContainer, DeferredToTask: true}
		return nil
	}
	c := env.Container
	platform := v.opts.Platform
	if platform.OS == "" {
		platform = candidate.Platform{OS: defaultOCIOS, Architecture: defaultOCIArch}
	}
	data, ok, err := v.ociBlob(ctx, c.Image, c.IndexDigest, -1, containerIndexPath)
	if !ok || err != nil {
		return err
	}
	var index ociIndex
	if err := json.Unmarshal(data, &index); err != nil || index.SchemaVersion != 2 || (index.MediaType != ociIndexType && index.MediaType != dockerListType) {
		v.issue(CodeContainerIndexInvalid, containerIndexPath, "the blob is not an OCI image index or Docker manifest list (schemaVersion 2)")
		return nil
	}
	var chosen *ociDescriptor
	for i := range index.Manifests {
		m := &index.Manifests[i]
		if p := m.Platform; p != nil && p.OS == platform.OS && p.Architecture == platform.Architecture &&
			(platform.Variant == nil || p.Variant == *platform.Variant) {
			chosen = m
			break
		}
	}
	if chosen == nil {
		want := platform.OS + "/" + platform.Architecture
		if platform.Variant != nil {
			want += "/" + *platform.Variant
		}
		v.issue(CodeContainerPlatformMissing, containerIndexPath, "the index lists no manifest for %s", want)
		return nil
	}
	if chosen.MediaType != ociManifestType && chosen.MediaType != dockerManifestType {
		v.issue(CodeContainerIndexInvalid, containerIndexPath, "the manifest for the platform has media type %q, not an image manifest", chosen.MediaType)
		return nil
	}
	if _, ok, err := v.ociBlob(ctx, c.Image, chosen.Digest, chosen.Size, containerIndexPath); !ok || err != nil {
		return err
	}
	selected := candidate.Platform{OS: chosen.Platform.OS, Architecture: chosen.Platform.Architecture}
	if chosen.Platform.Variant != "" {
		variant := chosen.Platform.Variant
		selected.Variant = &variant
	}
	v.rec.Container = &ContainerRecord{Source: ociPinnedContainer, Image: c.Image, IndexDigest: c.IndexDigest, ManifestDigest: chosen.Digest, Platform: &selected}
	return nil
}

// ociBlob reads and checks one blob: its sha256 and, when size ≥ 0, its
// length. ok is false when an issue was recorded.
func (v *verifier) ociBlob(ctx context.Context, image, digest string, size int64, path string) ([]byte, bool, error) {
	data, err := v.opts.OCI.Blob(ctx, image, digest)
	switch {
	case errors.Is(err, netsafe.ErrBlocked):
		v.issue(CodeResolverBlocked, path, "%v", err)
		return nil, false, nil
	case errors.Is(err, ErrUnavailable):
		v.issue(CodeContainerUnavailable, path, "%v", err)
		return nil, false, nil
	case err != nil:
		return nil, false, fmt.Errorf("verify: reading OCI blob %s: %w", digest, err)
	case len(data) > maxOCIBlob:
		v.issue(CodeContainerDigestMismatch, path, "blob %s is over %d bytes", digest, maxOCIBlob)
		return nil, false, nil
	case sha256Digest(data) != digest:
		v.issue(CodeContainerDigestMismatch, path, "the blob read for %s hashes to %s", digest, sha256Digest(data))
		return nil, false, nil
	case size >= 0 && int64(len(data)) != size:
		v.issue(CodeContainerDigestMismatch, path, "blob %s has %d bytes, its descriptor says %d", digest, len(data), size)
		return nil, false, nil
	}
	return data, true, nil
}
