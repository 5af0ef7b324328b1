package conformance

import (
	"errors"
	"fmt"
	"strings"

	"github.com/agentrt/agentrt/canonjson"
)

// maxDocument bounds every JSON document and evidence file read here.
const maxDocument = 64 << 20

// ContentHash returns the lowercase hex SHA-256 of the canonical JSON of
// v, the contentHash of §8 (without canonjson's "sha256:" prefix).
func ContentHash(v canonjson.Value) (string, error) {
	d, err := canonjson.Digest(v)
	if err != nil {
		return "", err
	}
	return strings.TrimPrefix(d, canonjson.DigestPrefix), nil
}

// BytesHash returns the lowercase hex SHA-256 of b.
func BytesHash(b []byte) string {
	return strings.TrimPrefix(canonjson.DigestBytes(b), canonjson.DigestPrefix)
}

// isHex reports whether s is exactly n lowercase hex digits.
func isHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// decodeInto strictly decodes data into dst, reporting a *ValidationError
// with the JSON pointer of the first problem.
func decodeInto(doc string, data []byte, dst any) (canonjson.Value, error) {
	v, err := canonjson.DecodeWith(data, canonjson.DecodeOptions{})
	if err != nil {
		var de *canonjson.DecodeError
		if errors.As(err, &de) {
			return v, &ValidationError{Document: doc, Pointer: de.Pointer, Reason: de.Message}
		}
		return v, &ValidationError{Document: doc, Reason: err.Error()}
	}
	if dst == nil {
		return v, nil
	}
	if err := canonjson.FromValue(v, dst); err != nil {
		var ue *canonjson.UnmarshalError
		if errors.As(err, &ue) {
			pointer := ue.Pointer
			// Point at the unknown member itself, not at its object.
			var name string
			if _, err := fmt.Sscanf(ue.Reason, "unknown member %q", &name); err == nil {
				pointer = string(canonjson.AppendPointerToken([]byte(pointer), name))
			}
			return v, &ValidationError{Document: doc, Pointer: pointer, Reason: ue.Reason}
		}
		return v, &ValidationError{Document: doc, Reason: err.Error()}
	}
	return v, nil
}

// ptr builds a JSON pointer from tokens.
func ptr(tokens ...string) string { return canonjson.Pointer(tokens...) }
