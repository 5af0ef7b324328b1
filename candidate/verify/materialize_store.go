package verify

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/agentrt/agentrt/candidate"
	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
)

// ArtifactStore stores evidence bytes too large to embed in a receipt
// (more than MaxEmbeddedBytes) and returns a ref whose bytes the
// receipt's readers can fetch through their ArtifactPort.
type ArtifactStore interface {
	// Put stores data and returns its ref: a closed locator, data's
	// sha256 and length.
	Put(ctx context.Context, data []byte) (candidate.ArtifactRef, error)
}

// DirStore is an ArtifactStore over a content-addressed Dir: each object
// is the file named by its sha256 hex, and its ref an s3 locator in
// Bucket with the key "sha256/<hex>" (a name only: a Dir reads by
// sha256 whatever the locator says).
type DirStore struct {
	// Dir is the directory written to.
	Dir Dir
	// Bucket names the s3 bucket of the returned locators.
	Bucket string
}

// Put writes data as Dir/<sha256 hex> (atomically, through a temporary
// file) unless it is already there.
func (s DirStore) Put(_ context.Context, data []byte) (candidate.ArtifactRef, error) {
	d := canonjson.DigestBytes(data)
	name := filepath.Join(string(s.Dir), d[len("sha256:"):])
	if _, err := os.Stat(name); errors.Is(err, fs.ErrNotExist) {
		tmp, err := os.CreateTemp(string(s.Dir), ".put-*")
		if err != nil {
			return candidate.ArtifactRef{}, err
		}
		_, werr := tmp.Write(data)
		if err := errors.Join(werr, tmp.Close()); err != nil {
			_ = os.Remove(tmp.Name())
			return candidate.ArtifactRef{}, err
		}
		if err := os.Rename(tmp.Name(), name); err != nil {
			_ = os.Remove(tmp.Name())
			return candidate.ArtifactRef{}, err
		}
	} else if err != nil {
		return candidate.ArtifactRef{}, err
	}
	return candidate.ArtifactRef{Locator: contract.S3Locator(s.Bucket, "sha256/"+d[len("sha256:"):], nil), SHA256: d, ByteLength: int64(len(data))}, nil
}

// capturer makes the captured artifacts of a receipt: embedded up to
// MaxEmbeddedBytes, else stored through store (refused without one).
type capturer struct {
	ctx   context.Context
	store ArtifactStore
}

func (c capturer) capture(path string, data []byte) (candidate.CapturedArtifact, error) {
	d := canonjson.DigestBytes(data)
	if len(data) <= MaxEmbeddedBytes {
		enc, content := "base64", base64Std(data)
		return candidate.CapturedArtifact{Encoding: &enc, Content: &content, SHA256: d, ByteLength: int64(len(data))}, nil
	}
	if c.store == nil {
		return candidate.CapturedArtifact{}, matErr(MatTooLarge, path, "%d bytes exceed the %d-byte embedded-artifact limit and the context has no artifact store", len(data), MaxEmbeddedBytes)
	}
	ref, err := c.store.Put(c.ctx, data)
	if err != nil {
		return candidate.CapturedArtifact{}, fmt.Errorf("verify: storing %s: %w", path, err)
	}
	if ref.SHA256 != d || ref.ByteLength != int64(len(data)) {
		return candidate.CapturedArtifact{}, fmt.Errorf("verify: storing %s: the store returned %s (%d bytes) for %s (%d bytes)", path, ref.SHA256, ref.ByteLength, d, len(data))
	}
	loc := ref.Locator
	return candidate.CapturedArtifact{Locator: &loc, SHA256: d, ByteLength: ref.ByteLength}, nil
}
