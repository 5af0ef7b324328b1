package verify

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentrt/agentrt/candidate"
	"github.com/agentrt/agentrt/candidate/netsafe"
	"github.com/agentrt/agentrt/contract"
)

// ErrUnavailable is matched by a port's error when it does not hold the
// referenced object (verdict artifact-unavailable).
var ErrUnavailable = errors.New("verify: artifact unavailable")

// ArtifactPort reads one content-addressed object through an authorized
// closed-locator resolver (spec candidate §3.6). Read returns the
// complete object; an error matching ErrUnavailable means the object is
// absent, one matching netsafe.ErrBlocked that the resolver refused the
// address, one matching netsafe.ErrTooLarge that the store returned more
// than ref.ByteLength bytes. Any other error is operational. The bytes
// are untrusted: the verifier checks length, then sha256.
type ArtifactPort interface {
	Read(ctx context.Context, ref candidate.ArtifactRef) ([]byte, error)
}

// StreamReader is the optional streaming form of an ArtifactPort; the
// verifier prefers it and reads at most ref.ByteLength+1 bytes.
type StreamReader interface {
	ReadStream(ctx context.Context, ref candidate.ArtifactRef) (io.ReadCloser, error)
}

// Key is the identity of verified bytes: sha256 and byteLength (§3.4).
type Key struct {
	// SHA256 is the "sha256:" digest of the bytes.
	SHA256 string
	// ByteLength is their length.
	ByteLength int64
}

// Locator is the optional lookup form of an ArtifactPort: it finds an
// already stored object by exact digest and length and returns nil when
// absent. The verifier does not call it yet; a caller re-verifies any
// returned ref.
type Locator interface {
	Locate(ctx context.Context, key Key) (*candidate.ArtifactRef, error)
}

// Dir is a local content-addressed directory: the object with sha256
// "sha256:H" is the regular file named H (lower-case hex) in the
// directory, whatever the ref's locator says (§3.4: refs with one key are
// one object).
type Dir string

// ReadStream opens the file named by ref's sha256.
func (d Dir) ReadStream(_ context.Context, ref candidate.ArtifactRef) (io.ReadCloser, error) {
	hex, ok := strings.CutPrefix(ref.SHA256, "sha256:")
	if !ok || len(hex) != 64 || strings.Trim(hex, "0123456789abcdef") != "" {
		return nil, fmt.Errorf("%w: %q is not a sha256 digest", ErrUnavailable, ref.SHA256)
	}
	f, err := openRegular(filepath.Join(string(d), hex))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s is not in %s", ErrUnavailable, ref.SHA256, string(d))
	}
	if errors.Is(err, errNotRegular) {
		return nil, fmt.Errorf("%w: %s in %s is not a regular file", ErrUnavailable, hex, string(d))
	}
	if err != nil {
		return nil, err
	}
	return f, nil
}

// errNotRegular is openRegular's refusal of anything but a regular file.
var errNotRegular = errors.New("not a regular file")

// openRegular opens path for reading only if it is a regular file (a
// symbolic link to one will do). It looks before it opens, because
// opening a FIFO waits for a writer that may never come and opening a
// device can have effects; the open itself does not block either, and
// the file opened must be the one looked at.
func openRegular(path string) (*os.File, error) {
	before, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !before.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: %w (%s)", path, errNotRegular, before.Mode().Type())
	}
	f, err := os.OpenFile(path, os.O_RDONLY|nonBlock, 0)
	if err != nil {
		return nil, err
	}
	after, err := f.Stat()
	if err != nil || !after.Mode().IsRegular() || !os.SameFile(before, after) {
		f.Close()
		return nil, fmt.Errorf("%s: %w (it changed while being opened)", path, errNotRegular)
	}
	return f, nil
}

// Read returns the file named by ref's sha256, reading at most
// ref.ByteLength+1 bytes.
func (d Dir) Read(ctx context.Context, ref candidate.ArtifactRef) ([]byte, error) {
	return readAll(ctx, d, ref)
}

// Resolver is the network port: it maps s3 and ipfs locators to URLs
// itself (netsafe.S3URL, netsafe.IPFSURL) and fetches them with a netsafe
// client, which refuses private and internal addresses at dial time and
// every redirect. A private-cas locator reads PrivateCAS, or is
// unavailable when none is configured.
type Resolver struct {
	// Client must be a netsafe client; nil means netsafe.NewClient with
	// the strict defaults.
	Client *http.Client
	// S3Endpoint is an S3-compatible service's base URL; "" means AWS.
	S3Endpoint string
	// IPFSGateway is the gateway base URL; "" means netsafe's default.
	IPFSGateway string
	// PrivateCAS holds private-cas objects; nil makes them unavailable.
	PrivateCAS ArtifactPort
}

// ReadStream fetches ref's object, failing with netsafe.ErrTooLarge after
// ref.ByteLength bytes.
func (r *Resolver) ReadStream(ctx context.Context, ref candidate.ArtifactRef) (io.ReadCloser, error) {
	loc := ref.Locator
	var url string
	var err error
	switch loc.Kind {
	case contract.LocatorS3:
		url, err = netsafe.S3URL(r.S3Endpoint, deref(loc.Bucket), deref(loc.Key), deref(loc.Region))
	case contract.LocatorIPFS:
		url, err = netsafe.IPFSURL(r.IPFSGateway, deref(loc.CID), deref(loc.Path))
	case contract.LocatorPrivateCAS:
		if r.PrivateCAS == nil {
			return nil, fmt.Errorf("%w: no private-cas store is configured", ErrUnavailable)
		}
		data, err := r.PrivateCAS.Read(ctx, ref)
		if err != nil {
			return nil, err
		}
		return io.NopCloser(bytes.NewReader(data)), nil
	default:
		return nil, fmt.Errorf("%w: locator kind %q", ErrUnavailable, loc.Kind)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	client := r.Client
	if client == nil {
		client = netsafe.NewClient(netsafe.Options{})
	}
	body, err := netsafe.Open(ctx, client, url, ref.ByteLength)
	if errors.Is(err, netsafe.ErrStatus) {
		return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return body, err
}

// Read fetches ref's object whole.
func (r *Resolver) Read(ctx context.Context, ref candidate.ArtifactRef) ([]byte, error) {
	return readAll(ctx, r, ref)
}

// Chain tries each port in order and returns the first answer that is
// not ErrUnavailable.
type Chain []ArtifactPort

// Read asks each port in turn.
func (c Chain) Read(ctx context.Context, ref candidate.ArtifactRef) ([]byte, error) {
	err := fmt.Errorf("%w: no artifact port is configured", ErrUnavailable)
	for _, p := range c {
		var data []byte
		data, err = p.Read(ctx, ref)
		if !errors.Is(err, ErrUnavailable) {
			return data, err
		}
	}
	return nil, err
}

// readAll reads a stream of at most ref.ByteLength+1 bytes: one byte
// more than declared is enough to prove a length mismatch.
func readAll(ctx context.Context, s StreamReader, ref candidate.ArtifactRef) ([]byte, error) {
	rc, err := s.ReadStream(ctx, ref)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(io.LimitReader(rc, ref.ByteLength+1))
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
