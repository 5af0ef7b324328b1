package candidate

import (
	"errors"
	"fmt"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/schema"
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
// *RunReceipt, …) after validating it against node, so a document built
// in Go and the same document parsed from JSON have one digest.
func SelfDigest(kind string, node schema.Node, doc any) (string, error) {
	v, err := canonjson.ToValue(doc)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrNotCanonical, err)
	}
	return SelfDigestValue(v)
}

// Digest returns the identity of a bundle: the RFC 8785 SHA-256 of the
// bundle without its top-level digest (CAND §2.1, §10).
func Digest(b *Bundle) (string, error) { return SelfDigest(KindBundle, nil, b) }

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
func EvidenceDigest[M any](e *Evidence[M]) (string, error) {
	v, err := canonjson.ToValue(e.Material)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrNotCanonical, err)
	}
	return ContentDigest(v)
}

// MaterialBytes returns the canonical bytes of a material value: what an
// evidence artifact or a workspace manifest artifact must carry byte for
// byte (CAND §2.2, §3.5).
func MaterialBytes(material any) ([]byte, error) {
	v, err := canonjson.ToValue(material)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNotCanonical, err)
	}
	b, err := canonjson.Canonical(v)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNotCanonical, err)
	}
	return b, nil
}

// ProfileDigest returns sha256(JCS(profile)): a profile plan's
// sourceProfileDigest (CAND §13.1).
func ProfileDigest(p *Profile) (string, error) {
	v, err := canonjson.ToValue(p)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrNotCanonical, err)
	}
	return ContentDigest(v)
}
