package contract

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/schema"
)

// Shared pieces of the portable context, transfer and native continuation
// contracts.

var (
	// pcTimestamp is an ISO 8601 UTC timestamp of at most 64 units.
	pcTimestamp = schema.String(schema.ISODateTime, schema.MaxLen(64))

	// pcText is a bounded, non-empty explanation or message.
	pcText = schema.String(schema.MaxLen(MaxStringLength), schema.MinLen(1))

	// pcIndex is a non-negative safe integer.
	pcIndex = schema.Number(schema.Int, schema.NonNegative, schema.Max(canonjson.MaxSafeInteger))

	// pcPositive is a positive safe integer.
	pcPositive = schema.Number(schema.Int, schema.Positive, schema.Max(canonjson.MaxSafeInteger))
)

// pcMaterialError reports digest material that exceeds the contract
// bounds or has no RFC 8785 form, wrapping cause when there is one.
func pcMaterialError(cause error) error {
	const msg = "digest material exceeds the contract bounds or is not canonical JSON"
	if cause == nil {
		return errors.New(msg)
	}
	return fmt.Errorf("%s: %w", msg, cause)
}

// pcWireDigest is the digest the portable context contracts use for their
// material: the value must be within the contract bounds (IsBoundedJSON),
// have an RFC 8785 form (no lone surrogate), and serialize to at most
// MaxJSONBytes; its digest is then the canonical digest.
func pcWireDigest(v canonjson.Value) (string, error) {
	if !IsBoundedJSON(v) {
		return "", pcMaterialError(nil)
	}
	b, err := canonjson.Canonical(v)
	if err != nil {
		return "", pcMaterialError(err)
	}
	if len(b) > MaxJSONBytes {
		return "", pcMaterialError(nil)
	}
	return canonjson.DigestBytes(b), nil
}

// pcDigestOf converts a Go value (or canonjson.Value) and returns its
// pcWireDigest.
func pcDigestOf(x any) (string, error) {
	v, ok := x.(canonjson.Value)
	if !ok {
		var err error
		if v, err = canonjson.ToValue(x); err != nil {
			return "", pcMaterialError(err)
		}
	}
	return pcWireDigest(v)
}

// pcWithin reports whether pointer p is base or lies inside it.
func pcWithin(p, base string) bool {
	return p == base || strings.HasPrefix(p, base+"/")
}

// pcIssuesWithin reports whether an issue was already reported inside the
// value at c's current position, ignoring the members named in except.
// Refinements use it to learn whether the material they are about to hash
// was itself accepted.
func pcIssuesWithin(c *schema.Context, except ...string) bool {
	base := c.Pointer()
	for _, is := range c.Issues() {
		if !pcWithin(is.Path, base) {
			continue
		}
		skip := false
		for _, name := range except {
			if pcWithin(is.Path, c.Pointer(name)) {
				skip = true
				break
			}
		}
		if !skip {
			return true
		}
	}
	return false
}

// pcAtRoot reports a custom issue at the root of the document, wherever
// the check currently is. A digest that cannot be computed over refused
// material refuses the whole document, as the reference does (its digest
// functions throw out of the validator).
func pcAtRoot(c *schema.Context, message string) {
	tokens, _ := canonjson.SplitPointer(c.Pointer())
	for range tokens {
		c.Pop()
	}
	c.Custom(message)
	for _, t := range tokens {
		c.Push(t)
	}
}

// pcSameStringSet reports whether a and b hold the same strings the same
// number of times, in any order.
func pcSameStringSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	x, y := slices.Clone(a), slices.Clone(b)
	slices.Sort(x)
	slices.Sort(y)
	return slices.Equal(x, y)
}

// pcUnique reports whether ids holds no duplicate.
func pcUnique(ids []string) bool {
	seen := make(map[string]struct{}, len(ids))
	for _, id := range ids {
		if _, dup := seen[id]; dup {
			return false
		}
		seen[id] = struct{}{}
	}
	return true
}

// pcEpochMillis returns the instant of an ISO 8601 UTC timestamp in epoch
// milliseconds, as Date.parse reads it: fraction digits past the third are
// dropped. It reports false for anything else.
func pcEpochMillis(s string) (int64, bool) {
	if !schema.IsISODateTime(s) {
		return 0, false
	}
	num := func(t string) int {
		n := 0
		for i := 0; i < len(t); i++ {
			n = n*10 + int(t[i]-'0')
		}
		return n
	}
	year, month, day := num(s[0:4]), num(s[5:7]), num(s[8:10])
	rest := s[11 : len(s)-1]
	hour, minute := num(rest[0:2]), num(rest[3:5])
	sec, milli := 0, 0
	if len(rest) > 5 {
		sec = num(rest[6:8])
		if len(rest) > 9 {
			frac := rest[9:]
			for i := range 3 {
				milli *= 10
				if i < len(frac) {
					milli += int(frac[i] - '0')
				}
			}
		}
	}
	t := time.Date(year, time.Month(month), day, hour, minute, sec, 0, time.UTC)
	return t.UnixMilli() + int64(milli), true
}

// pcStr returns the string member name of v, or "".
func pcStr(v canonjson.Value, name string) string {
	m, _ := v.Get(name)
	return m.Str()
}

// pcSameWire reports whether two values have the same canonical form.
func pcSameWire(a, b any) bool {
	da, err := DigestOf(a)
	if err != nil {
		return false
	}
	db, err := DigestOf(b)
	return err == nil && da == db
}
