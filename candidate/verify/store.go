package verify

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/agentrt/agentrt/candidate"
	"github.com/agentrt/agentrt/candidate/netsafe"
)

// artifact is one captured artifact to verify: embedded bytes or a ref,
// at path in the document.
type artifact struct {
	path     string
	embedded *string
	ref      *candidate.ArtifactRef
	key      Key
}

func captured(path string, c *candidate.CapturedArtifact) artifact {
	a := artifact{path: path, key: Key{c.SHA256, c.ByteLength}}
	if c.Locator != nil {
		a.ref = &candidate.ArtifactRef{Locator: *c.Locator, SHA256: c.SHA256, ByteLength: c.ByteLength}
	} else {
		a.embedded = c.Content
	}
	return a
}

func referenced(path string, r *candidate.ArtifactRef) artifact {
	return artifact{path: path, ref: r, key: Key{r.SHA256, r.ByteLength}}
}

// source is "embedded" or the locator kind the bytes come through.
func (a artifact) source() string {
	if a.ref != nil {
		return a.ref.Locator.Kind
	}
	return "embedded"
}

// store is the one owner of §3.4 artifact verification for every
// document the package checks: it obtains bytes (decoding embedded
// content, or reading through the port), checks the length first, then
// the sha256, and caches verified bytes by (sha256, byteLength), so two
// refs with one key are one object whatever their locators say.
type store struct {
	port  ArtifactPort
	cache map[Key][]byte
}

func newStore(port ArtifactPort) *store {
	return &store{port: port, cache: map[Key][]byte{}}
}

// verify returns a's verified bytes, or the issue that rejects them; the
// error is operational (an I/O failure that is not the object's fault).
func (s *store) verify(ctx context.Context, a artifact) ([]byte, *Issue, error) {
	if data, ok := s.cache[a.key]; ok {
		return data, nil, nil
	}
	reject := func(code, format string, args ...any) ([]byte, *Issue, error) {
		return nil, &Issue{Code: code, Path: a.path, Message: fmt.Sprintf(format, args...)}, nil
	}
	var data []byte
	if a.embedded != nil {
		var err error
		if data, err = base64.StdEncoding.Strict().DecodeString(*a.embedded); err != nil {
			return reject(CodeArtifactLength, "content is not canonical base64: %v", err)
		}
	} else {
		var err error
		data, err = s.read(ctx, *a.ref)
		switch {
		case errors.Is(err, netsafe.ErrBlocked):
			return reject(CodeResolverBlocked, "%v", err)
		case errors.Is(err, ErrUnavailable):
			return reject(CodeArtifactUnavailable, "%v", err)
		case errors.Is(err, netsafe.ErrTooLarge):
			return reject(CodeArtifactLength, "the store returned more than %d bytes", a.key.ByteLength)
		case err != nil:
			return nil, nil, fmt.Errorf("verify: reading %s: %w", a.path, err)
		}
	}
	if int64(len(data)) != a.key.ByteLength {
		return reject(CodeArtifactLength, "%d bytes, declared %d", len(data), a.key.ByteLength)
	}
	if got := sha256Digest(data); got != a.key.SHA256 {
		return reject(CodeArtifactHash, "bytes hash to %s, declared %s", got, a.key.SHA256)
	}
	s.cache[a.key] = data
	return data, nil, nil
}

func (s *store) read(ctx context.Context, ref candidate.ArtifactRef) ([]byte, error) {
	switch p := s.port.(type) {
	case nil:
		return nil, fmt.Errorf("%w: no artifact port is configured", ErrUnavailable)
	case StreamReader:
		return readAll(ctx, p, ref)
	default:
		return p.Read(ctx, ref)
	}
}

func sha256Digest(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}
