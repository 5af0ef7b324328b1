package profile

import (
	"errors"
	"fmt"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/schema"
)

// Parse decodes data strictly and validates it as an AgentProfile. Any
// problem, from malformed JSON to a broken seat rule, is a *schema.Error
// listing every issue with its JSON pointer.
func Parse(data []byte) (*Profile, error) {
	v, err := schema.Decode(KindProfile, data)
	if err != nil {
		return nil, err
	}
	return FromValue(v)
}

// ParseDigest is Parse followed by Digest in one pass: the identity is
// computed from the value just validated, not from a second conversion and
// validation of the Go struct. Use it to read a profile and learn what it
// is; a valid profile that has no canonical form (see ErrNotCanonical) is
// an error here.
func ParseDigest(data []byte) (*Profile, string, error) {
	v, err := schema.Decode(KindProfile, data)
	if err != nil {
		return nil, "", err
	}
	out, err := schema.Run(KindProfile, Schema, v)
	if err != nil {
		return nil, "", err
	}
	digest, err := DigestValue(out)
	if err != nil {
		return nil, "", err
	}
	p, err := typed(out)
	if err != nil {
		return nil, "", err
	}
	return p, digest, nil
}

// FromValue validates a decoded value as an AgentProfile and returns it.
func FromValue(v canonjson.Value) (*Profile, error) {
	out, err := schema.Run(KindProfile, Schema, v)
	if err != nil {
		return nil, err
	}
	return typed(out)
}

// Value returns p as a validated JSON value: the value the profile's
// identity is computed from.
func (p *Profile) Value() (canonjson.Value, error) {
	if p == nil {
		return canonjson.Value{}, &schema.Error{Kind: KindProfile, Issues: []schema.Issue{{Code: schema.CodeInvalidType, Message: "profile is nil"}}}
	}
	v, err := canonjson.ToValue(p)
	if err != nil {
		return canonjson.Value{}, &schema.Error{Kind: KindProfile, Issues: []schema.Issue{{Path: pointerOf(err), Code: schema.CodeInvalidType, Message: err.Error()}}}
	}
	return schema.Run(KindProfile, Schema, v)
}

// Validate reports whether p is a valid AgentProfile; the error is a
// *schema.Error.
func (p *Profile) Validate() error {
	_, err := p.Value()
	return err
}

// ErrNotCanonical is wrapped by Digest and Canonical when a valid profile
// has no RFC 8785 form: it holds a lone surrogate or a non-finite number
// (possible in metadata), which the reference refuses to digest too.
var ErrNotCanonical = errors.New("profile must contain finite, acyclic RFC 8785 JSON values")

// Canonical returns the RFC 8785 canonical JSON of the validated profile.
func Canonical(p *Profile) ([]byte, error) {
	v, err := p.Value()
	if err != nil {
		return nil, err
	}
	return canonicalOf(v)
}

// Digest returns the profile identity: "sha256:" and the hex SHA-256 of
// Canonical(p).
func Digest(p *Profile) (string, error) {
	v, err := p.Value()
	if err != nil {
		return "", err
	}
	return DigestValue(v)
}

// DigestValue returns the identity of a value already validated with
// Schema (as FromValue and Value return), without validating it again.
func DigestValue(v canonjson.Value) (string, error) {
	d, err := canonjson.Digest(v)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrNotCanonical, err)
	}
	return d, nil
}

func canonicalOf(v canonjson.Value) ([]byte, error) {
	b, err := canonjson.Canonical(v)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNotCanonical, err)
	}
	return b, nil
}

// Clone returns a deep copy of p.
func Clone(p *Profile) (*Profile, error) {
	v, err := canonjson.ToValue(p)
	if err != nil {
		return nil, err
	}
	out := new(Profile)
	if err := canonjson.FromValue(v, out); err != nil {
		return nil, err
	}
	return out, nil
}

func pointerOf(err error) string {
	var me *canonjson.MarshalError
	if errors.As(err, &me) {
		return me.Pointer
	}
	return ""
}
