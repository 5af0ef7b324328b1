package candidate

import (
	"errors"
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/internal/whatwgurl"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/schema"
)

// DigestAlgorithm is the digestAlgorithm member of every self-digested
// candidate document: RFC 8785 canonical JSON, then SHA-256 (CAND §2.1).
const DigestAlgorithm = "rfc8785-sha256"

var (
	nonEmpty = schema.String(schema.MinLen(1))
	boolean  = schema.Bool()

	// digestNode accepts "sha256:" and 64 lowercase hex digits.
	digestNode = contract.Digest

	gitObjectPattern = regexp.MustCompile(`^(?:[a-f0-9]{40}|[a-f0-9]{64})$`)
	// gitObjectNode accepts a full SHA-1 or SHA-256 Git object id.
	gitObjectNode = schema.String(schema.Matches("must be a full lowercase Git object id (40 or 64 hex digits)", gitObjectPattern.MatchString))

	safeCount   = schema.Number(schema.Int, schema.NonNegative)
	positiveInt = schema.Number(schema.Int, schema.Positive)
	fileMode    = schema.Number(schema.Int, schema.Min(0), schema.Max(0o777))

	wellFormed = schema.String(schema.WellFormed)

	mediaTypePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9!#$&^_.+-]{0,126}/[a-z0-9][a-z0-9!#$&^_.+-]{0,126}$`)
	mediaTypeNode    = schema.String(schema.Matches("must be a lowercase media type without parameters", mediaTypePattern.MatchString))

	githubComponentPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$`)
	githubComponent        = schema.String(
		schema.Matches("must be a GitHub owner or repository name", githubComponentPattern.MatchString),
		schema.Rule[string]{Code: schema.CodeCustom, Message: "must not be . or ..", Test: func(s string) bool { return s != "." && s != ".." }},
	)

	// repositoryNode is a GitHub repository {kind:"github", owner, repo}.
	repositoryNode = schema.Object(
		schema.Req("kind", schema.LiteralString("github")),
		schema.Req("owner", githubComponent),
		schema.Req("repo", githubComponent),
	)

	// configValueNode is a public candidate config value: there is no
	// secret or secret-ref variant inside a candidate (CAND §1).
	configValueNode = schema.Object(
		schema.Req("kind", schema.LiteralString(profile.ConfigPublic)),
		schema.Req("value", schema.String(schema.Rule[string]{Code: schema.CodeCustom,
			Message: "candidate config cannot carry credentials; the evaluator owns model authorization",
			Test:    isPublicConfigValue})),
	)
	configValues = schema.Array(configValueNode)

	// envNode is a candidate environment: names are environment names
	// and never credential-bearing; values are public.
	envNode = schema.Refined(
		schema.Record(configValueNode).Keys(schema.String(schema.Matches("must be an environment variable name", profile.IsEnvironmentName))),
		func(c *schema.Context, v canonjson.Value) {
			for _, m := range v.Members() {
				if profile.IsCredentialBearingProfileConfigName(m.Name) {
					c.Custom("candidate config cannot declare credential-bearing names", m.Name)
				}
			}
		})

	executableNode = schema.String(schema.Rule[string]{Code: schema.CodeCustom,
		Message: "executable must be a canonical non-shell command", Test: profile.IsSafeExecutable})
)

// relPath returns a string node accepting a safe relative path (CAND §1,
// P(allowDot)).
func relPath(allowDot bool, message string) schema.StringNode {
	return schema.String(schema.Rule[string]{Code: schema.CodeCustom, Message: message,
		Test: func(s string) bool { return profile.IsSafeRelativePath(s, allowDot) }})
}

func isPublicConfigValue(s string) bool {
	return !canonjson.HasControl(s) && canonjson.IsWellFormed(s) && !profile.LooksLikeCredential(s)
}

// IsPrivateHost reports whether a host name or address literal names a
// loopback, private, link-local, metadata or otherwise internal host,
// after normalizing it the way a WHATWG URL parser does (so "127.1" and
// "0x7f000001" are 127.0.0.1). It is the schema-level private-host test of
// CAND §1 and the minimum a network resolver must block (CAND §3.6).
func IsPrivateHost(raw string) bool {
	literal := strings.TrimSuffix(strings.TrimPrefix(asciiLower(raw), "["), "]")
	host := literal
	wrapped := literal
	if strings.Contains(literal, ":") {
		wrapped = "[" + literal + "]"
	}
	if u, err := whatwgurl.Parse("http://" + wrapped + "/"); err == nil {
		host = strings.TrimSuffix(strings.TrimPrefix(u.Hostname, "["), "]")
	}
	switch host {
	case "localhost", "metadata.google.internal", "metadata.google":
		return true
	}
	if strings.HasSuffix(host, ".localhost") {
		return true
	}
	if strings.Contains(host, ":") {
		// The serialized host drops leading zeros, so a prefix test on
		// the first hextet only means fe80::/10 or fc00::/7 when all four
		// digits are written: fc0:: is 0fc0::, fe8:: is 0fe8::.
		first, _, _ := strings.Cut(host, ":")
		full := len(first) == 4
		if host == "::" || host == "::1" || strings.HasPrefix(host, "::ffff:") ||
			full && (strings.HasPrefix(first, "fe8") || strings.HasPrefix(first, "fe9") ||
				strings.HasPrefix(first, "fea") || strings.HasPrefix(first, "feb") ||
				strings.HasPrefix(first, "fc") || strings.HasPrefix(first, "fd")) {
			return true
		}
	}
	parts := strings.Split(host, ".")
	if len(parts) != 4 {
		return false
	}
	var n [4]int
	for i, p := range parts {
		v, ok := jsNumberInt(p)
		if !ok || v < 0 || v > 255 {
			return false
		}
		n[i] = v
	}
	a, b := n[0], n[1]
	return a == 0 || a == 10 || a == 127 || a == 100 && b >= 64 && b <= 127 || a == 169 && b == 254 ||
		a == 172 && b >= 16 && b <= 31 || a == 192 && b == 168 || a == 198 && (b == 18 || b == 19) || a >= 224
}

var jsDecimal = regexp.MustCompile(`^[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?$`)

// jsNumberInt is JavaScript's Number(s) followed by Number.isInteger:
// the integer s denotes (decimal with optional fraction and exponent,
// 0x/0o/0b integers, "" as 0), or false when it is NaN, infinite or not
// an integer. A host that failed WHATWG parsing (such as "1e1.0.0.1")
// reaches here unnormalized, as in the reference.
func jsNumberInt(s string) (int, bool) {
	s = canonjson.TrimJS(s)
	if s == "" {
		return 0, true
	}
	if len(s) > 2 && s[0] == '0' {
		base := map[byte]int{'x': 16, 'X': 16, 'o': 8, 'O': 8, 'b': 2, 'B': 2}[s[1]]
		if base != 0 {
			n, err := strconv.ParseUint(s[2:], base, 64)
			if err != nil && !errors.Is(err, strconv.ErrRange) {
				return 0, false
			}
			return int(min(n, 256)), true // beyond 255 is outside every octet
		}
	}
	if !jsDecimal.MatchString(s) {
		return 0, false
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil && !math.IsInf(f, 0) || math.IsInf(f, 0) || f != math.Trunc(f) {
		return 0, false
	}
	return int(max(min(f, 256), -1)), true // beyond 0..255 is outside every octet
}

func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 32
		}
	}
	return string(b)
}

var ociImagePattern = regexp.MustCompile(`^[A-Za-z0-9._:/-]+$`)

// isSafeOCIImage is the container image rule of CAND §7.4: no digest, no
// scheme, and an explicit registry host must not be private.
func isSafeOCIImage(s string) bool {
	if !ociImagePattern.MatchString(s) || strings.Contains(s, "@") || strings.Contains(s, "://") {
		return false
	}
	first, _, found := strings.Cut(s, "/")
	if !found {
		return true
	}
	if !strings.ContainsAny(first, ".:") && first != "localhost" {
		return true
	}
	host, _, _ := strings.Cut(first, ":")
	return host != "" && !IsPrivateHost(host)
}

// sameGitObjectFormat reports whether every id has one length.
func sameGitObjectFormat(ids ...string) bool {
	for _, id := range ids[1:] {
		if len(id) != len(ids[0]) {
			return false
		}
	}
	return true
}

// member returns the string member name of object v ("" when absent).
func member(v canonjson.Value, name string) string {
	m, _ := v.Get(name)
	return m.Str()
}

// num returns the number member name of object v (0 when absent).
func num(v canonjson.Value, names ...string) float64 {
	for _, n := range names {
		v, _ = v.Get(n)
	}
	return v.Float()
}

// at returns the value at the member path names of v.
func at(v canonjson.Value, names ...string) canonjson.Value {
	for _, n := range names {
		v, _ = v.Get(n)
	}
	return v
}

// has reports whether object v has member name.
func has(v canonjson.Value, name string) bool { _, ok := v.Get(name); return ok }

// checkDuplicates reports every repeated string of values at rel/index.
func checkDuplicates(c *schema.Context, values []string, rel ...string) {
	seen := make(map[string]bool, len(values))
	for i, s := range values {
		if seen[s] {
			c.Custom("duplicate value '"+s+"'", append(rel, canonjson.IndexToken(i))...)
		}
		seen[s] = true
	}
}

// checkAscending reports every position of values not strictly greater
// than its predecessor in UTF-16 order, at rel/index/leaf (leaf may be
// empty).
func checkAscending(c *schema.Context, values []string, message, leaf string, rel ...string) {
	for i := 1; i < len(values); i++ {
		if canonjson.CompareUTF16(values[i-1], values[i]) >= 0 {
			path := append(append([]string{}, rel...), canonjson.IndexToken(i))
			if leaf != "" {
				path = append(path, leaf)
			}
			c.Custom(message, path...)
		}
	}
}

// strings of the member name of every object in the array v.
func memberStrings(v canonjson.Value, name string) []string {
	items := v.Items()
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = member(it, name)
	}
	return out
}

// itemStrings returns the strings of array v.
func itemStrings(v canonjson.Value) []string {
	items := v.Items()
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it.Str()
	}
	return out
}

// checkCanonical is the reference's "must contain only RFC 8785 JSON
// values" rule, reported at the current position.
func checkCanonical(message string) schema.Refinement {
	return func(c *schema.Context, v canonjson.Value) {
		if canonjson.Check(v) != nil {
			c.Custom(message)
		}
	}
}
