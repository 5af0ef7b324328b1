package contract

import (
	"errors"
	"fmt"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/schema"
)

// Parse decodes data strictly, validates it against node (reporting
// refusals as *schema.Error naming kind) and decodes the accepted value
// into a T. Every wire type's Parse function is this with its own schema.
func Parse[T any](kind string, node schema.Node, data []byte) (*T, error) {
	v, err := schema.Decode(kind, data)
	if err != nil {
		return nil, err
	}
	return FromValue[T](kind, node, v)
}

// FromValue validates a decoded value against node and decodes it into a
// T.
func FromValue[T any](kind string, node schema.Node, v canonjson.Value) (*T, error) {
	out, err := schema.Run(kind, node, v)
	if err != nil {
		return nil, err
	}
	t := new(T)
	if err := canonjson.FromValue(out, t); err != nil {
		return nil, fmt.Errorf("%s: validated value does not fit the Go type: %w", kind, err)
	}
	return t, nil
}

// Validate checks a Go value against node, reporting refusals as
// *schema.Error naming kind. It returns the accepted JSON value, which is
// what digests are computed over.
func Validate(kind string, node schema.Node, x any) (canonjson.Value, error) {
	v, err := canonjson.ToValue(x)
	if err != nil {
		var me *canonjson.MarshalError
		path := ""
		if errors.As(err, &me) {
			path = me.Pointer
		}
		return canonjson.Value{}, &schema.Error{Kind: kind, Issues: []schema.Issue{{Path: path, Code: schema.CodeInvalidType, Message: err.Error()}}}
	}
	return schema.Run(kind, node, v)
}

// ErrNotCanonical is wrapped by digest functions when a value has no RFC
// 8785 form (a lone surrogate or a non-finite number).
var ErrNotCanonical = errors.New("value must be finite, acyclic RFC 8785 JSON")

// DigestOf returns the canonical digest of a Go value or canonjson.Value
// without validating it: "sha256:" and the hex SHA-256 of its RFC 8785
// form.
func DigestOf(x any) (string, error) {
	v, ok := x.(canonjson.Value)
	if !ok {
		var err error
		if v, err = canonjson.ToValue(x); err != nil {
			return "", fmt.Errorf("%w: %w", ErrNotCanonical, err)
		}
	}
	d, err := canonjson.Digest(v)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrNotCanonical, err)
	}
	return d, nil
}

// withoutMember returns v (an object) without its member name.
func withoutMember(v canonjson.Value, name string) canonjson.Value { return v.Without(name) }

// checkMaterialDigest is a refinement: the member digestName of the
// accepted object must equal the canonical digest of the object without
// it (the request-digest pattern of many contract requests).
func checkMaterialDigest(digestName, message string) schema.Refinement {
	return func(c *schema.Context, v canonjson.Value) {
		got, _ := v.Get(digestName)
		want, err := canonjson.Digest(withoutMember(v, digestName))
		if err != nil || got.Str() != want {
			c.Custom(message, digestName)
		}
	}
}

// materialDigest validates x without its member digestName against the
// material schema and returns the digest of the accepted material: how a
// request's own digest is computed before it is set.
func materialDigest(kind string, material schema.Node, x any, digestName string) (string, error) {
	v, err := canonjson.ToValue(x)
	if err != nil {
		return "", err
	}
	out, err := schema.Run(kind, material, withoutMember(v, digestName))
	if err != nil {
		return "", err
	}
	return DigestOf(out)
}
