package candidate

import (
	"errors"
	"fmt"

	"github.com/agentrt/agentrt/canonjson"
)

// ErrNotCanonical is wrapped by digest functions when a value has no RFC
// 8785 form (a lone surrogate or a non-finite number).
var ErrNotCanonical = errors.New("candidate document must be finite, acyclic RFC 8785 JSON")

// ErrDigestMismatch is wrapped when a carried digest differs from the
// recomputed one.
var ErrDigestMismatch = errors.New("carried digest does not match the recomputed digest")

// ContentDigest returns the canonical digest of a JSON value: "sha256:"
// and the hex SHA-256 of its RFC 8785 form (CAND §2.1). It is the one
// owner of that rule in this package; every other digest calls it.
func ContentDigest(v canonjson.Value) (string, error) {
	d, err := canonjson.Digest(v)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrNotCanonical, err)
	}
	return d, nil
}

// SelfDigestValue returns the self-digest of a document value: the
// content digest of the object without its top-level "digest" member
// (nested "digest" members stay). Bundles, tasks, suites, run cells,
// profile activations, receipts, execution evidence, preparation receipts
// and lease records are identified this way (CAND §2.2).
func SelfDigestValue(v canonjson.Value) (string, error) {
	if v.Kind() != canonjson.Object {
		return "", fmt.Errorf("%w: a self-digested document must be an object", ErrNotCanonical)
	}
	return ContentDigest(v.Without("digest"))
}

// SelfDigest returns the self-digest of a Go document (a *Bundle,
// *RunReceipt, *MaterializationReceipt, *ExecutionEvidence,
// *ProfileActivation, *RunCell, *BenchmarkTask, *BenchmarkSuite,
// *PreparationReceipt, *LeaseRecord). Presence round-trips through the Go
// types, so a document built in Go and the same document parsed from
// JSON have one digest.
func SelfDigest(doc any) (string, error) {
	v, err := valueOf(doc)
	if err != nil {
		return "", err
	}
	return SelfDigestValue(v)
}

// Digest returns the identity of a bundle: the RFC 8785 SHA-256 of the
// bundle without its top-level digest (CAND §2.1, §10; CND-27).
func Digest(b *Bundle) (string, error) { return SelfDigest(b) }

// VerifyDigest recomputes a bundle's digest and compares it with the
// carried one, wrapping ErrDigestMismatch when they differ.
func VerifyDigest(b *Bundle) error {
	d, err := Digest(b)
	if err != nil {
		return err
	}
	if d != b.Digest {
		return fmt.Errorf("%w: carried %s, computed %s", ErrDigestMismatch, b.Digest, d)
	}
	return nil
}

// EvidenceDigest returns the digest of an evidence record's material:
// the content digest of the material itself (it has no digest member).
// The record's artifact must carry exactly the material's canonical bytes
// ([EvidenceBytes]).
func EvidenceDigest[M any](e *Evidence[M]) (string, error) { return DigestOf(e.Material) }

// DigestOf returns the content digest of a Go value (CAND §2.1).
func DigestOf(x any) (string, error) {
	v, err := valueOf(x)
	if err != nil {
		return "", err
	}
	return ContentDigest(v)
}

// SelfMaterialBytes returns the canonical bytes of a self-digested
// document without its top-level digest: what a materialization
// receipt's benchmark suite and task artifacts carry (CAND §14). Their
// SHA-256 is the document's self-digest.
func SelfMaterialBytes(doc any) ([]byte, error) {
	v, err := valueOf(doc)
	if err != nil {
		return nil, err
	}
	return canonicalBytes(v.Without("digest"))
}

// MaterialBytes returns the canonical bytes of a material value: what an
// evidence artifact or a workspace manifest artifact must carry byte for
// byte (CAND §2.2, §3.5).
func MaterialBytes(material any) ([]byte, error) {
	v, err := valueOf(material)
	if err != nil {
		return nil, err
	}
	return canonicalBytes(v)
}

func canonicalBytes(v canonjson.Value) ([]byte, error) {
	b, err := canonjson.Canonical(v)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNotCanonical, err)
	}
	return b, nil
}

// ProfileDigest returns sha256(JCS(profile)): a profile plan's
// sourceProfileDigest (CAND §13.1).
func ProfileDigest(p *Profile) (string, error) { return DigestOf(p) }

// WorkspaceManifestDigest returns the digest a workspace snapshot's
// manifest must carry: the content digest of its material (CAND §3.5).
func WorkspaceManifestDigest(m *WorkspaceManifestMaterial) (string, error) { return DigestOf(m) }

// valueOf converts a Go document to its JSON value.
func valueOf(x any) (canonjson.Value, error) {
	v, err := canonjson.ToValue(x)
	if err != nil {
		return canonjson.Value{}, fmt.Errorf("%w: %w", ErrNotCanonical, err)
	}
	return v, nil
}
